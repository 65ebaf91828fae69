"""Huawei Cloud `nodeGroup: managed` without a scheduler: an AS group launching the GPU nodes from one AS
configuration, as registered with Pulumi's mocks (the inputs the engine would receive, camelCase), its node logs (the
LTS custom identifier every node writes before ICAgent, the LABEL host group, the day-2 verdict), and what it refuses
by key (capabilities/huaweicloud.yaml asGroup)."""

from __future__ import annotations

import base64
import copy
import gzip
import json
import re
from typing import Any

import dill
import pytest
import yaml

from components import bootstrap
from components.catalog.capabilities import capability_data
from components.diff import diff_plans
from components.diff.spec_changes import mode_of
from components.errors import ConfigError, ConfigErrors
from components.layout import huaweicloud as hw
from components.layout.huaweicloud.logs import data as logs_data
from components.policy import Resource, evaluate
from components.policy.model import Facts, Issue
from components.policy.rules.data import customer_managed_keys
from components.spec import build_spec
from components.spec.updates import update_policies
from components.text import one_line

from .conftest import ROOT, load_stack, one, plan_json, plan_stack, plan_values, resources_of

CONFIG = "huaweicloud:As/configuration:Configuration"
GROUP = "huaweicloud:As/group:Group"
AS = capability_data("huaweicloud")["asGroup"]


def as_values(**cluster: Any) -> dict[str, Any]:
    values = copy.deepcopy(load_stack(ROOT, "huaweicloud-as").values)
    values["gpu-cluster:cluster"].update(cluster)
    return values


def errors_of(values: dict[str, Any]) -> dict[str, str]:
    with pytest.raises((ConfigErrors, ConfigError)) as got:
        hw.plan(build_spec(values, "test"))
    errors = got.value.errors if isinstance(got.value, ConfigErrors) else [got.value]
    return {e.key: e.message for e in errors}


@pytest.fixture(scope="module")
def shipped():
    return plan_stack("huaweicloud-as")


def test_the_shipped_stack_builds_an_as_group_and_no_gpu_instance(shipped):
    doc = shipped.as_json()
    assert doc["policy"] == []
    instances = [r["name"] for r in resources_of(shipped, "Ecs/instance:Instance")]
    assert instances == ["hw-as-huaweicloud-login"]  # the login node only: the GPU nodes are the group's
    group = one(shipped, "As/group:Group")["inputs"]
    assert (group["minInstanceNumber"], group["desireInstanceNumber"], group["maxInstanceNumber"]) == (2, 2, 4)
    assert group["scalingConfigurationId"] == "<id of hw-as-huaweicloud-config>"
    assert group["networks"] == [{"id": "<id of hw-as-huaweicloud-nodes>"}]
    zone = "<first availability zone of cn-north-4>"  # the subnet's zone (zone: unset), the group's only one
    assert group["vpcId"] == "<id of hw-as-huaweicloud-vpc>" and group["availabilityZones"] == [zone]
    # a scale-in or a new configuration removes the older configuration's nodes first; a destroy takes the nodes
    assert group["instanceTerminatePolicy"] == "OLD_CONFIG_OLD_INSTANCE" and group["forceDelete"] is True
    assert group["deleteVolume"] is True  # the scratch disk goes with its node (storage.retainScratch false)


def test_the_agency_reaches_the_nodes_through_the_group(shipped):
    agency = one(shipped, "Iam/agency:Agency")["inputs"]
    assert one(shipped, "As/group:Group")["inputs"]["agencyName"] == agency["name"] == "hw-as-huaweicloud-as-nodes"
    assert AS["agency"] == "group"


