"""Tags and labels (issue 26, defect 3): each cloud's key/value characters, lengths and reserved prefixes, and the
number of tags a resource carries once the toolkit's own are added (catalog/tags.yaml)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from components.catalog import CLOUDS
from components.catalog import tags as tag_rules
from components.layout.gcp import labels as gcp_labels
from components.spec import base_tags_of

from .conftest import aws_values, gcp_values, plan_values, spec_of
from .test_spec_rules import errors_of

TAGS = "gpu-cluster:cluster.tags"


def azure_values(**cluster):
    base = {"instanceType": "Standard_NC4as_T4_v3", "nodes": 1, **cluster}
    return {"gpu-cluster:cloud": "azure", "azure-native:location": "eastus", "gpu-cluster:cluster": base}


def alicloud_values(**cluster):
    base = {"instanceType": "ecs.gn6i-c4g1.xlarge", "nodes": 1, "zone": "cn-beijing-h", **cluster}
    return {"gpu-cluster:cloud": "alicloud", "alicloud:region": "cn-beijing", "gpu-cluster:cluster": base}


def tencent_values(**cluster):
    base = {"instanceType": "GN7.2XLARGE32", "nodes": 1, "nodeGroup": "instances", **cluster}
    return {"gpu-cluster:cloud": "tencentcloud", "tencentcloud:region": "ap-guangzhou", "gpu-cluster:cluster": base}


def many(n: int) -> dict[str, str]:
    return {f"t{i:02d}": "v" for i in range(n)}


def keyed(values) -> dict[str, str]:
    return {e.key: e.message for e in errors_of(values)}


@pytest.mark.parametrize(
    ("values", "fits", "over", "limit"),
    [
        # AWS: user tags + environment + gpu-cluster:cluster + gpu-cluster:stack + Name <= 50
        (aws_values, 46, 47, 50),
        # GCP: labels + environment + 2 own + gpu-cluster_role + the provider's goog-pulumi-provisioned <= 64
        (gcp_values, 59, 60, 64),
        (azure_values, 46, 47, 50),
        # Alibaba: 20 per resource (RunInstances Tag.N)
        (alicloud_values, 16, 17, 20),
        (tencent_values, 46, 47, 50),
    ],
)
def test_the_tag_count_limit_holds_after_the_toolkits_own_tags(values, fits, over, limit):
    assert spec_of(values(tags=many(fits)))
    errors = keyed(values(tags=many(over)))
    assert f"make {limit + 1} on the cluster's resources" in errors[TAGS]
    assert f"allows {limit} per resource" in errors[TAGS]


def test_fifty_user_tags_on_aws_are_refused_naming_the_total():
    message = keyed(aws_values(tags=many(50)))[TAGS]
    assert message.startswith("50 tags plus the 4 the toolkit adds") and "make 54" in message and "remove 4" in message


def test_a_spelled_environment_tag_is_not_added_again():
    carried = base_tags_of({"Environment": "prod", **many(45)}, "c", "s")
    assert "environment" not in carried
    assert spec_of(aws_values(tags={"Environment": "prod", **many(46)}))  # 47 + 3 = 50


@pytest.mark.parametrize(
    ("tags", "tag", "fragment"),
    [
        ({"team": "a\x00b"}, "team", "'\\x00'"),
        ({"team": "ml\nops"}, "team", "'\\n'"),
        ({"team": "ml's"}, "team", '"\'"'),
        ({"[red]x": "v"}, "[red]x", "'['"),
        ({"aws:owner": "x"}, "aws:owner", "starts with 'aws:'"),
        ({"AWS:owner": "x"}, "AWS:owner", "starts with 'aws:'"),
        ({"k" * 128: "x"}, "k" * 128, "128 characters (at most 127)"),
        ({"team": "v" * 257}, "team", "257 characters (at most 256)"),
        ({"": "x"}, "", "the key is empty"),
    ],
)
def test_aws_refuses_what_iam_and_ec2_refuse(tags, tag, fragment):
    errors = keyed(aws_values(tags=tags))
    assert fragment in errors[f"{TAGS}.{tag}"], errors


def test_aws_takes_unicode_letters_spaces_and_the_allowed_punctuation():
    spec = spec_of(aws_values(tags={"Cost Center": "Données_é 1.0 a:b/c=d+e-f@g", "équipe": "研究"}))
    assert spec.tags["équipe"] == "研究"


@pytest.mark.parametrize(
    ("tags", "tag", "fragment"),
    [
        ({"windows-team": "x"}, "windows-team", "starts with 'windows'"),
        ({"Azure-owner": "x"}, "Azure-owner", "starts with 'azure'"),
        ({"microsoft.x": "x"}, "microsoft.x", "starts with 'microsoft'"),
        ({"a/b": "x"}, "a/b", "holds '/'"),
        ({"a?b": "x"}, "a?b", "holds '?'"),
        ({"Team": "a", "team": "b"}, "team", "keys are case-insensitive"),
        ({"name": "x"}, "name", "the toolkit's own tag 'Name'"),
    ],
)
def test_azure_refuses_its_reserved_prefixes_characters_and_case_twins(tags, tag, fragment):
    errors = keyed(azure_values(tags=tags))
    assert fragment in errors[f"{TAGS}.{tag}"], errors


def test_azure_storage_account_keys_are_shorter():
    key = "k" * 200
    assert spec_of(azure_values(tags={key: "v"}))
    errors = keyed(azure_values(tags={key: "v"}, storage={"shared": {"kind": "nfs"}}))
    assert "(at most 128)" in errors[f"{TAGS}.{key}"]


@pytest.mark.parametrize(
    ("tags", "tag", "fragment"),
    [
        ({"aliyun-owner": "x"}, "aliyun-owner", "starts with 'aliyun'"),
        ({"acs:team": "x"}, "acs:team", "starts with 'acs:'"),
        ({"team": "acs:x"}, "team", "the value starts with 'acs:'"),
        ({"team": "see https://example.com"}, "team", "contains 'https://'"),
        ({"k" * 65: "x"}, "k" * 65, "(at most 64)"),
    ],
)
def test_alicloud_refuses_its_prefixes_urls_and_long_keys(tags, tag, fragment):
    errors = keyed(alicloud_values(tags=tags))
    assert fragment in errors[f"{TAGS}.{tag}"], errors


@pytest.mark.parametrize(
    ("tags", "tag", "fragment"),
    [
        ({"qcloud:team": "x"}, "qcloud:team", "starts with 'qcloud'"),
        ({"tencent-owner": "x"}, "tencent-owner", "starts with 'tencent'"),
        ({"project": "x"}, "project", "starts with 'project'"),
        ({"team": "a;b"}, "team", "holds ';'"),
        ({"team": "v" * 128}, "team", "(at most 127)"),
    ],
)
def test_tencent_refuses_its_reserved_keys_and_characters(tags, tag, fragment):
    errors = keyed(tencent_values(tags=tags))
    assert fragment in errors[f"{TAGS}.{tag}"], errors


def test_gcp_label_twins_and_reserved_prefix_are_refused_before_any_resource():
    errors = keyed(gcp_values(tags={"Team": "a", "team": "b", "goog-x": "c"}))
    assert "becomes label 'team'" in errors[f"{TAGS}.team"]
    assert "starts with 'goog'" in errors[f"{TAGS}.goog-x"]


def test_gcp_keeps_turning_tags_into_labels():
    # docs/gcp.md: tags become labels; what the label form cannot hold is replaced, not refused
    spec = spec_of(gcp_values(tags={"Cost-Center": "GPU/Training"}))
    assert spec.tags == {"Cost-Center": "GPU/Training"}


@given(st.text(max_size=120))
def test_the_label_form_is_the_layouts(text):
    assert tag_rules.label_key(text) == gcp_labels.label_key(text)
    assert tag_rules.label_value(text) == gcp_labels.label_value(text)


def test_every_cloud_has_sourced_tag_rules():
    for cloud in CLOUDS:
        rules = tag_rules.rules(cloud)
        assert rules.max_tags > 0 and rules.key_max > 0 and rules.value_max > 0 and len(rules.source) > 80, cloud


def test_the_aws_plan_carries_the_most_tags_the_rule_counts():
    """The count the rule makes is what a registered resource carries: 46 user tags give 50 on the launch template's
    instances (user tags, environment, gpu-cluster:cluster, gpu-cluster:stack, Name)."""
    plan = plan_values(aws_values(gpu="T4:1", nodes=1, zone=None, tags=many(46)))
    carried = [
        len(r.inputs["tags"]) for r in plan.resources if isinstance(r.inputs.get("tags"), dict) and r.inputs["tags"]
    ]
    assert max(carried) == 50
