"""The CPU-architecture dimension (catalog row `arch`, `images.arch`): the GB200 (Grace, arm64) types of AWS, Azure
and GCP boot their architecture's image or are refused, never an x86_64 image; their node bootstrap has no
x86_64-only download; what cannot run on arm64 is refused with the key to change, asserted on the inputs registered
with the mocks."""

from __future__ import annotations

import base64
import gzip
import json
import re
from typing import Any

import pytest
import yaml

from components import catalog
from components.bootstrap.slurm_conf import packages
from components.errors import ConfigError

from .conftest import aws_values, gcp_values, one, plan_values, spec_of

KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl test@example"
GB200 = {"aws": "p6e-gb200.36xlarge", "azure": "Standard_ND128isr_NDR_GB200_v6", "gcp": "a4x-highgpu-4g"}
GALLERY = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg/providers/Microsoft.Compute/galleries/g/images/gb200/versions/1.0.0"  # noqa: E501
BLOCK = {"reservation": "cr-0123456789abcdef0", "reservationType": "capacity-block"}


def azure_values(**cluster: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"gpu": "GB200:4", "nodes": 2, "sshPublicKey": KEY, **cluster}
    return {"gpu-cluster:cloud": "azure", "azure-native:location": "eastus", "gpu-cluster:cluster": base}


def refusal(values: dict[str, Any]) -> list[tuple[str, str]]:
    """The plan's refusal, one (key, message) per line (the program's rejection arrives as "key: message" lines)."""
    with pytest.raises(ConfigError) as info:
        plan_values(values)
    errors = getattr(info.value, "errors", None) or [info.value]
    lines = [f"{e.key}: {e.message}" if e.key else e.message for e in errors]
    return [(key, message) for key, _, message in (line.partition(": ") for line in lines)]


def cloud_config(text: str) -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load(text.removeprefix("#cloud-config\n"))
    return doc


def written_cloud_config(doc: dict[str, Any]) -> dict[str, str]:
    return {f["path"]: f["content"] for f in doc["write_files"]}


def gcp_written(script: str) -> dict[str, str]:
    pattern = r"cat > (\S+) <<'(GPU_CLUSTER_EOF_\d+)'\n(.*?)\n\2\n"
    return {m.group(1): m.group(3) for m in re.finditer(pattern, script, re.S)}


def env(text: str) -> dict[str, str]:
    return {k: v.strip('"') for k, v in (line.split("=", 1) for line in text.splitlines() if "=" in line)}


@pytest.fixture(scope="module")
def aws_plan():
    return plan_values(aws_values(gpu="GB200:4", fabric="none", **BLOCK))


@pytest.fixture(scope="module")
def gcp_plan():
    return plan_values(gcp_values(gpu="GB200:4", reservation="a4x-block", zone="us-central1-a"))


@pytest.fixture(scope="module")
def azure_plan():
    return plan_values(azure_values(image=GALLERY))


# --- catalog ---------------------------------------------------------------------------------------------------


def test_every_row_has_an_arch_and_the_arm64_rows_are_the_gb200_types():
    rows = catalog.all_types()
    assert {r.arch for r in rows} == {"x86_64", "arm64"}
    assert {r.cloud: r.instanceType for r in rows if r.arch == "arm64"} == GB200
    assert all(r.gpu == "GB200" and r.gpus == 4 for r in rows if r.arch == "arm64")
    assert catalog.find("aws", "p5.48xlarge")[0].arch == "x86_64"  # the default


def test_arch_is_validated_and_not_a_public_key():
    row = catalog.find("gcp", "a4x-highgpu-4g")[0]
    with pytest.raises(ValueError):
        catalog.InstanceType(**{**row.model_dump(), "arch": "aarch64"})
    assert "arch" not in catalog.PUBLIC_KEYS and "arch" not in row.public_row()


