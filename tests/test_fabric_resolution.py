"""Multi-node resolution never hands the nodes a fabric NCCL cannot use without saying so (issue 26, defect 7).

`gpu: MODEL:COUNT` for nodes that train together (`nodes`/`maxNodes` above 1, not a scaling fleet, fabric not none)
prefers the first type whose fabric NCCL can use on `image: auto` (`catalog.fabric_usable`), is refused when no type
of that count has one, and a configured `instanceType` without one is warned. `catalog.fabric_usable` answers from
the catalog's data what each cloud's layout answers for the plan (`fabric_usability`): the last test keeps them in
step for every row with a fabric.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from components import catalog
from components.catalog import availability
from components.contract import contract
from components.errors import ConfigError
from components.plan import load_stack

from .conftest import ROOT, aws_values, gcp_values, one, plan_values, spec_of

KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl test@example"


def errors_of(values: dict[str, Any]) -> dict[str, str]:
    with pytest.raises(ConfigError) as info:
        spec_of(values)
    found = getattr(info.value, "errors", None) or [info.value]
    return {e.key: e.message for e in found}


def warnings_of(values: dict[str, Any], key: str) -> list[str]:
    return [f.message for f in spec_of(values).findings if f.level == "warning" and f.key == key]


# --- GCP: H100:8 for several nodes is A3 Mega, whose GPUDirect-TCPXO the image supports -------------------------


def test_gcp_h100x8_for_two_nodes_registers_a3_mega_not_the_tcpx_type():
    plan = plan_values(gcp_values(gpu="H100:8", nodes=2, nodeGroup="instances"))
    assert one(plan, "compute/instanceTemplate:InstanceTemplate")["inputs"]["machineType"] == "a3-megagpu-8g"
    assert len([r for r in plan.resources if r.type.endswith("instanceFromTemplate:InstanceFromTemplate")]) == 2
    assert plan.summary()["fabricUsable"] is True
    resolution = plan.summary()["resolution"]
    assert "passing over a3-highgpu-8g" in resolution and "TCPX-capable kernel" in resolution


def test_gcp_h100x8_for_one_node_keeps_the_rule_pick():
    # one node: no fabric between nodes to use, so fewest vCPUs then price, as documented
    assert spec_of(gcp_values(gpu="H100:8", nodes=1)).instance.instanceType == "a3-highgpu-8g"


def test_a_scaling_fleet_and_fabric_none_are_not_training_across_nodes():
    fleet = gcp_values(gpu="H100:8", nodes=1, maxNodes=4, scaling={"metric": "gpuUtilization", "target": 70})
    assert spec_of(fleet).instance.instanceType == "a3-highgpu-8g"
    assert spec_of(gcp_values(gpu="H100:8", nodes=2, fabric="none")).instance.instanceType == "a3-highgpu-8g"


def test_max_nodes_counts_as_several_nodes():
    assert spec_of(gcp_values(gpu="H100:8", nodes=1, maxNodes=2)).instance.instanceType == "a3-megagpu-8g"


# --- AWS: a count no type with a fabric has is refused unless fabric: none ------------------------------------


def test_aws_one_h100_on_two_nodes_is_refused_naming_the_count_that_has_efa():
    errors = errors_of(aws_values(gpu="h100", nodes=2))
    message = errors["gpu-cluster:cluster.gpu"]
    assert "p5.4xlarge (no HPC fabric)" in message
    assert "use gpu H100:8 (p5.48xlarge), which has one" in message
    assert "fabric: none" in message


def test_aws_one_h100_on_two_nodes_with_fabric_none_is_what_was_asked():
    spec = spec_of(aws_values(gpu="h100", nodes=2, fabric="none"))
    assert spec.instance.instanceType == "p5.4xlarge"
    assert not spec.fabric_wired


def test_aws_two_b300_nodes_are_refused_because_their_efa_is_not_wired():
    row = catalog.find("aws", "p6-b300.48xlarge")[0]
    assert row.fabric == "none" and row.extra["efaGeneration"] == "EFAv4"  # the hardware has EFA, the row wires none
    message = errors_of(aws_values(gpu="B300:8", nodes=2))["gpu-cluster:cluster.gpu"]
    assert "does not wire" in message and "network-card layout" in message


def test_aws_two_b300_nodes_by_instance_type_are_warned():
    values = aws_values(gpu=None, instanceType="p6-b300.48xlarge", nodes=2)
    (warning,) = warnings_of(values, "gpu-cluster:cluster.instanceType")
    assert warning.startswith("p6-b300.48xlarge has no fabric NCCL can use between nodes (EFAv4 hardware")
    assert "set fabric: none if that is intended" in warning
    assert warnings_of({**values, "gpu-cluster:cluster": {**values["gpu-cluster:cluster"], "fabric": "none"}},
                       "gpu-cluster:cluster.instanceType") == []  # fmt: skip


def test_aws_t4_for_two_nodes_takes_the_smallest_t4_type_with_efa():
    spec = spec_of(aws_values(gpu="T4:1", nodes=2))
    assert spec.instance.instanceType == "g4dn.8xlarge" and spec.fabric_wired
    assert "passing over g4dn.xlarge, g4dn.2xlarge, g4dn.4xlarge (no HPC fabric)" in spec.resolution


def test_a_custom_image_asks_only_for_a_wired_fabric():
    # the image may bring the fabric's software (the plan says what it cannot vouch for): TCPX counts
    picked = catalog.resolve("gcp", "H100", 8, fabric=catalog.fabric_present)
    assert picked.type.instanceType == "a3-highgpu-8g" and picked.fabric_problem is None
    custom = gcp_values(gpu="H100:8", nodes=2, image="projects/my-project/global/images/family/tcpx-kernel")
    assert spec_of(custom).instance.instanceType == "a3-highgpu-8g"


# --- shipped stacks: a configured type without a usable fabric is said loudly, resources unchanged --------------


@pytest.mark.parametrize("stack", ["alicloud-a100", "alicloud-a100-cmk", "tencentcloud-hcc"])
def test_shipped_multi_node_stacks_without_a_usable_fabric_warn(stack):
    values = copy.deepcopy(load_stack(ROOT, stack).values)
    (warning,) = warnings_of(values, "gpu-cluster:cluster.instanceType")
    assert "has no fabric NCCL can use between nodes" in warning


def test_the_warning_reaches_the_plan():
    plan = plan_values(aws_values(gpu=None, instanceType="p6-b300.48xlarge", nodes=2, zone="us-east-1a"))
    assert any("p6-b300.48xlarge has no fabric NCCL can use" in w for w in plan.warnings())
    assert one(plan, "ec2/launchTemplate:LaunchTemplate")["inputs"]["instanceType"] == "p6-b300.48xlarge"


# --- catalog.fabric_usable agrees with every layout ----------------------------------------------------------


def _values_for(row: catalog.InstanceType) -> dict[str, Any]:
    """Two nodes of the row, fixed (instances), image auto, in a region that sells it."""
    data = catalog.load(row.cloud)
    rule = data.rules["region"]
    offer = availability.offer(row.cloud, row.instanceType, gpu=row.gpu)
    region = offer.regions[0] if offer and offer.regions else str(data.prices.get("region") or rule["example"])
    cluster: dict[str, Any] = {"instanceType": row.instanceType, "nodes": 2, "nodeGroup": "instances"}
    if row.cloud == "azure":
        cluster["sshPublicKey"] = KEY
    if row.cloud == "gcp":
        cluster["zone"] = (availability.zones_selling("gcp", row.instanceType, region, gpu=row.gpu) or [f"{region}-a"])[
            0
        ]
        if any(row.instanceType.startswith(p) for p in data.rules["consumption"]["noOnDemand"]):
            cluster["reservation"] = "my-block"  # reservation-bound types
    values = {"gpu-cluster:cloud": row.cloud, rule["key"]: region, "gpu-cluster:cluster": cluster}
    if "project" in rule:
        values[rule["project"]] = "my-project"
    return values


FABRIC_ROWS = [row for row in catalog.all_types() if row.has_fabric]


@pytest.mark.parametrize("row", FABRIC_ROWS, ids=lambda r: f"{r.cloud}-{r.instanceType}")
def test_fabric_usable_is_what_the_layout_plans(row):
    usable, why = catalog.fabric_usable(row)
    assert bool(why) is not usable
    entry = catalog.gpu_image(row.cloud, row)
    if not any(entry.get(k) for k in ("ssmParameter", "urn", "family", "nameRegex", "osName")):
        # no image at all on image auto (Azure GB200): the layout refuses the image, and nothing is usable
        assert not usable
        with pytest.raises(ConfigError, match="auto has no image"):
            contract(row.cloud).plan(spec_of({**_values_for(row)}))
        return
    layout = contract(row.cloud).plan(spec_of(_values_for(row)))
    assert layout.fabric_usability.usable is usable, (why, layout.fabric_usability.missing)


def test_the_rows_that_are_not_usable_are_the_known_ones():
    unusable = {r.instanceType for r in FABRIC_ROWS if not catalog.fabric_usable(r)[0]}
    assert unusable == {
        "p3dn.24xlarge",  # not among the DLAMI's supported types
        "Standard_ND96isr_MI300X_v5",  # the ROCm image vouches for no RCCL topology
        "Standard_ND128isr_NDR_GB200_v6",  # no published arm64 image
        "a3-highgpu-8g",  # GPUDirect-TCPX needs a kernel no public image has
        "a3-edgegpu-8g",
        "a4x-highgpu-4g",  # the arm64 gIB stack is not installed
        "HCCG5v.24XLARGE384",  # HCC RDMA needs TCCL and the RDMA agent
        "HCCPNV4h.48XLARGE1024",
    }


def test_a_wired_fabric_the_catalog_cannot_vouch_for_can_be_taken_by_naming_the_type():
    values = {"gpu-cluster:cloud": "azure", "azure-native:location": "eastus",
              "gpu-cluster:cluster": {"gpu": "MI300X:8", "nodes": 2, "sshPublicKey": KEY}}  # fmt: skip
    message = errors_of(values)["gpu-cluster:cluster.gpu"]
    assert "set instanceType: Standard_ND96isr_MI300X_v5 to take its infiniband as it is" in message
    values["gpu-cluster:cluster"]["instanceType"] = "Standard_ND96isr_MI300X_v5"
    warnings = warnings_of(values, "gpu-cluster:cluster.instanceType")
    assert any("has no fabric NCCL can use between nodes (RCCL over InfiniBand" in w for w in warnings)
