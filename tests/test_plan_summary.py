"""What a new user sees first: a minimal config plans cleanly, policy findings are grouped with their fix,
the cost is shown now and at maxNodes with its caveats, the reservation is shown, and no summary row is cut."""

from __future__ import annotations

import base64
import dataclasses
import io
import json
import re
import struct

import pytest
from rich.console import Console
from typer.testing import CliRunner

from components import catalog
from components.cli import app
from components.plan.render import render_json, render_markdown, render_table
from components.policy import Resource, evaluate, group_violations, policy_names
from policy.pack import stack_policies

from .conftest import ROOT, aws_values, plan_values

# An ed25519 public key in the wire format (RFC 8709): string "ssh-ed25519", string 32-byte key.
_BLOB = b"".join(struct.pack(">I", len(part)) + part for part in (b"ssh-ed25519", bytes(range(32))))
ED25519 = "ssh-ed25519 " + base64.b64encode(_BLOB).decode() + " user@example"

MINIMAL = {
    "aws": {"gpu-cluster:cloud": "aws", "aws:region": "us-east-1", "gpu-cluster:cluster": {"gpu": "T4:1", "nodes": 1}},
    "azure": {
        "gpu-cluster:cloud": "azure",
        "azure-native:location": "eastus",
        "gpu-cluster:cluster": {"gpu": "T4:1", "nodes": 1, "sshPublicKey": ED25519},
    },
    "gcp": {
        "gpu-cluster:cloud": "gcp",
        "gcp:project": "p",
        "gcp:region": "us-central1",
        "gcp:zone": "us-central1-b",
        "gpu-cluster:cluster": {"gpu": "L4:1", "nodes": 1},
    },
    "alicloud": {
        "gpu-cluster:cloud": "alicloud",
        "alicloud:region": "cn-hangzhou",
        "gpu-cluster:cluster": {"instanceType": "ecs.gn8is-8x.32xlarge", "nodes": 1, "zone": "cn-hangzhou-k"},
    },
}


def tag_maps(plan):
    """The tag / label maps registered on every resource that has one (AWS ASG tags are a list)."""
    maps = []
    for res in plan.resources:
        tags = res.inputs.get("labels") if isinstance(res.inputs.get("labels"), dict) else res.inputs.get("tags")
        if isinstance(tags, dict):
            maps.append(tags)
        elif isinstance(tags, list) and tags and all(isinstance(t, dict) and "key" in t for t in tags):
            maps.append({t["key"]: t["value"] for t in tags})
    return maps


# --- (13) a minimal config plans with exit 0; environment defaults to the stack name -----------------


@pytest.mark.parametrize("cloud", sorted(MINIMAL))
def test_a_minimal_config_passes_every_policy_with_environment_set_to_the_stack(cloud):
    plan = plan_values(MINIMAL[cloud], stack="team-a")
    assert plan.violations() == []
    maps = tag_maps(plan)
    assert maps, "no resource registered tags"
    assert all(m.get("environment") == "team-a" for m in maps), [m for m in maps if m.get("environment") != "team-a"]


def test_a_minimal_stack_file_exits_0(tmp_path):
    stack = tmp_path / "Pulumi.fresh.yaml"
    stack.write_text(
        "config:\n  aws:region: us-east-1\n  gpu-cluster:cloud: aws\n"
        "  gpu-cluster:cluster:\n    gpu: T4:1\n    nodes: 1\n"
    )
    result = CliRunner().invoke(app, ["plan", "--config", str(stack)])
    assert result.exit_code == 0, result.stdout
    assert not [line for line in result.stdout.splitlines() if line.startswith("policy ")]


@pytest.mark.parametrize("cloud", ["aws", "gcp"])
def test_a_user_environment_tag_in_any_spelling_is_kept_and_not_doubled(cloud):
    values = json.loads(json.dumps(MINIMAL[cloud]))
    values["gpu-cluster:cluster"]["tags"] = {"Environment": "prod"}
    plan = plan_values(values, stack="team-a")  # GCP: two keys that sanitise to one label would be refused
    assert plan.violations() == []
    for tags in tag_maps(plan):
        env = {k: v for k, v in tags.items() if k.lower() == "environment"}
        assert list(env.values()) == ["prod"], tags


# --- (13) violations grouped per rule and fix; the resource list kept in JSON and markdown ------------


def untagged(plan):
    """The same plan with `environment` taken off every resource: what a stack without the default gives."""

    def strip(value):
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k != "environment"}
        if isinstance(value, list):
            return [strip(v) for v in value if not (isinstance(v, dict) and v.get("key") == "environment")]
        return value

    plan.run.resources[:] = [
        dataclasses.replace(
            r, inputs={**r.inputs, **{k: strip(r.inputs[k]) for k in ("tags", "labels") if k in r.inputs}}
        )
        for r in plan.resources
    ]
    return plan


@pytest.fixture(scope="module")
def missing_environment():
    return untagged(plan_values(aws_values(gpu="T4:1", nodes=1)))