def test_every_arm64_row_has_a_sourced_image_entry_or_a_reason():
    for cloud, itype in GB200.items():
        entry = catalog.arch_image(cloud, catalog.find(cloud, itype)[0])
        assert entry is not None and entry["source"], cloud
        image = {"aws": "ssmParameter", "azure": "urn", "gcp": "family"}[cloud]
        assert entry[image] or entry["reason"], cloud
        assert "x86_64" not in str(entry.get(image)) and "amd64" not in str(entry.get(image)), cloud


def test_x86_rows_get_no_arch_entry_and_an_arch_without_data_gets_a_reason():
    assert catalog.arch_image("aws", catalog.find("aws", "p5.48xlarge")[0]) is None
    row = catalog.find("gcp", "a4x-highgpu-4g")[0].model_copy(update={"cloud": "alicloud"})
    entry = catalog.arch_image("alicloud", row)
    assert entry == {"reason": "catalog/alicloud.yaml has no arm64 image (images.arch)"}


def test_repository_lines_limited_to_some_architectures():
    arm = catalog.find("aws", "p6e-gb200.36xlarge")[0]
    x86 = catalog.find("aws", "p5.48xlarge")[0]
    assert catalog.arch_unsupported(arm, packages().repo) and not catalog.arch_unsupported(x86, packages().repo)
    assert not catalog.arch_unsupported(arm, "deb [arch=amd64,arm64 signed-by=/k.gpg] https://example/ stable main")
    assert not catalog.arch_unsupported(arm, "deb https://example/ stable main")  # no arch option: apt picks


def test_arch_gaps_name_the_lustre_client_on_arm64_only():
    arm, x86 = catalog.find("gcp", "a4x-highgpu-4g")[0], catalog.find("gcp", "a4-highgpu-8g")[0]
    (gap,) = catalog.arch_gaps(arm, lustre=True)
    assert gap.startswith("a4x-highgpu-4g is arm64: storage.shared lustre") and "catalog/storage/gcp.yaml" in gap
    assert catalog.arch_gaps(arm, lustre=False) == [] and catalog.arch_gaps(x86, lustre=True) == []


def test_the_gb200_model_is_nvidia_and_matches_the_driver_name():
    assert catalog.normalize_gpu("nvidia-gb200") == "GB200" and catalog.normalize_gpu("b200") == "B200"
    assert catalog.gpu_vendors()["GB200"] == "nvidia"


# --- AWS: the arm64 DLAMI, bought through a Capacity Block ---------------------------------------------------


def test_aws_gb200_boots_the_arm64_dlami_in_its_capacity_block(aws_plan):
    lt = one(aws_plan, "launchTemplate:LaunchTemplate")["inputs"]
    assert lt["instanceType"] == "p6e-gb200.36xlarge"
    dlami = "Deep Learning ARM64 Base OSS Nvidia Driver GPU AMI (Ubuntu 22.04) 20260915"  # the pinned arm64 release
    assert lt["imageId"] == f"<resolved at deploy: ami {dlami} of 898082745236>"
    assert lt["instanceMarketOptions"] == {"marketType": "capacity-block"}
    assert (
        lt["capacityReservationSpecification"]["capacityReservationTarget"]["capacityReservationId"]
        == BLOCK["reservation"]
    )
    assert [n["interfaceType"] for n in lt["networkInterfaces"]] == ["interface"]  # fabric none: no EFA claimed
    assert aws_plan.summary()["fabricGbpsRated"] == 0


def test_aws_gb200_without_a_capacity_block_is_refused():
    ((key, message),) = refusal(aws_values(gpu="GB200:4", fabric="none"))
    assert key == "gpu-cluster:cluster.reservationType"
    assert "only through EC2 Capacity Blocks" in message and "reservationType: capacity-block" in message
    ((key, message),) = refusal(
        aws_values(gpu="GB200:4", fabric="none", reservation="cr-0123456789abcdef0")
    )  # an ODCR is not one
    assert key == "gpu-cluster:cluster.reservationType"


