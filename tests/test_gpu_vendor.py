"""The GPU-vendor dimension (catalog/gpus.yaml `vendors:`): AMD types get their vendor's image, no NVIDIA-only
bootstrap parts, and the gaps are named (catalog.vendor_gaps), asserted on the inputs registered with the mocks."""

from __future__ import annotations

import base64

import pytest
import yaml

from components import catalog

from .conftest import one, plan_values

KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl test@example"


def azure_values(gpu: str) -> dict:
    cluster = {"gpu": gpu, "nodes": 2, "sshPublicKey": KEY}
    return {"gpu-cluster:cloud": "azure", "azure-native:location": "eastus", "gpu-cluster:cluster": cluster}


def written_files(vmss: dict) -> dict[str, str]:
    text = base64.b64decode(vmss["inputs"]["virtualMachineProfile"]["osProfile"]["customData"]).decode()
    body = yaml.safe_load(text.removeprefix("#cloud-config\n"))
    return {f["path"]: f["content"] for f in body["write_files"]}, body["runcmd"]


def env(text: str) -> dict[str, str]:
    return {k: v.strip('"') for k, v in (line.split("=", 1) for line in text.splitlines() if line)}


@pytest.fixture(scope="module")
def mi300x():
    # named, not gpu: MI300X:8 for two nodes is refused, its InfiniBand unvouched (tests/test_fabric_resolution.py)
    values = azure_values("MI300X:8")
    values["gpu-cluster:cluster"]["instanceType"] = "Standard_ND96isr_MI300X_v5"
    return plan_values(values)


def test_every_model_has_exactly_one_vendor():
    models = set(catalog.gpu_aliases().values())
    assert set(catalog.gpu_vendors()) == models
    assert catalog.gpu_vendors()["MI300X"] == "amd" and catalog.gpu_vendors()["H100"] == "nvidia"
    assert "vendors" not in models  # the vendors key is not read as a model


def test_every_non_nvidia_row_has_a_sourced_image_for_its_vendor():
    rows = [r for r in catalog.all_types() if r.gpu_vendor != "nvidia"]
    assert [r.instanceType for r in rows] == ["Standard_ND96isr_MI300X_v5"]
    for row in rows:
        entry = catalog.vendor_image(row.cloud, row)
        assert entry is not None and entry["urn"] and entry["source"], row.instanceType


def test_a_vendor_without_an_image_gets_no_nvidia_fallback():
    row = catalog.find("azure", "Standard_ND96isr_MI300X_v5")[0].model_copy(update={"cloud": "aws"})
    entry = catalog.vendor_image("aws", row)
    assert entry is not None and entry["urn"] is None and "images.vendors" in entry["reason"]
    assert catalog.vendor_image("aws", catalog.find("aws", "p5.48xlarge")[0]) is None


def test_mi300x_boots_the_rocm_image(mi300x):
    vmss = one(mi300x, "VirtualMachineScaleSet")
    ref = vmss["inputs"]["virtualMachineProfile"]["storageProfile"]["imageReference"]
    assert (ref["publisher"], ref["offer"], ref["sku"], ref["version"]) == (
        "microsoft-dsvm",
        "ubuntu-hpc",
        "2204-rocm",
        "latest",
    )
    assert mi300x.summary()["image"] == "microsoft-dsvm:ubuntu-hpc:2204-rocm:latest"


def test_mi300x_infiniband_is_wired_to_its_rating_but_not_vouched_for(mi300x):
    summary = mi300x.summary()
    assert summary["fabric"] == "infiniband"
    assert summary["fabricGbpsPerNode"] == summary["fabricGbpsRated"] == 3200
    assert summary["fabricUsable"] is False
    assert any("RCCL over InfiniBand" in m and "placeholder" in m for m in summary["fabricMissing"])


def test_mi300x_bootstrap_has_no_nvidia_only_parts(mi300x):
    files, runcmd = written_files(one(mi300x, "VirtualMachineScaleSet"))
    health = env(files["/etc/gpu-cluster/health.env"])
    # GPU checks off (nvidia-smi would count 0 and fail every node), fabric and NVMe still checked
    assert health["EXPECTED_GPUS"] == "0" and health["DCGM_LEVEL"] == "0" and health["EXPECTED_MIG_DEVICES"] == "0"
    assert health["FABRIC_KIND"] == "infiniband" and health["EXPECTED_FABRIC_DEVICES"] == "8"
    assert health["EXPECTED_NVME"] == "8"
    assert not any("dcgm-exporter" in path or "azure-ib" in path or "nccl" in path for path in files)
    assert "/usr/local/sbin/gpu-cluster-container-runtime" not in files
    assert any("prometheus-node-exporter" in " ".join(cmd) for cmd in runcmd)
    assert not any("dcgm" in " ".join(cmd) for cmd in runcmd)


def test_an_nvidia_node_keeps_the_dcgm_exporter_and_gpu_checks():
    files, _ = written_files(one(plan_values(azure_values("H100:8")), "VirtualMachineScaleSet"))
    health = env(files["/etc/gpu-cluster/health.env"])
    assert health["EXPECTED_GPUS"] == "8" and health["GPU_MODEL"] == "H100" and health["DCGM_LEVEL"] == "1"
    assert "/etc/systemd/system/gpu-cluster-dcgm-exporter.service" in files


def test_vendor_gaps_name_what_is_not_covered():
    row = catalog.find("azure", "Standard_ND96isr_MI300X_v5")[0]
    gaps = catalog.vendor_gaps(row, health=True, metrics=True)
    assert len(gaps) == 2 and "amd-smi is not wired" in gaps[0] and "AMD device metrics exporter" in gaps[1]
    assert catalog.vendor_gaps(row, health=False, metrics=False) == []
    assert catalog.vendor_gaps(catalog.find("azure", "Standard_ND96isr_H100_v5")[0], health=True, metrics=True) == []


def test_the_plan_says_what_the_bootstrap_does_not_cover_on_amd():
    from components.spec import build_spec

    values = {"gpu-cluster:cloud": "azure", "azure-native:location": "eastus",
              "gpu-cluster:cluster": {"instanceType": "Standard_ND96isr_MI300X_v5", "nodes": 2}}  # fmt: skip
    gaps = [w for w in build_spec(values, "t").warnings if "has amd GPUs" in w]
    assert len(gaps) == 2 and all(w.startswith("gpu-cluster:cluster.instanceType: ") for w in gaps)
    values["gpu-cluster:cluster"] |= {"health": {"enabled": False}, "monitoring": {"dcgmExporter": False}}
    assert not [w for w in build_spec(values, "t").warnings if "has amd GPUs" in w]
    nvidia = {"gpu-cluster:cloud": "azure", "azure-native:location": "eastus",
              "gpu-cluster:cluster": {"instanceType": "Standard_ND96isr_H100_v5", "nodes": 2}}  # fmt: skip
    assert not [w for w in build_spec(nvidia, "t").warnings if "GPUs: " in w]
