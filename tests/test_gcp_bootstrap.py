"""GCP node bootstrap: fabric enablement per fabric kind, fabric usability, the health endpoint for MIG
autohealing, metrics reachable only from inside the cluster (rendered startup scripts and planned resources)."""

from __future__ import annotations

import ipaddress
import re
import subprocess
from typing import Any

import pytest

from components import catalog
from components.bootstrap.fabric import NCCL_ENV
from components.layout.gcp import fabric as gcp_fabric

from .conftest import plan_values, resources_of
from .test_layout_gcp import gcp_values, layout_of, typed

RULES = catalog.load("gcp").rules
METRICS_PORTS = {"9400", "9100"}


def written(script: str) -> dict[str, str]:
    return {
        m.group(1): m.group(3) for m in re.finditer(r"cat > (\S+) <<'(GPU_CLUSTER_EOF_\d+)'\n(.*?)\n\2\n", script, re.S)
    }


def env_of(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            key, _, value = line.partition("=")
            out[key] = value.strip('"')
    return out


def shellcheck(tmp_path, script: str) -> None:
    path = tmp_path / "startup.sh"
    path.write_text(script)
    proc = subprocess.run(["shellcheck", "-S", "warning", str(path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout
    subprocess.run(["bash", "-n", str(path)], check=True)


def test_a3mega_runs_the_tcpxo_enablement_and_is_usable(tmp_path):
    layout = layout_of()  # a3-megagpu-8g, managed, image auto
    script = layout.startup_script
    assert script is not None
    files = written(script)
    nccl = env_of(files[NCCL_ENV])
    assert nccl == {
        "LD_LIBRARY_PATH": "/var/lib/tcpxo/lib64",
        "NCCL_FASTRAK_LLCM_DEVICE_DIRECTORY": "/dev/aperture_devices",
    }
    data = RULES["fabricEnablement"]["gpudirect-tcpxo"]
    settings = env_of(files[gcp_fabric.FABRIC_ENV])
    assert settings["FABRIC_KIND"] == "gpudirect-tcpxo"
    assert settings["NCCL_PLUGIN_IMAGE"].endswith("nccl-plugin-gpudirecttcpx-dev:v1.0.10")
    assert settings["PACKAGES"] == "dkms dmabuf-import-helper" and settings["MODULE"] == "import-helper"
    assert settings["ENV_PROFILE"] == "/var/lib/tcpxo/lib64/nccl-env-profile.sh"
    rxdm = files["/etc/systemd/system/gpu-cluster-rxdm.service"]
    assert data["rxdmImage"] in rxdm and "--num_nics=8" in rxdm and "--num_hops=2" in rxdm
    assert 'ATTR{vendor}=="0x1ae0"' in files["/etc/udev/rules.d/00-a3-megagpu.rules"]
    assert files[gcp_fabric.FABRIC_SCRIPT].startswith("#!/bin/bash")
    # health check expects the 8 GPU NICs; the MIG probes the health endpoint
    health = env_of(files["/etc/gpu-cluster/health.env"])
    assert (health["FABRIC_KIND"], health["EXPECTED_FABRIC_DEVICES"], health["ACTION"]) == (
        "gpudirect-tcpxo",
        "8",
        "replace",
    )
    assert "/usr/local/sbin/gpu-cluster-unhealthy" in files
    assert "HEALTH_PORT=9500" in files["/etc/systemd/system/gpu-cluster-health-http.service"]
    order = [line.split()[-1] for line in script.splitlines() if line.startswith("systemctl") and "service" in line]
    assert order == [
        "gpu-cluster-scratch.service",
        "gpu-cluster-gcp-fabric.service",
        "gpu-cluster-health.service",
        "gpu-cluster-dcgm-exporter.service",
        "gpu-cluster-drain.service",  # with gpu-cluster-interruption.service
        "gpu-cluster-health-http.service",
    ]
    assert layout.fabric_usability.usable and not layout.fabric_usability.missing
    assert any("receive-datapath manager" in p for p in layout.fabric_usability.provides)
    assert not [w for w in layout.warnings if "gpudirect" in w]
    shellcheck(tmp_path, script)


@pytest.mark.parametrize(
    ("itype", "tuner"), [("a3-ultragpu-8g", "tuner_config_a3u.txtpb"), ("a4-highgpu-8g", "tuner_config.txtpb")]
)
def test_rdma_types_install_the_gib_plugin_and_its_environment(tmp_path, itype, tuner):
    layout = typed(itype)
    script = layout.startup_script
    assert script is not None
    files = written(script)
    nccl = env_of(files[NCCL_ENV])
    assert nccl["NCCL_NET"] == "gIB" and nccl["LD_LIBRARY_PATH"] == "/usr/local/gib/lib64"
    assert nccl["NCCL_TUNER_CONFIG_PATH"] == f"/usr/local/gib/configs/{tuner}"
    settings = env_of(files[gcp_fabric.FABRIC_ENV])
    assert settings["PACKAGES"] == "nccl-gib=1.1.0 ibverbs-utils" and settings["HOLD"] == "nccl-gib"
    assert "gpudirect-gib-apt" in settings["APT_REPO"]
    assert files["/etc/ld.so.conf.d/000_nccl-gib.conf"] == "/usr/local/gib/lib64"
    assert "/etc/systemd/system/gpu-cluster-rxdm.service" not in files
    health = env_of(files["/etc/gpu-cluster/health.env"])
    assert (health["FABRIC_KIND"], health["EXPECTED_FABRIC_DEVICES"]) == ("gpudirect-rdma", "8")
    assert layout.fabric_usability.usable
    shellcheck(tmp_path, script)


def test_a3high_is_wired_but_not_usable_without_a_tcpx_kernel(tmp_path):
    layout = typed("a3-highgpu-8g")
    usability = layout.fabric_usability
    assert not usability.usable and "linux-gcp-tcpx" in usability.missing[0]
    script = layout.startup_script
    assert script is not None and gcp_fabric.FABRIC_ENV not in written(script)  # nothing built on a guess
    assert NCCL_ENV not in written(script)
    assert any("gpudirect-tcpx is not usable by NCCL" in w for w in layout.warnings)
    shellcheck(tmp_path, script)


def test_every_catalog_fabric_type_has_a_verdict_on_its_default_image():
    verdicts = {}
    for row in catalog.load("gcp").types:
        if row.fabric == "none":
            continue
        verdicts[row.instanceType] = typed(row.instanceType).fabric_usability.usable
    # a4x (arm64): the gIB enablement is x86_64's; the arm64 one is named missing (test_arch)
    assert verdicts == {
        "a3-highgpu-8g": False, "a3-edgegpu-8g": False, "a3-megagpu-8g": True, "a3-ultragpu-8g": True,
        "a4-highgpu-8g": True,
        "a4x-highgpu-4g": False,
    }  # fmt: skip


def test_custom_image_is_not_vouched_for_but_the_same_family_spelled_out_is():
    custom = layout_of(image="my-project/my-tcpxo-image").fabric_usability
    assert not custom.usable and "my-project/my-tcpxo-image" in custom.missing[0]
    assert "cannot vouch" in custom.missing[0]
    family = "projects/ubuntu-os-accelerator-images/global/images/family/ubuntu-accelerator-2204-amd64-with-nvidia-570"
    assert layout_of(image=family).fabric_usability.usable
    assert any("not usable by NCCL" in w for w in layout_of(image="my-project/my-tcpxo-image").warnings)


def test_no_fabric_wired():
    dev = layout_of(instanceType="g2-standard-4", gpu="L4:1", nodes=1)
    assert dev.fabric_usability == gcp_fabric.NO_FABRIC
    script = dev.startup_script
    assert script is not None and NCCL_ENV not in written(script) and "gpu-cluster-health.service" in script
    unwired = layout_of(fabric="none", nodes=1)
    assert unwired.fabric_usability.missing == ("no fabric wired",)


def test_placement_applied():
    assert layout_of().placement_applied == "cluster"
    assert layout_of(placement="none").placement_applied == "none"
    # a MIG's workload policy takes no count: one node keeps it (docs/day2.md "Placement at one node")
    assert layout_of(nodes=1, fabric="none").placement_applied == "cluster"


# --- health: MIG autohealing ------------------------------------------------------------------


def test_managed_groups_autoheal_on_the_health_endpoint():
    plan = plan_values(gcp_values())
    (hc,) = resources_of(plan, "compute/healthCheck:HealthCheck")
    probe = RULES["healthCheck"]
    assert hc["inputs"]["httpHealthCheck"] == {"port": probe["port"], "requestPath": "/health"}
    assert (hc["inputs"]["checkIntervalSec"], hc["inputs"]["unhealthyThreshold"]) == (30, 3)
    (mig,) = resources_of(plan, "compute/instanceGroupManager:InstanceGroupManager")
    assert mig["inputs"]["autoHealingPolicies"] == {"healthCheck": f"<id of {hc['name']}>", "initialDelaySec": 1200}
    rule = {r["name"]: r["inputs"] for r in resources_of(plan, "compute/firewall:Firewall")}["test-gcp-health-check"]
    assert rule["sourceRanges"] == ["130.211.0.0/22", "35.191.0.0/16"]
    assert rule["allows"] == [{"protocol": "tcp", "ports": [str(probe["port"])]}]
    assert 0 < probe["initialDelaySec"] <= 3600  # the API's range


@pytest.mark.parametrize(
    ("cluster", "probe", "warned"),
    [
        ({"health": {"action": "report"}}, False, False),
        ({"health": {"enabled": False}}, False, False),
        ({"nodeGroup": "instances"}, False, False),  # instances: report by default
        ({"nodeGroup": "instances", "health": {"action": "replace"}}, False, True),
    ],
)
def test_no_autohealing_without_a_managed_group_and_replace(cluster: dict[str, Any], probe: bool, warned: bool):
    layout = layout_of(**cluster)
    assert (layout.health_probe is not None) is probe
    assert any("health.action" in w for w in layout.warnings) is warned
    plan = plan_values(gcp_values(**cluster))
    assert not resources_of(plan, "compute/healthCheck:HealthCheck")
    assert "test-gcp-health-check" not in {r["name"] for r in resources_of(plan, "compute/firewall:Firewall")}
    script = layout.startup_script or ""
    files = written(script) if script else {}
    assert "/etc/systemd/system/gpu-cluster-health-http.service" not in files
    assert "/usr/local/sbin/gpu-cluster-unhealthy" not in files


# --- metrics ----------------------------------------------------------------------------------


def _inside(ranges: list[str], cluster: list[str]) -> bool:
    nets = [ipaddress.ip_network(c) for c in cluster]
    return all(any(ipaddress.ip_network(r).subnet_of(n) for n in nets) for r in ranges)  # type: ignore[arg-type]


@pytest.mark.parametrize("stack", ["gcp-a3mega", "gcp-h100", "gcp-dev"])
def test_no_rule_admits_the_metrics_ports_from_outside_the_vpc(stack_plan, stack):
    plan = stack_plan(stack)
    subnets = [r["inputs"]["ipCidrRange"] for r in resources_of(plan, "compute/subnetwork:Subnetwork")]
    for rule in resources_of(plan, "compute/firewall:Firewall"):
        inputs = rule["inputs"]
        if inputs.get("direction", "INGRESS") != "INGRESS":
            continue
        opens = any(
            a["protocol"] == "all"
            or (a["protocol"] == "tcp" and (not a.get("ports") or METRICS_PORTS & set(a["ports"])))
            for a in inputs["allows"]
        )
        if opens:
            assert _inside(inputs["sourceRanges"], subnets), rule["name"]
    metrics = plan.run.outputs["metrics"]
    assert [e["port"] for e in metrics["endpoints"]] == [9400, 9100]
    assert "networkInterfaces[0].networkIP" in metrics["scrape"] and ":9400/metrics" in metrics["scrape"]


def test_metrics_off():
    plan = plan_values(gcp_values(monitoring={"dcgmExporter": False}))
    assert plan.run.outputs["metrics"]["endpoints"] == []