def test_aws_gb200_user_data_has_no_x86_only_download(aws_plan):
    text = gzip.decompress(base64.b64decode(one(aws_plan, "LaunchTemplate")["inputs"]["userData"])).decode()
    files = written_cloud_config(cloud_config(text))
    health = env(files["/etc/gpu-cluster/health.env"])
    assert health["EXPECTED_GPUS"] == "4" and health["GPU_MODEL"] == "GB200"
    # the DCGM exporter image is multi-arch (NVIDIA/dcgm-exporter builds linux/amd64 and linux/arm64)
    assert "/etc/systemd/system/gpu-cluster-dcgm-exporter.service" in files
    assert not re.search(r"x86_64|amd64|linux-x64", text)


# --- Azure: no published arm64 image, so auto is refused; a gallery image plans --------------------------------


def test_azure_gb200_image_auto_is_refused_never_the_x86_image():
    ((key, message),) = refusal(azure_values(nodes=1))  # 2 nodes: refused first for the fabric (no usable IB)
    assert key == "gpu-cluster:cluster.image"
    assert message.startswith("auto has no image for Standard_ND128isr_NDR_GB200_v6: Microsoft publishes no ")
    assert "Shared Image Gallery" in message


def test_azure_gb200_with_a_gallery_image_wires_ib_but_does_not_vouch_for_nccl(azure_plan):
    vmss = one(azure_plan, "VirtualMachineScaleSet")["inputs"]
    assert vmss["sku"]["name"] == "Standard_ND128isr_NDR_GB200_v6"
    assert vmss["virtualMachineProfile"]["storageProfile"]["imageReference"] == {"id": GALLERY}
    summary = azure_plan.summary()
    assert summary["fabricGbpsPerNode"] == summary["fabricGbpsRated"] == 1600
    assert summary["fabricUsable"] is False and "arm64 gallery image" in summary["fabricMissing"][0]
    text = base64.b64decode(vmss["virtualMachineProfile"]["osProfile"]["customData"]).decode()
    files = written_cloud_config(cloud_config(text))
    assert not any("azure-ib" in path or "nccl" in path for path in files)  # the x86 image's IB parts stay out
    assert env(files["/etc/gpu-cluster/health.env"])["EXPECTED_FABRIC_DEVICES"] == "4"
    assert not re.search(r"x86_64|amd64", text)


# --- GCP: the arm64 accelerator image, reservation-bound only, RDMA NICs wired, gIB not vouched --------------------


def test_gcp_a4x_boots_the_arm64_accelerator_image_reservation_bound(gcp_plan):
    tpl = one(gcp_plan, "InstanceTemplate")["inputs"]
    assert tpl["machineType"] == "a4x-highgpu-4g"
    assert tpl["disks"][0]["sourceImage"] == (  # the family's pinned release, not the family
        "projects/ubuntu-os-accelerator-images/global/images/ubuntu-accelerator-2404-arm64-with-nvidia-580-v20260218"
    )
    assert tpl["disks"][0]["diskType"] == "hyperdisk-balanced"
    assert tpl["scheduling"]["provisioningModel"] == "RESERVATION_BOUND"
    assert tpl["reservationAffinity"]["specificReservation"]["values"] == ["a4x-block"]


def test_gcp_a4x_wires_four_mrdma_nics_and_two_gvnics_to_its_rating(gcp_plan):
    nics = one(gcp_plan, "InstanceTemplate")["inputs"]["networkInterfaces"]
    assert [n["nicType"] for n in nics] == ["GVNIC", "GVNIC", "MRDMA", "MRDMA", "MRDMA", "MRDMA"]
    summary = gcp_plan.summary()
    assert summary["fabricGbpsPerNode"] == summary["fabricGbpsRated"] == 1600
    assert summary["fabricUsable"] is False and "the arm64 gIB stack" in summary["fabricMissing"][0]


