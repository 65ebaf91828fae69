"""The cloud-neutral Slurm layer, pure: rendered slurm.conf / gres.conf / topology for a p5 (AWS), an ND H100 v5
(Azure), an a3-mega (GCP) and an ebmgn8v (Alibaba) cluster, from specs built by `build_spec`."""

from __future__ import annotations

import copy
import dataclasses
import math
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.bootstrap.slurm_conf import HEAD_PLACEHOLDER, SLURMCTLD_HOST_TOKEN, max_node_count, real_memory_mib
from components.catalog.slurm import data
from components.errors import ConfigError
from components.layout.slurm import slurm_layout
from components.spec import build_spec

ROOT = Path(__file__).resolve().parent.parent


def stack_values(stack: str, **cluster: Any) -> dict[str, Any]:
    values: dict[str, Any] = copy.deepcopy(
        yaml.safe_load((ROOT / "stacks" / f"Pulumi.{stack}.yaml").read_text())["config"]
    )
    values["gpu-cluster:cluster"].update({"scheduler": "slurm", **cluster})
    return values


def conf_lines(text: str) -> dict[str, str]:
    """`Key=value` lines of a Slurm conf (comments out)."""
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            key, _, value = line.partition("=")
            out[key] = value
    return out


# stack, instance type, GPUs, vCPUs, catalog memory GiB, GRES
CLUSTERS = [
    ("aws-h100", "p5.48xlarge", 8, 192, 2048.0, "gpu:h100:8"),
    ("azure-h100", "Standard_ND96isr_H100_v5", 8, 96, 1900.0, "gpu:h100:8"),
    ("gcp-a3mega", "a3-megagpu-8g", 8, 208, 1872.0, "gpu:h100:8"),
    # ebmgn8v: the catalog does not name the GPU model (96 GB HBM3): an untyped GRES
    ("alicloud-erdma", "ecs.ebmgn8v.48xlarge", 8, 192, 1024.0, "gpu:8"),
]


@pytest.mark.parametrize(
    ("stack", "instance", "gpus", "vcpus", "memory", "gres"), CLUSTERS, ids=[c[0] for c in CLUSTERS]
)
def test_four_clouds_render_gpus_memory_partition_and_no_topology(stack, instance, gpus, vcpus, memory, gres):
    spec = build_spec(stack_values(stack), stack)
    assert spec.instance.instanceType == instance and spec.instance.memoryGiB == memory
    assert spec.instance.vcpus == vcpus
    lay = slurm_layout(spec)
    assert lay is not None
    # RealMemory: the catalog's memory less max(5%, 1 GiB), in MiB
    expected_mib = math.floor(memory * 1024 - max(memory * 1024 * 0.05, 1024))
    assert lay.node.real_memory_mib == expected_mib
    assert lay.node.gres == gres and lay.node.gpus == gpus
    conf = conf_lines(lay.slurm_conf + lay.nodes_conf)
    for key, value in {
        "SlurmctldParameters": "enable_configless",
        "SelectType": "select/cons_tres",
        "GresTypes": "gpu",
        "AuthType": "auth/munge",
        "SlurmctldHost": SLURMCTLD_HOST_TOKEN,
        "HealthCheckProgram": "/usr/local/sbin/gpu-cluster-slurm-health",
        "MaxNodeCount": str(2 * spec.max_nodes),
        "TreeWidth": "65533",
        "MailProg": "/usr/bin/logger",
        "Nodeset": "gpu_nodes Feature=gpu",
        # each GPU's share of the node: RealMemory / GPUs, vCPUs / GPUs (even: whole cores)
        "PartitionName": "gpu Nodes=gpu_nodes Default=YES MaxTime=INFINITE State=UP "
        f"DefCpuPerGPU={vcpus // gpus} DefMemPerGPU={expected_mib // gpus}",
    }.items():
        assert conf[key] == value, key
    assert lay.gres_conf == "AutoDetect=nvml\n"
    assert "ConstrainDevices=yes" in lay.cgroup_conf
    # every shipped GPU stack packs its nodes into one placement group: one switch, which is no topology (every node
    # under the same switch), and no slurmd warning that no switch reaches all nodes
    assert spec.placement == "cluster"
    assert lay.topology is None and lay.topology_yaml is None and "topology.yaml" not in lay.files()
    assert lay.dynamic_conf() == f"Feature=gpu Gres={gres} RealMemory={expected_mib}"


def test_two_1_gpu_jobs_fit_on_a_node_with_the_partition_defaults():
    """Defect 10a: without DefMemPerGPU a job with no --mem gets the node's whole memory; with it, the GPUs' shares
    add up to at most RealMemory, and the CPUs' to at most the vCPUs."""
    for stack, *_ in CLUSTERS:
        lay = slurm_layout(build_spec(stack_values(stack), stack))
        assert lay is not None
        node = lay.node
        part = conf_lines(lay.slurm_conf + lay.nodes_conf)["PartitionName"]
        assert f" DefMemPerGPU={node.mem_per_gpu_mib}" in part and f" DefCpuPerGPU={node.cpus_per_gpu}" in part
        assert 0 < node.gpus * node.mem_per_gpu_mib <= node.real_memory_mib
        assert node.cpus is not None and 0 < node.gpus * (node.cpus_per_gpu or 0) <= node.cpus
    # DefMemPerCPU would exclude DefMemPerGPU (slurm.conf(5): mutually exclusive): not set
    assert "DefMemPerCPU" not in conf_lines(lay.slurm_conf + lay.nodes_conf)


