"""The rules' per-type facts as data (resource_types.yaml, read by components/policy/readers.py): what the rules find
on crafted resources of the types the data describes, and that a type known only to the data is judged by it.

Pure: crafted resources through `evaluate`, as the plan and the pack run them; the findings' words are the plan's.
"""

from __future__ import annotations

import pytest

from components.policy import Resource, evaluate, readers
from components.policy.rules import nodes as node_rules
from components.policy.transit import metrics_exposure

# every rule on, the profile-only ones too, so each reader is reached
EVERY_RULE = {
    "all": "advisory",
    **{r: "advisory" for r in ("customer-managed-keys", "in-transit", "deletion-protection", "metadata-protection")},
}
ECS = "huaweicloud:Ecs/instance:Instance"
SG_RULE = "huaweicloud:Vpc/secgroupRule:SecgroupRule"


def found(kind: str, props: dict, *, rule: str, cloud: str = "huaweicloud", spot: bool = False) -> list[str]:
    facts = {"cloud": cloud, "publicIp": False, "spot": spot, "hourlyUsd": 1.0, "maxHourlyUsd": None}
    cluster = Resource("gpu-cluster:index:GpuCluster", {"stackFacts": facts}, "urn:c", "c")
    tagged = {**props, "tags": {"gpu-cluster:cluster": "c", "environment": "dev"}}
    return [v.detail for v in evaluate([cluster, Resource(kind, tagged, "urn:r", "r")], EVERY_RULE) if v.rule == rule]


def test_an_evs_disk_without_a_key_is_unencrypted_and_on_no_customer_key() -> None:
    props = {"dataDisks": [{"kmsKeyId": "k"}, {}]}
    assert found(ECS, props, rule="encrypted-disks") == [
        "system disk is not encrypted (no systemDiskKmsKeyId)",
        "a data disk is not encrypted (no kmsKeyId)",
    ]
    assert found(ECS, props, rule="customer-managed-keys") == [
        "system disk has no systemDiskKmsKeyId",
        "a data disk has no kmsKeyId",
    ]
    keyed = {"systemDiskKmsKeyId": "k", "dataDisks": [{"kmsKeyId": "k"}]}
    assert found(ECS, keyed, rule="encrypted-disks") == found(ECS, keyed, rule="customer-managed-keys") == []


def test_an_admin_password_and_a_spot_charge_are_found_on_huawei_instances() -> None:
    assert found(ECS, {"adminPass": "x"}, rule="node-login") == ["allows password login"]
    assert found(ECS, {"chargingMode": "spot"}, rule="spot-nodes") == [
        "runs spot nodes although the stack did not ask for spot"
    ]
    assert found(ECS, {"chargingMode": "spot"}, rule="spot-nodes", spot=True) == []
    assert found(ECS, {"chargingMode": "postPaid"}, rule="spot-nodes") == []


def test_a_security_group_rule_without_a_prefix_admits_everyone_unless_its_source_is_a_group() -> None:
    assert found(SG_RULE, {"direction": "ingress"}, rule="no-open-ingress") == ["allows inbound traffic from 0.0.0.0/0"]
    assert found(SG_RULE, {"direction": "ingress", "remoteGroupId": "g"}, rule="no-open-ingress") == []
    assert found(SG_RULE, {"direction": "ingress", "action": "deny"}, rule="no-open-ingress") == []
    assert found(SG_RULE, {"direction": "egress"}, rule="no-open-ingress") == []


def test_metrics_ports_are_read_from_a_rules_port_list_and_its_protocol() -> None:
    def exposed(props: dict) -> list[str]:
        return metrics_exposure([Resource(SG_RULE, {"direction": "ingress", **props}, "urn:x", "x")], ("10.0.0.0/8",))

    outside = {"remoteIpPrefix": "192.0.2.0/24", "protocol": "tcp"}
    assert exposed({**outside, "ports": "22,9100"}) == ["x admits 192.0.2.0/24 on a metrics port"]
    assert exposed({**outside, "ports": "22"}) == []
    # without a protocol the rule admits every port (pulumi-huaweicloud 0.0.12 vpc/secgroup_rule.py)
    assert exposed({"remoteIpPrefix": "192.0.2.0/24", "ports": "22"}) == ["x admits 192.0.2.0/24 on a metrics port"]
    assert exposed({"remoteIpPrefix": "10.1.0.0/16", "ports": "9100", "protocol": "tcp"}) == []


def test_the_api_endpoints_the_data_describes() -> None:
    assert found("huaweicloud:Cce/cluster:Cluster", {"eip": "192.0.2.1"}, rule="kubernetes-private-endpoint") == [
        "exposes the Kubernetes API server on the internet although kubernetes.publicEndpoint is false"
    ]
    assert found("huaweicloud:Cce/cluster:Cluster", {}, rule="kubernetes-private-endpoint") == []
    tke = "tencentcloud:Kubernetes/clusterEndpoint:ClusterEndpoint"
    assert found(tke, {}, rule="kubernetes-private-endpoint", cloud="tencentcloud") == [
        "has no private API endpoint (clusterIntranet)"
    ]
    assert found(tke, {"clusterIntranet": "true"}, rule="kubernetes-private-endpoint", cloud="tencentcloud") == []


def test_a_type_known_only_to_the_data_is_judged_by_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """A new cloud adds rows, not branches: a made-up type gets its findings from rows alone."""
    vm = "newcloud:compute/vm:Vm"
    monkeypatch.setitem(
        readers.DISK_ENCRYPTION, vm, [{"list": "disks", "key": "encrypted", "bool": True, "name": ["id"],
                                       "message": "disk {name} is not encrypted"}]
    )  # fmt: skip
    monkeypatch.setitem(readers.PASSWORD_LOGIN, vm, [{"key": "rootPassword"}])
    monkeypatch.setitem(readers.SPOT, vm, [{"key": "billing", "equals": "preemptible"}])
    # a node type is a row of resource_types.yaml nodes (policy/types.py NODE_TYPES)
    monkeypatch.setattr(node_rules, "NODE_TYPES", node_rules.NODE_TYPES | {vm})
    monkeypatch.setitem(
        readers.INGRESS_RULES, vm, {"list": "firewall", "when": {"allow": True}, "sources": ["from"], "ports": "port"}
    )
    props = {
        "disks": [{"id": "boot", "encrypted": "true"}, {"id": "data"}],
        "rootPassword": "x",
        "billing": "preemptible",
        "firewall": [{"allow": True, "from": "0.0.0.0/0", "port": "9100"}, {"allow": False, "from": "::/0"}],
    }
    assert found(vm, props, rule="encrypted-disks") == ["disk data is not encrypted"]
    assert found(vm, props, rule="node-login") == ["allows password login"]
    assert found(vm, props, rule="spot-nodes") == ["runs spot nodes although the stack did not ask for spot"]
    assert found(vm, props, rule="no-open-ingress") == ["allows inbound traffic from 0.0.0.0/0"]
    assert metrics_exposure([Resource(vm, props, "urn:v", "v")]) == ["v admits 0.0.0.0/0 on a metrics port"]