def test_gcp_a4x_startup_script_installs_no_x86_gib_package(gcp_plan):
    script = one(gcp_plan, "InstanceTemplate")["inputs"]["metadata"]["startup-script"]
    files = gcp_written(script)
    assert "/etc/gpu-cluster/gcp-fabric.env" not in files  # nccl-gib=1.1.0 is the x86_64 blueprints' pin
    assert env(files["/etc/gpu-cluster/health.env"])["GPU_MODEL"] == "GB200"
    assert not re.search(r"x86_64|amd64", script)


def test_gcp_a4x_is_reservation_bound_only():
    ((key, message),) = refusal(gcp_values(gpu="GB200:4", zone="us-central1-a"))
    assert (key, message) == (
        "gpu-cluster:cluster.instanceType",
        "a4x-highgpu-4g is not sold on demand; set reservation (reservation-bound)",
    )
    ((key, message),) = refusal(gcp_values(gpu="GB200:4", zone="us-central1-a", spot=True))
    assert key == "gpu-cluster:cluster.spot" and "is not sold as spot (reservation-bound only" in message


def test_x86_types_keep_the_x86_messages_and_images():
    ((_, message),) = refusal(gcp_values(gpu="B200:8", instanceType="a4-highgpu-8g", zone="us-central1-b"))
    assert message.endswith(", spot: true, or gcp.flexStart: true with nodeGroup: instances")
    spec = spec_of(aws_values())
    from components.layout import aws as aws_layout

    assert "ARM64" not in aws_layout.plan(spec).image.ami_name  # the pinned x86_64 DLAMI release
    assert "/x86_64/" in aws_layout.plan(spec_of(aws_values(image="latest"))).image.ssm_parameter


# --- schedulers whose packages or pools are x86_64 only ------------------------------------------------------------


@pytest.mark.parametrize(
    ("cloud", "values"),
    [
        ("aws", aws_values(gpu="GB200:4", fabric="none", scheduler="slurm", **BLOCK)),
        ("gcp", gcp_values(gpu="GB200:4", reservation="a4x-block", zone="us-central1-a", scheduler="slurm")),
        ("azure", azure_values(image=GALLERY, scheduler="slurm")),
    ],
)
def test_slurm_on_arm64_is_refused_from_the_repository_line(cloud, values):
    ((key, message),) = refusal(values)
    assert key == "gpu-cluster:cluster.scheduler"
    assert message == (
        f"slurm with {GB200[cloud]} (arm64): the Slurm packages gpu-cluster installs come from a repository built "
        "for amd64 only (catalog/slurm.yaml packages.repo); use scheduler: none"
    )


def test_kubernetes_on_arm64_is_refused():
    values = gcp_values(gpu="GB200:4", reservation="a4x-block", zone="us-central1-a", scheduler="kubernetes")
    ((key, message),) = refusal(values)
    assert key == "gpu-cluster:cluster.scheduler" and message.startswith("kubernetes with a4x-highgpu-4g (arm64): ")


def test_the_plan_json_names_the_arm64_image(gcp_plan):
    assert "arm64" in json.dumps(gcp_plan.summary()["image"])


@pytest.mark.parametrize(("kind", "warned"), [("lustre", True), ("nfs", False)])
def test_the_plan_warns_of_the_lustre_client_on_arm64_only(kind, warned):
    values = aws_values(gpu="GB200:4", fabric="none", **BLOCK, storage={"shared": {"kind": kind, "path": "/shared"}})
    found = [f for f in spec_of(values).findings if f.key == "gpu-cluster:cluster.storage.shared"]
    assert [f.message.startswith("p6e-gb200.36xlarge is arm64: storage.shared lustre") for f in found] == (
        [True] if warned else []
    )
    assert all(f.level == "warning" for f in found)
    x86 = aws_values(gpu="H100:8", storage={"shared": {"kind": "lustre", "path": "/shared"}})
    assert not [f for f in spec_of(x86).findings if "arm64" in f.message]
