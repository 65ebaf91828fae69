"""The Tencent Cloud layout, pure: HPC cluster vs placement group, refusals, fabric counting and usability."""

import pytest

from components.errors import ConfigError
from components.layout import tencentcloud as tc
from components.layout.tencentcloud.nodes import USER_DATA_MAX

from .conftest import spec_of
from .test_tencentcloud_resources import tencent_values


def layout(**cluster):
    return tc.plan(spec_of(tencent_values(**cluster)))


def test_hcc_goes_into_an_hpc_cluster_without_a_placement_group():
    out = layout()
    assert out.hcc and out.hpc_cluster and out.placement_group_type is None
    assert out.placement_applied == "cluster"
    assert out.fabric_gbps_wired == out.spec.instance.fabricGbps == 200


def test_hcc_fabric_is_wired_but_not_usable_without_tccl():
    usability = layout().fabric_usability
    assert not usability.usable
    assert any("TCCL" in m for m in usability.missing) and any("RDMA agent" in m for m in usability.missing)


def test_fabric_none_leaves_the_hpc_cluster_out():
    out = layout(fabric="none")
    assert not out.hpc_cluster and out.fabric_gbps_wired == 0
    assert out.fabric_usability.missing == ("no fabric wired",)


def test_managed_hcc_is_refused_with_the_reason():
    with pytest.raises(ConfigError) as err:
        layout(nodeGroup="managed")
    assert err.value.key == "gpu-cluster:cluster.nodeGroup"
    assert "hpc_cluster_id" in str(err.value)


def test_spot_needs_a_cap_and_no_hcc():
    with pytest.raises(ConfigError) as err:
        layout(instanceType="GN7.2XLARGE32", nodes=1, spot=True)
    assert err.value.key == "gpu-cluster:maxHourlyUsd"
    values = tencent_values(spot=True)
    values["gpu-cluster:maxHourlyUsd"] = 50
    with pytest.raises(ConfigError) as err:
        tc.plan(spec_of(values))
    assert err.value.key == "gpu-cluster:cluster.spot"


@pytest.mark.parametrize(("placement", "group"), [("cluster", "SW"), ("spread", "HOST"), ("none", None)])
def test_placement_groups_for_other_types(placement, group):
    out = layout(instanceType="GN10Xp.20XLARGE320", placement=placement)
    assert out.placement_group_type == group and not out.hpc_cluster


def test_one_node_keeps_its_placement_group_to_grow_back_in_place():
    # a Tencent placement group is created empty (cvm CreateDisasterRecoverGroup: Name, Type, Affinity; no count)
    # and takes one member; docs/day2.md "Placement at one node"
    for nodes in (1, 2):
        out = layout(instanceType="GN10Xp.20XLARGE320", nodes=nodes)
        assert (out.placement_applied, out.placement_group_type) == ("cluster", "SW")


def test_nvme_scratch_on_hcc_and_cloud_disk_elsewhere():
    assert layout().scratch.kind == "nvme"
    assert layout(instanceType="GN7.2XLARGE32", nodes=1).scratch.kind == "disk"


def test_bootstrap_has_every_node_part_and_the_nccl_env():
    text = layout().user_data
    for part in ("gpu-cluster-health", "/etc/gpu-cluster/nccl.env", "NCCL_SOCKET_IFNAME=bond0"):
        assert part in text
    assert len(layout().user_data_b64) <= USER_DATA_MAX


def test_count_wired_gbps_from_resources():
    cluster = {"type": "tencentcloud:Cvm/hpcCluster:HpcCluster", "name": "c-hpc", "inputs": {}}
    node = {
        "type": "tencentcloud:Instance/instance:Instance",
        "name": "c-node-0",
        "inputs": {"instanceType": "HCCG5v.24XLARGE384", "hpcClusterId": "<id of c-hpc>"},
    }
    assert tc.count_wired_gbps([cluster, node], 100) == 200
    assert tc.count_wired_gbps([node], 100) == 0  # no HPC cluster registered
    loose = {**node, "inputs": {"instanceType": "HCCG5v.24XLARGE384"}}
    assert tc.count_wired_gbps([cluster, loose], 100) == 0


def test_layout_imports_no_pulumi():
    import subprocess
    import sys

    from .conftest import ROOT

    code = (
        "import sys; import components.layout.tencentcloud; "
        "print(sorted(m for m in sys.modules if m.split('.')[0].startswith(('pulumi', 'tencentcloud'))))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert proc.stdout.strip() == "[]"