def test_the_configuration_encrypts_the_scratch_disk_and_names_the_server_group(shipped):
    cfg = one(shipped, "As/configuration:Configuration")["inputs"]["instanceConfig"]
    system, scratch = cfg["disks"]
    assert system == {"diskType": "SYS", "size": 200, "volumeType": "GPSSD"}  # no key: AS cannot encrypt it
    assert scratch == {"diskType": "DATA", "size": 200, "volumeType": "GPSSD", "kmsId": "<id of hw-as-huaweicloud-key>"}
    assert cfg["ecsGroupId"] == f"<id of {one(shipped, 'Ecs/servergroup:Servergroup')['name']}>"
    assert cfg["flavor"] == "pi2.2xlarge.4" and cfg["keyName"] == "hw-as-huaweicloud-as"
    assert cfg["securityGroupIds"] == ["<id of hw-as-huaweicloud-sg>"]
    assert "publicIp" not in cfg  # the login node is the way in


def test_the_user_data_is_the_nodes_bootstrap_gzipped_within_huaweis_limit(shipped):
    cfg = one(shipped, "As/configuration:Configuration")["inputs"]["instanceConfig"]
    packed = base64.b64decode(cfg["userData"])
    assert len(packed) <= int(capability_data("huaweicloud")["userData"]["maxBytes"])
    layout = hw.plan(build_spec(load_stack(ROOT, "huaweicloud-as").values, "huaweicloud-as"))
    assert layout.packed and gzip.decompress(packed).decode() == layout.user_data
    assert packed == base64.b64decode(bootstrap.gzip_b64(layout.user_data))


def test_the_plan_warns_that_the_system_disks_are_not_encrypted(shipped):
    warned = [w for w in shipped.as_json()["warnings"] if w.startswith("gpu-cluster:cluster.nodeGroup:")]
    assert warned == [f"gpu-cluster:cluster.nodeGroup: managed on huaweicloud: {one_line(AS['systemDiskWhy'])}"]


def test_outputs_name_the_group_not_instances(shipped):
    outputs = shipped.as_json()["outputs"]
    assert outputs["nodeGroup"] == "<id of hw-as-huaweicloud-group>"
    assert "instanceIds" not in outputs and outputs["privateIps"] is None


def test_an_eip_per_node_without_a_login_node_is_released_with_the_node():
    plan = plan_values(as_values(login=None, network={"publicIp": True, "sshCidrs": ["203.0.113.0/24"]}))
    cfg = one(plan, "As/configuration:Configuration")["inputs"]["instanceConfig"]
    assert cfg["publicIp"] == {
        "eip": {"ipType": "5_bgp", "bandwidth": {"shareType": "PER", "size": 100, "chargingMode": "traffic"}}
    }
    assert one(plan, "As/group:Group")["inputs"]["deletePublicip"] is True


def test_no_scratch_disk_and_a_looked_up_image_left_alone():
    plan = plan_values(as_values(storage={"scratch": "none"}))
    config = one(plan, "As/configuration:Configuration")
    assert [d["diskType"] for d in config["inputs"]["instanceConfig"]["disks"]] == ["SYS"]
    # a newer public image must not replace the configuration on an unrelated `pulumi up`
    resource = next(r for r in plan.resources if r.type == CONFIG)
    assert resource.ignore_changes == ("instanceConfig.image",)


def test_a_pinned_image_is_the_configurations_and_tracked():
    image = "0b30658a-ed1a-4922-b8f7-a673ca9c1234"
    plan = plan_values(as_values(image=image))
    resource = next(r for r in plan.resources if r.type == CONFIG)
    assert resource.inputs["instanceConfig"]["image"] == image and not resource.ignore_changes


@pytest.mark.parametrize(
    ("cluster", "key", "reason"),
    [
        ({"scheduler": "slurm"}, "gpu-cluster:cluster.nodeGroup", "slurmWhy"),
        ({"access": "none", "login": None, "sshPublicKey": None}, "gpu-cluster:cluster.sshPublicKey", "accessWhy"),
        ({"scaling": {"metric": "gpuUtilization", "target": 70}}, "gpu-cluster:cluster.scaling", "scalingWhy"),
    ],
)
def test_what_an_as_group_cannot_take_is_refused_by_key_with_the_datas_reason(cluster, key, reason):
    got = errors_of(as_values(**cluster))
    assert one_line(AS[reason]) in got[key]