@pytest.mark.parametrize(
    ("vcpus", "gpus", "per_gpu"),
    [(192, 8, 24), (104, 8, 12), (140, 4, 34), (12, 8, 1), (4, 1, 4), (1, 1, 1)],
    ids=["p5", "gn7-c13g1-odd-share", "a4x-odd-share", "fewer-than-2", "one-gpu", "one-vcpu"],
)
def test_cpus_per_gpu_is_a_whole_number_of_two_thread_cores(vcpus, gpus, per_gpu):
    """An odd share would take an extra core under CR_Core_Memory on a two-thread node: the last GPU's job would not
    find its cores (104 vCPUs = 52 cores, 8 x 13 CPUs = 8 x 7 cores = 56)."""
    spec = build_spec(stack_values("aws-h100"), "t")
    row = spec.instance.model_copy(update={"vcpus": vcpus, "gpus": gpus})
    lay = slurm_layout(dataclasses.replace(spec, instance=row))
    assert lay is not None and lay.node.cpus_per_gpu == per_gpu
    assert gpus * math.ceil(per_gpu / 2) <= max(vcpus // 2, 1) or per_gpu == 1


def test_without_a_vcpu_count_no_cpu_default_is_set():
    spec = build_spec(stack_values("aws-h100"), "t")
    lay = slurm_layout(dataclasses.replace(spec, instance=spec.instance.model_copy(update={"vcpus": None})))
    assert lay is not None and lay.node.cpus_per_gpu is None
    part = conf_lines(lay.slurm_conf + lay.nodes_conf)["PartitionName"]
    assert "DefCpuPerGPU" not in part and part.endswith(f" DefMemPerGPU={lay.node.mem_per_gpu_mib}")


def test_max_node_count_leaves_a_slot_for_each_nodes_replacement():
    """Defect 10b: a node that died without `scontrol delete` keeps its slot until the head's cleanup deletes it; the
    group's replacement needs one of its own. MaxNodeCount = 2 x maxNodes, within Slurm's 65536 (slurm.conf(5))."""
    rule = data()["maxNodeCount"]
    assert rule["perMaxNode"] == 2 and rule["limit"] == 65536
    assert [max_node_count(n) for n in (1, 2, 4, 5000, 40000)] == [2, 4, 8, 10000, 65536]
    lay = slurm_layout(build_spec(stack_values("aws-h100", maxNodes=6), "t"))
    assert lay is not None and lay.max_nodes == 6 and lay.max_node_count == 12
    assert conf_lines(lay.slurm_conf + lay.nodes_conf)["MaxNodeCount"] == "12"


def test_mail_prog_is_a_program_every_image_has():
    """Defect 10c: slurmctld checks MailProg at every start; /usr/bin/logger is util-linux's (bsdutils, Essential)."""
    lay = slurm_layout(build_spec(stack_values("aws-h100"), "t"))
    assert lay is not None
    assert conf_lines(lay.slurm_conf)["MailProg"] == data()["mailProg"]["path"] == "/usr/bin/logger"


def test_the_margin_floor_of_1_gib_wins_on_small_memory():
    assert real_memory_mib(16) == 16 * 1024 - 1024  # 5% of 16 GiB is 819 MiB, under the 1 GiB floor
    assert real_memory_mib(2048) == math.floor(2048 * 1024 * 0.95)
    assert data()["realMemoryMargin"] == {
        "percent": 5,
        "minimumMiB": 1024,
        "source": data()["realMemoryMargin"]["source"],
    }


def test_one_placement_group_is_no_topology_either():
    """Defect 10d: one switch over every node is what topology/flat does, and slurmd warns "no switch can reach all
    nodes through its descendants" (it checks topology.yaml against its own record, which no switch lists)."""
    lay = slurm_layout(build_spec(stack_values("aws-h100"), "t"), switches=("only-pg",))
    assert lay is not None and lay.topology is None and "Topology=" not in lay.dynamic_conf("only-pg")


def test_without_placement_there_is_no_topology_and_nodes_name_no_switch():
    lay = slurm_layout(build_spec(stack_values("aws-h100", placement="none"), "t"))
    assert lay is not None and lay.topology is None and lay.topology_yaml is None
    assert "topology.yaml" not in lay.files()
    assert "Topology=" not in lay.dynamic_conf()


def test_a_cloud_with_several_placement_groups_names_one_switch_each():
    spec = build_spec(stack_values("gcp-a3mega"), "t")
    lay = slurm_layout(spec, switches=("pg-a", "pg-b"))
    assert lay is not None
    assert [s["switch"] for s in yaml.safe_load(lay.topology_yaml or "")[0]["tree"]["switches"]] == ["pg-a", "pg-b"]
    assert lay.dynamic_conf("pg-b").endswith("Topology=placement:pg-b")
    with pytest.raises(ValueError, match="pg-c"):
        lay.dynamic_conf("pg-c")


def test_partition_name_and_max_nodes_come_from_the_spec():
    spec = build_spec(stack_values("aws-h100", slurm={"partition": "h100"}, maxNodes=6), "t")
    lay = slurm_layout(spec)
    assert lay is not None
    conf = conf_lines(lay.slurm_conf + lay.nodes_conf)
    assert conf["PartitionName"].startswith("h100 Nodes=h100_nodes ")
    assert conf["Nodeset"] == "h100_nodes Feature=h100"
    assert conf["MaxNodeCount"] == "12"
    assert "Feature=h100 " in lay.dynamic_conf()


def test_home_and_state_on_shared_storage_else_exported_from_the_head():
    shared = slurm_layout(build_spec(stack_values("aws-h100"), "t"))  # the stack has storage.shared /shared
    assert shared is not None and shared.shared_path == "/shared" and not shared.home_export
    assert conf_lines(shared.slurm_conf)["StateSaveLocation"] == "/shared/slurm/state"
    values = stack_values("aws-h100")
    del values["gpu-cluster:cluster"]["storage"]["shared"]
    local = slurm_layout(build_spec(values, "t"))
    assert local is not None and local.home_export and local.export_cidr == "10.42.0.0/16"
    assert conf_lines(local.slurm_conf)["StateSaveLocation"] == "/var/spool/slurmctld"


def test_scheduler_none_has_no_slurm_layer():
    values = stack_values("aws-h100")
    values["gpu-cluster:cluster"]["scheduler"] = "none"
    assert slurm_layout(build_spec(values, "t")) is None


@pytest.mark.parametrize(
    ("cluster", "key", "text"),
    [
        ({"network": {"cidr": "10.42.0.0/16", "egress": "none"}}, "network.egress", "packages.microsoft.com"),
    ],
    ids=["egress-none"],
)
def test_what_is_not_built_is_refused_with_the_key(cluster, key, text):
    """The spec refuses it, with the other problems of the config, before any layout."""
    with pytest.raises(ConfigError) as info:
        build_spec(stack_values("aws-h100", **cluster), "t")
    assert info.value.key == f"gpu-cluster:cluster.{key}" and text in str(info.value)


def test_mig_partitions_are_the_gpu_gres():
    """gpuPartition with Slurm: each MIG instance is a GPU typed by its profile (A100 40 GB: 1g.10gb, 4 per GPU)."""
    values = {
        "gpu-cluster:cloud": "aws",
        "aws:region": "us-east-1",
        "gpu-cluster:cluster": {"gpu": "A100:8", "nodes": 1, "scheduler": "slurm", "gpuPartition": "1g.10gb"},
    }
    layout = slurm_layout(build_spec(values, "t"))
    assert layout is not None and layout.node.gres == "gpu:1g.10gb:32"
    assert "Gres=gpu:1g.10gb:32" in layout.dynamic_conf() and layout.gres_conf == "AutoDetect=nvml\n"


def test_package_facts_are_data_with_their_source():
    pkg = data()["packages"]["ubuntu-22.04"]
    assert pkg["version"] == "25.11.5"
    assert pkg["repo"].endswith("https://packages.microsoft.com/repos/slurm-ubuntu-jammy/ stable main")
    assert "slurm-smd-sackd" in pkg["login"] and "slurm-smd-slurmd" in pkg["compute"]
    assert "slurm-smd-slurmctld" in pkg["head"]
    assert "MicrosoftDocs/azure-docs" in pkg["source"]
    assert data()["mungeKeyBytes"] == 128


def test_the_placeholders_are_distinct_and_never_in_a_rendered_file_but_slurm_conf():
    lay = slurm_layout(build_spec(stack_values("azure-h100"), "t"))
    assert lay is not None
    assert HEAD_PLACEHOLDER != SLURMCTLD_HOST_TOKEN
    for name, text in lay.files().items():
        assert HEAD_PLACEHOLDER not in text
        assert (SLURMCTLD_HOST_TOKEN in text) == (name == "slurm.conf")
    assert re.search(r"^SrunPortRange=60001-63000$", lay.slurm_conf, re.M)


def test_slurm_conf_is_the_same_whatever_the_gpu_nodes_and_includes_what_they_change():
    """Issue 28: the head's slurm.conf does not change with the GPU nodes (count, maxNodes, type); nodes.conf does."""
    base = slurm_layout(build_spec(stack_values("aws-h100"), "t"))
    other = slurm_layout(build_spec(stack_values("aws-h100", gpu="A100:8", maxNodes=9, nodes=6), "t"))
    assert base is not None and other is not None
    assert base.head_files() == other.head_files() and base.nodes_conf != other.nodes_conf
    assert base.slurm_conf.endswith("\nInclude nodes.conf\n")
    assert set(conf_lines(base.nodes_conf)) == {"MaxNodeCount", "Nodeset", "PartitionName"}
    assert not {"MaxNodeCount", "Nodeset", "PartitionName"} & set(conf_lines(base.slurm_conf))