def test_tag_violations_group_into_one_line_naming_the_key_to_set(missing_environment):
    plan = missing_environment
    violations = plan.violations()
    assert len(violations) > 3 and {v.rule for v in violations} == {"required-tags"}
    (group,) = plan.violation_groups()
    assert group.summary == (f"{len(violations)} resources lack environment; set gpu-cluster:cluster.tags.environment")
    console = Console(file=io.StringIO(), width=200)
    render_table(plan, console)
    lines = [line for line in console.file.getvalue().splitlines() if line.startswith("policy ")]
    assert lines == [f"policy required-tags (mandatory): {group.summary}"]


def test_the_json_keeps_every_violation_and_adds_the_groups(missing_environment):
    doc = json.loads(render_json(missing_environment))
    violations = missing_environment.violations()
    assert [p["urn"] for p in doc["policy"]] == [v.urn for v in violations]
    assert set(doc["policy"][0]) == {"rule", "level", "urn", "message"}  # the stable entries, unchanged
    (group,) = doc["policyGroups"]
    assert group["rule"] == "required-tags" and group["count"] == len(violations)
    assert group["urns"] == [v.urn for v in violations]
    assert group["fix"] == "set gpu-cluster:cluster.tags.environment"


def test_markdown_shows_the_group_and_keeps_each_resource_behind_details(missing_environment):
    md = render_markdown(missing_environment)
    violations = missing_environment.violations()
    items = [line for line in md.splitlines() if line.startswith("- `required-tags`")]
    assert items == [f"- `required-tags` (mandatory): {missing_environment.violation_groups()[0].summary}"]
    details = md[md.index("policy violations by resource") :]
    for v in violations:
        assert v.message.replace("<", "&lt;").replace(">", "&gt;") in details


def test_different_findings_of_one_rule_stay_apart():
    tags = {"gpu-cluster:cluster": "c"}
    resources = [
        Resource("aws:ec2/launchTemplate:LaunchTemplate", {"tags": tags}, "urn:a", "a"),
        Resource("aws:ec2/launchTemplate:LaunchTemplate", {"tags": tags}, "urn:b", "b"),
        Resource("aws:ec2/launchTemplate:LaunchTemplate", {}, "urn:c", "c"),
        Resource("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule", {"cidrIpv4": "0.0.0.0/0"}, "urn:d", "d"),
    ]
    violations = [v for v in evaluate(resources) if v.rule in ("required-tags", "no-open-ingress")]
    summaries = [(g.rule, g.summary) for g in group_violations(violations)]
    assert summaries == [
        ("no-open-ingress", "1 resource allows inbound traffic from 0.0.0.0/0; remove 0.0.0.0/0 from "
         "gpu-cluster:cluster.network.sshCidrs"),
        ("required-tags", "2 resources lack environment; set gpu-cluster:cluster.tags.environment"),
        ("required-tags", "1 resource has no tags/labels"),
    ]  # fmt: skip


# --- (15) cost now and at maxNodes; an unchecked ceiling is said; the reservation is shown -----------


def row(plan, key):
    from components.plan.render import summary_rows

    return dict(summary_rows(plan))[key]


def test_a_group_that_can_grow_shows_its_cost_at_max_nodes():
    plan = plan_values(aws_values(gpu=None, instanceType="g5.xlarge", nodes=0, maxNodes=20))
    (g5,) = catalog.find("aws", "g5.xlarge")
    summary = plan.summary()
    assert summary["hourlyUsd"] == 0
    assert summary["hourlyUsdAtMaxNodes"] == pytest.approx(20 * g5.hourlyUsd, abs=0.01)
    assert row(plan, "est. cost") == f"GPU nodes $0.00/h now (0 nodes), up to ${20 * g5.hourlyUsd:,.2f}/h at 20 nodes"


def test_a_fixed_size_cluster_shows_one_figure():
    plan = plan_values(aws_values(nodes=2))
    assert plan.summary()["hourlyUsdAtMaxNodes"] == plan.summary()["hourlyUsd"]
    assert row(plan, "est. cost") == f"GPU nodes ${plan.summary()['hourlyUsd']:,.2f}/h"


def alicloud_with_ceiling():
    values = json.loads(json.dumps(MINIMAL["alicloud"]))
    return plan_values(values | {"gpu-cluster:maxHourlyUsd": 10})


def test_a_ceiling_without_a_price_is_reported_not_skipped():
    plan = alicloud_with_ceiling()
    assert plan.summary()["hourlyUsd"] is None
    (finding,) = plan.violations()
    assert (finding.rule, finding.level) == ("cost-ceiling-unchecked", "advisory")
    assert "no reference price for ecs.gn8is-8x.32xlarge" in finding.message and "$10.00/h" in finding.message
    assert "cannot be checked" in row(plan, "est. cost")
    plan.policy_config = {"cost-ceiling-unchecked": "mandatory"}  # a team may make it blocking
    assert [v.level for v in plan.violations()] == ["mandatory"]
    plan.policy_config = {"all": "mandatory", "cost-ceiling-unchecked": "advisory"}  # policy/config.json
    assert [v.level for v in plan.violations()] == ["advisory"]