def test_more_nodes_than_an_as_group_holds_are_refused():
    got = errors_of(as_values(maxNodes=AS["maxInstances"] + 1))
    assert got["gpu-cluster:cluster.maxNodes"].startswith(f"{AS['maxInstances'] + 1}: a Huawei AS group holds at most")


def test_a_kubernetes_pool_is_still_cces_not_an_as_group():
    cce = plan_stack("huaweicloud-cce")
    assert not [r for r in cce.resources if r.type in (CONFIG, GROUP)]


# --- monitoring.logs: the nodes join LTS's host group by the stack's custom identifier -------------------------------

LOGS_ON = {"logs": {"enabled": True}}
LABEL = "hw-as-huaweicloud-as-hosts"
LABEL_SCRIPT = "/usr/local/sbin/gpu-cluster-lts-label"
ICAGENT_SCRIPT = "/usr/local/sbin/gpu-cluster-icagent"


@pytest.fixture(scope="module")
def logs_plan():
    return plan_values(as_values(monitoring=LOGS_ON), "huaweicloud-as")


def _files(user_data: str) -> dict[str, str]:
    text = user_data if user_data.startswith("#cloud-config") else gzip.decompress(base64.b64decode(user_data)).decode()
    return {f["path"]: f["content"] for f in yaml.safe_load(text)["write_files"]}


def _env(text: str) -> dict[str, str]:
    return {k: json.loads(v) for k, v in (line.split("=", 1) for line in text.splitlines())}


def test_with_logs_the_configurations_user_data_writes_the_identifier_then_installs_icagent(logs_plan):
    cfg = one(logs_plan, "As/configuration:Configuration")["inputs"]["instanceConfig"]
    assert len(base64.b64decode(cfg["userData"])) <= int(capability_data("huaweicloud")["userData"]["maxBytes"])
    files = _files(cfg["userData"])
    paths = list(files)
    assert paths.index(LABEL_SCRIPT) < paths.index(ICAGENT_SCRIPT)  # the identifier is there before ICAgent starts
    assert files[LABEL_SCRIPT] == bootstrap.script("huaweicloud_lts_label.sh")
    assert files[ICAGENT_SCRIPT] == bootstrap.script("huaweicloud_icagent.sh")
    assert _env(files["/etc/gpu-cluster/lts-label.env"]) == {
        "LTS_LABEL": LABEL,
        "LABEL_FILE": "/opt/cloud/lts/custom_tag",
        "DIR_MODE": "0750",
        "FILE_MODE": "0640",
    }
    assert "Before=gpu-cluster-icagent.service" in files["/etc/systemd/system/gpu-cluster-lts-label.service"]
    assert _env(files["/etc/gpu-cluster/icagent.env"])["ACCESS_IP"] == "100.125.12.150"


def test_with_logs_the_login_node_writes_the_same_identifier(logs_plan):
    login = [r for r in logs_plan.as_json()["resources"] if r["name"] == "hw-as-huaweicloud-login"]
    files = _files(login[0]["inputs"]["userData"])
    assert _env(files["/etc/gpu-cluster/lts-label.env"])["LTS_LABEL"] == LABEL
    assert ICAGENT_SCRIPT in files


def test_with_logs_the_host_group_is_the_identifiers_and_lists_no_instance(logs_plan):
    inputs = one(logs_plan, ":LtsIngestion")["inputs"]
    assert inputs["labels"] == [LABEL] and inputs["hostIds"] == []
    assert inputs["hostGroupName"] == LABEL  # one name for the group and the identifier its members write
    assert "clusterId" not in inputs and "pathType" not in inputs  # CCE's only
    provider = dill.loads(base64.b64decode(inputs["__provider"]))
    assert (provider.agent_access_type, provider.access_config_type) == ("LABEL", "AGENT")
    assert logs_plan.as_json()["outputs"]["logs"]["hostGroupLabel"] == LABEL