def test_the_unchecked_ceiling_is_advisory_for_the_cli_and_the_pack(tmp_path):
    stack = tmp_path / "Pulumi.ceiling.yaml"
    stack.write_text(
        "config:\n  alicloud:region: cn-hangzhou\n  gpu-cluster:cloud: alicloud\n  gpu-cluster:maxHourlyUsd: 10\n"
        "  gpu-cluster:cluster:\n    instanceType: ecs.gn8is-8x.32xlarge\n    nodes: 1\n    zone: cn-hangzhou-k\n"
    )
    shipped = ["--policy-config", str(ROOT / "policy" / "config.json")]
    for extra in ([], shipped):
        result = CliRunner().invoke(app, ["plan", "--config", str(stack), *extra])
        assert result.exit_code == 0, result.stdout
        assert "policy cost-ceiling-unchecked (advisory)" in result.stdout
    policies = {p.name: p for p in stack_policies()}
    assert set(policies) == policy_names()
    assert str(policies["cost-ceiling-unchecked"].enforcement_level.value).lower() == "advisory"


def test_no_unchecked_finding_when_there_is_a_price_or_no_ceiling():
    assert plan_values(aws_values(nodes=1) | {"gpu-cluster:maxHourlyUsd": 1000}).violations() == []
    assert plan_values(json.loads(json.dumps(MINIMAL["alicloud"]))).violations() == []


def test_the_reservation_is_shown_with_its_type_on_aws():
    reserved = plan_values(aws_values(reservation="cr-0123456789abcdef0", reservationType="capacity-block"))
    summary = reserved.summary()
    assert (summary["reservation"], summary["reservationType"]) == ("cr-0123456789abcdef0", "capacity-block")
    assert row(reserved, "reservation") == "cr-0123456789abcdef0 (capacity-block)"
    plain = plan_values(aws_values())
    assert (plain.summary()["reservation"], plain.summary()["reservationType"]) == (None, None)
    assert row(plain, "reservation") == "none"


def test_a_gcp_reservation_has_no_aws_type():
    values = json.loads(json.dumps(MINIMAL["gcp"]))
    values["gpu-cluster:cluster"]["reservation"] = "my-l4-reservation"
    plan = plan_values(values)
    assert (plan.summary()["reservation"], plan.summary()["reservationType"]) == ("my-l4-reservation", None)
    assert row(plan, "reservation") == "my-l4-reservation"


# --- (12) unverified catalog prices are said so in the plan ------------------------------------------


def gcp_typed(instance_type):
    values = json.loads(json.dumps(MINIMAL["gcp"]))
    values["gpu-cluster:cluster"] = {"instanceType": instance_type, "nodes": 2}
    return plan_values(values)


def test_an_unverified_price_is_flagged_in_the_summary_and_the_cost_row():
    plan = gcp_typed("a3-megagpu-8g")
    (row_,) = catalog.find("gcp", "a3-megagpu-8g")
    assert not row_.priceVerified and row_.priceNote
    summary = plan.summary()
    assert summary["hourlyUsdVerified"] is False and summary["priceNote"] == row_.priceNote
    assert row(plan, "est. cost").endswith(f"; price unverified: {row_.priceNote}")


def test_a_verified_or_missing_price_is_not_flagged():
    assert plan_values(aws_values()).summary()["hourlyUsdVerified"] is True
    assert "unverified" not in row(plan_values(aws_values()), "est. cost")
    assert alicloud_with_ceiling().summary()["hourlyUsdVerified"] is None


def test_an_unverified_price_needs_a_note_and_a_note_needs_the_flag():
    (good,) = catalog.find("aws", "p5.48xlarge")
    data = good.model_dump()
    with pytest.raises(ValueError, match="priceVerified false needs an hourlyUsd and a priceNote"):
        catalog.InstanceType(**{**data, "priceVerified": False})
    with pytest.raises(ValueError, match="set priceVerified false"):
        catalog.InstanceType(**{**data, "priceNote": "copied from one source"})
    assert catalog.InstanceType(**{**data, "priceVerified": False, "priceNote": "one source"}).priceNote


# --- the image row is never cut ----------------------------------------------------------------------


@pytest.mark.parametrize("width", [60, 80, 100])
def test_the_image_row_folds_and_is_never_cut(width):
    plan = plan_values(aws_values())
    image = str(plan.summary()["image"])
    assert len(image) > width  # the case that used to end in an ellipsis
    console = Console(file=io.StringIO(), width=width)
    render_table(plan, console)
    lines = console.file.getvalue().splitlines()
    cells = [re.split(r"[│┃|]", line) for line in lines]
    start = next(i for i, c in enumerate(cells) if len(c) > 2 and c[1].strip() == "image")
    folded = [cells[start][2].strip()]
    for c in cells[start + 1 :]:
        if len(c) <= 2 or c[1].strip():
            break
        folded.append(c[2].strip())
    assert "…" not in "".join(folded)
    assert "".join(folded).replace(" ", "") == image.replace(" ", "")


def test_a_markdown_cell_shows_placeholders_instead_of_hiding_them_as_html():
    md = render_markdown(plan_values(aws_values()))
    (image_row,) = [line for line in md.splitlines() if line.startswith("| image |")]
    assert "&lt;resolved at deploy:" in image_row