def test_with_logs_the_groups_agency_carries_icagents_role(logs_plan):
    agency = one(logs_plan, "Iam/agency:Agency")["inputs"]
    assert one(logs_plan, "As/group:Group")["inputs"]["agencyName"] == agency["name"]
    assert "APM Administrator" in agency["allResourcesRoles"]


def test_the_identifier_keeps_to_ltss_characters_and_length_at_the_longest_names():
    rules = logs_data()["customIdentifier"]
    values = as_values(name="a" + "b" * 29 + "c", monitoring=LOGS_ON)
    inputs = one(plan_values(values, "production.gpu-cluster_east.v2-long" * 3), ":LtsIngestion")["inputs"]
    (label,) = inputs["labels"]
    assert re.fullmatch(f"{rules['labelPattern']}+", label) and len(label) <= rules["labelMaxLength"]


def test_day2_logs_on_makes_a_new_configuration_for_new_nodes_and_adds_the_lts_resources(logs_plan):
    off = plan_stack("huaweicloud-as")
    d = diff_plans(plan_json(off), plan_json(logs_plan))
    added = sorted(urn.split("::")[-2].split("$")[-1].split(":")[-1] for urn in d.created)
    assert added == ["Group", "LtsIngestion", "Stream"] and not d.deleted
    changed = {c.name: c.verdict for c in d.changed}
    # a new configuration the group points at: the running nodes keep theirs (updates.yaml hw_as_by_hand)
    assert changed["hw-as-huaweicloud-config"] == "replace"
    assert changed["hw-as-huaweicloud-group"] == "refresh"
    assert changed["hw-as-huaweicloud-agency"] == "update"
    assert changed["hw-as-huaweicloud-login"] == "may-replace"  # its user data, as with ECS instances
    assert set(changed) == {
        "hw-as-huaweicloud-config",
        "hw-as-huaweicloud-group",
        "hw-as-huaweicloud-agency",
        "hw-as-huaweicloud-login",
    }
    effect = update_policies()["cluster.monitoring.logs.enabled"].effect(mode_of(plan_json(logs_plan)))
    assert effect.policy == "rolling" and "new AS configuration" in effect.jobs


# --- the policy pack reads the configuration -------------------------------------------------------------------------


def _config(disks: list[dict[str, Any]]) -> Resource:
    return Resource(CONFIG, {"instanceConfig": {"disks": disks}}, "urn:c", "c")


def test_encrypted_disks_checks_the_data_disks_the_configuration_can_encrypt():
    sys_disk = {"diskType": "SYS", "size": 200, "volumeType": "GPSSD"}
    plain = [*evaluate([_config([sys_disk, {"diskType": "DATA", "size": 100, "volumeType": "GPSSD"}])])]
    assert [v.detail for v in plain if v.rule == "encrypted-disks"] == ["a data disk is not encrypted (no kmsId)"]
    keyed = [*evaluate([_config([sys_disk, {"diskType": "DATA", "size": 100, "volumeType": "GPSSD", "kmsId": "k"}])])]
    assert not [v for v in keyed if v.rule == "encrypted-disks"]


def test_a_compliance_profile_names_the_system_disk_without_a_key():
    plan = plan_values(as_values(compliance="mlps3"))
    keys = [p for p in plan.as_json()["policy"] if "customer-managed-keys" in str(p)]
    assert keys and "the system disk takes no key (an AS configuration cannot encrypt one)" in str(keys)
    sys_disk = {"diskType": "SYS", "size": 200, "volumeType": "GPSSD"}
    (issue,) = customer_managed_keys(_config([sys_disk]), Facts())
    assert isinstance(issue, Issue) and issue.fix.startswith("set gpu-cluster:cluster.nodeGroup instances")
