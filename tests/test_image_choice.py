"""Images and architecture (issue 26, defect 6): an arm64 login node or Slurm head boots its architecture's image or is
refused; an explicit image whose reference names the other architecture is refused; `storage.rootGb` below the root
of the image `image: auto` boots is refused, from the catalog's sourced `minRootGb` (unsourced: null, not checked).
Asserted on the inputs registered with the mocks, the layouts, and the spec's refusals."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from components import catalog
from components.contract import contract
from components.errors import ConfigError

from .conftest import aws_values, gcp_values, one, plan_values, resources_of, spec_of

KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl test@example"
ARM_DLAMI = "ssm:/aws/service/deeplearning/ami/arm64/base-oss-nvidia-driver-gpu-ubuntu-22.04/latest/ami-id"
X86_DLAMI = "ssm:/aws/service/deeplearning/ami/x86_64/base-oss-nvidia-driver-gpu-ubuntu-22.04/latest/ami-id"
BLOCK = {"reservation": "cr-0123456789abcdef0", "reservationType": "capacity-block"}


def errors_of(values: dict[str, Any]) -> dict[str, str]:
    with pytest.raises(ConfigError) as info:
        spec_of(values)
    found = getattr(info.value, "errors", None) or [info.value]
    return {e.key: e.message for e in found}


def layout_errors(values: dict[str, Any]) -> dict[str, str]:
    spec = spec_of(values)
    with pytest.raises(ConfigError) as info:
        contract(spec.cloud).plan(spec)
    found = getattr(info.value, "errors", None) or [info.value]
    return {e.key: e.message for e in found}


def alicloud_values(**cluster: Any) -> dict[str, Any]:
    base = {"instanceType": "ecs.gn8is-8x.32xlarge", "nodes": 1, "zone": "cn-hangzhou-k", **cluster}
    return {"gpu-cluster:cloud": "alicloud", "alicloud:region": "cn-hangzhou", "gpu-cluster:cluster": base}


def azure_values(**cluster: Any) -> dict[str, Any]:
    base = {"gpu": "H100:8", "nodes": 1, "sshPublicKey": KEY, **cluster}
    return {"gpu-cluster:cloud": "azure", "azure-native:location": "eastus", "gpu-cluster:cluster": base}


# --- the architecture of a CPU type and of an image reference (pure) ---------------------------------------------


@pytest.mark.parametrize(
    ("cloud", "instance_type", "arch"),
    [
        ("aws", "m7g.large", "arm64"), ("aws", "c7gn.xlarge", "arm64"), ("aws", "t4g.micro", "arm64"),
        ("aws", "a1.large", "arm64"), ("aws", "is4gen.large", "arm64"), ("aws", "m8gb.large", "arm64"),
        ("aws", "m7i.large", "x86_64"), ("aws", "c6a.large", "x86_64"), ("aws", "g6e.xlarge", "x86_64"),
        ("aws", "gr6.4xlarge", "x86_64"), ("aws", "u7i-12tb.224xlarge", "x86_64"),
        ("aws", "p6e-gb200.36xlarge", "arm64"),
        ("azure", "Standard_D2ps_v5", "arm64"), ("azure", "Standard_E4pds_v5", "arm64"),
        ("azure", "Standard_D2s_v5", "x86_64"), ("azure", "Standard_NP10s", "x86_64"),
        ("azure", "Standard_HB176-24rs_v4", "x86_64"),
        ("gcp", "t2a-standard-2", "arm64"), ("gcp", "c4a-standard-4", "arm64"), ("gcp", "n4a-standard-2", "arm64"),
        ("gcp", "e2-standard-2", "x86_64"), ("gcp", "n2-standard-4", "x86_64"),
        ("alicloud", "ecs.g8y.large", "arm64"), ("alicloud", "ecs.c8y.2xlarge", "arm64"),
        ("alicloud", "ecs.g7.large", "x86_64"),
        ("tencentcloud", "S5.MEDIUM4", "x86_64"),  # no Arm family is sourced for Tencent: never arm64
    ],
)  # fmt: skip
def test_cpu_arch(cloud, instance_type, arch):
    assert catalog.cpu_arch(cloud, instance_type) == arch


def test_every_login_default_type_is_x86_64():
    for cloud in catalog.CLOUDS:
        from components.catalog.capabilities import capabilities

        assert catalog.cpu_arch(cloud, capabilities(cloud).login_default_type) == "x86_64"


@pytest.mark.parametrize(
    ("reference", "arch"),
    [
        (X86_DLAMI, "x86_64"), (ARM_DLAMI, "arm64"),
        ("ssm:/aws/service/canonical/ubuntu/server/22.04/stable/current/amd64/hvm/ebs-gp2/ami-id", "x86_64"),
        ("projects/ubuntu-os-cloud/global/images/family/ubuntu-2204-lts-arm64", "arm64"),
        ("projects/ubuntu-os-accelerator-images/global/images/family/ubuntu-accelerator-2204-amd64-with-nvidia-570",
         "x86_64"),
        ("ubuntu_22_04_x64_20G_alibase_20240926.vhd", "x86_64"),
        ("ubuntu_22_04_arm64_20G_alibase_20251126.vhd", "arm64"),
        ("ami-0123456789abcdef0", None), ("microsoft-dsvm:ubuntu-hpc:2204:latest", None),
        ("projects/p/global/images/family/ubuntu-2204-lts", None), ("img-9qrfy1xt", None),
        ("projects/p/global/images/x86_64-and-arm64", None),  # names both: no answer
        ("projects/p/global/images/family/farm64x", None),  # not a whole word
    ],
)  # fmt: skip
def test_image_arch(reference, arch):
    assert catalog.image_arch(reference) == arch


# --- an arm64 login node or Slurm head ------------------------------------------------------------------------


def test_aws_arm64_login_node_boots_the_arm64_ubuntu_ami():
    plan = plan_values(aws_values(login={"instanceType": "m7g.large"}))
    login = next(r for r in resources_of(plan, "ec2/instance:Instance") if r["name"].endswith("-login"))
    assert login["inputs"]["instanceType"] == "m7g.large"
    assert "/ubuntu/server/22.04/stable/current/arm64/hvm/ebs-gp2/ami-id" in login["inputs"]["ami"]
    x86 = plan_values(aws_values(login={}))
    login = next(r for r in resources_of(x86, "ec2/instance:Instance") if r["name"].endswith("-login"))
    assert "/current/amd64/" in login["inputs"]["ami"]  # the default type keeps the amd64 AMI


def test_gcp_arm64_login_node_boots_the_arm64_ubuntu_family():
    spec = spec_of(gcp_values(login={"instanceType": "t2a-standard-2"}))
    login = contract("gcp").plan(spec).access.login
    assert login is not None
    assert login.image == "projects/ubuntu-os-cloud/global/images/family/ubuntu-2204-lts-arm64"
    default = contract("gcp").plan(spec_of(gcp_values(login={}))).access.login
    assert default is not None and default.image.endswith("/family/ubuntu-2204-lts")


def test_alicloud_arm64_login_node_boots_the_arm64_ubuntu_image():
    arm = contract("alicloud").plan(spec_of(alicloud_values(login={"instanceType": "ecs.g8y.large"})))
    assert arm.login is not None and arm.login.image_name_regex == "^ubuntu_22_04_arm64_20G_alibase_"
    x86 = contract("alicloud").plan(spec_of(alicloud_values(login={})))
    assert x86.login is not None and x86.login.image_name_regex == "^ubuntu_22_04_x64_20G_alibase_"


@pytest.mark.parametrize(
    ("values", "key"),
    [
        (aws_values(scheduler="slurm", slurm={"headInstanceType": "m7g.large"}), "slurm.headInstanceType"),
        (aws_values(scheduler="slurm", login={"instanceType": "c7g.large"}), "login.instanceType"),
        (gcp_values(scheduler="slurm", slurm={"headInstanceType": "t2a-standard-2"}), "slurm.headInstanceType"),
        (alicloud_values(scheduler="slurm", slurm={"headInstanceType": "ecs.g8y.large"}), "slurm.headInstanceType"),
    ],
)
def test_an_arm64_slurm_head_or_login_is_refused_from_the_repository_line(values, key):
    errors = layout_errors(values)
    message = errors[f"gpu-cluster:cluster.{key}"]
    assert "is arm64: the Slurm packages gpu-cluster installs come from a repository built for amd64 only" in message


def test_azure_login_and_head_must_match_the_cluster_image():
    # the login VM boots the cluster's HPC image (x86_64): an Arm size cannot
    errors = layout_errors(azure_values(login={"instanceType": "Standard_D2ps_v5"}))
    assert (
        "Standard_D2ps_v5 is arm64, but it boots the cluster's image, which is x86_64"
        in (errors["gpu-cluster:cluster.login.instanceType"])
    )
    spec_of(azure_values(login={"instanceType": "Standard_D4s_v5"}))  # x86_64: fine


# --- an explicit image naming the other architecture ------------------------------------------------------------


def test_an_arm64_ssm_path_on_an_x86_type_is_refused():
    message = errors_of(aws_values(image=ARM_DLAMI))["gpu-cluster:cluster.image"]
    assert message == (
        f"{ARM_DLAMI} names an arm64 image, but p5.48xlarge is x86_64; allowed: auto (the x86_64 image) or an image "
        "built for x86_64"
    )


def test_an_x86_64_ssm_path_on_gb200_is_refused():
    values = aws_values(gpu="GB200:4", nodes=1, image=X86_DLAMI, **BLOCK)
    message = errors_of(values)["gpu-cluster:cluster.image"]
    assert "names an x86_64 image, but p6e-gb200.36xlarge is arm64" in message
    spec_of(aws_values(gpu="GB200:4", nodes=1, image=ARM_DLAMI, **BLOCK))  # its own architecture: fine


def test_a_gcp_family_naming_arm64_on_an_x86_type_is_refused():
    family = "projects/ubuntu-os-accelerator-images/global/images/family/ubuntu-accelerator-2404-arm64-with-nvidia-580"
    assert "names an arm64 image" in errors_of(gcp_values(image=family))["gpu-cluster:cluster.image"]


def test_an_image_naming_no_architecture_is_not_judged():
    spec_of(aws_values(image="ami-0123456789abcdef0"))
    spec_of(aws_values(image="ssm:/my/team/gpu-ami"))


# --- storage.rootGb against the image's root ---------------------------------------------------------------------


def test_aws_root_below_the_dlami_snapshot_is_refused():
    message = errors_of(aws_values(storage={"rootGb": 40}))["gpu-cluster:cluster.storage.rootGb"]
    assert message.startswith("40 GB, but p5.48xlarge boots /aws/service/deeplearning/ami/x86_64/")
    assert message.endswith("whose root is 75 GB (catalog/aws.yaml minRootGb), and aws refuses a smaller root disk; "
                            "allowed: 75 or more")  # fmt: skip


def test_aws_root_at_the_dlami_snapshot_registers_that_volume():
    plan = plan_values(aws_values(storage={"rootGb": 75}))
    lt = one(plan, "ec2/launchTemplate:LaunchTemplate")["inputs"]
    assert lt["blockDeviceMappings"][0]["ebs"]["volumeSize"] == 75


def test_an_explicit_image_of_unknown_size_is_not_refused():
    spec_of(aws_values(image="ami-0123456789abcdef0", storage={"rootGb": 40}))


def test_azure_root_below_the_hpc_image_is_refused():
    message = errors_of(azure_values(storage={"rootGb": 40}))["gpu-cluster:cluster.storage.rootGb"]
    assert "boots microsoft-dsvm:ubuntu-hpc:2204:latest, whose root is 64 GB" in message


def test_an_unsourced_size_is_not_checked():
    assert catalog.min_root_gb(catalog.gpu_image("gcp", catalog.find("gcp", "a3-megagpu-8g")[0])) is None
    spec_of(gcp_values(storage={"rootGb": 30}))


def _image_entries() -> Iterator[tuple[str, str, dict[str, Any]]]:
    image_keys = ("ssmParameter", "urn", "family", "nameRegex", "osName")
    for cloud in catalog.CLOUDS:
        images = catalog.load(cloud).images
        stack: list[tuple[str, Any]] = [(k, v) for k, v in images.items()]
        while stack:
            path, value = stack.pop()
            if not isinstance(value, dict):
                continue
            if any(value.get(k) for k in image_keys):
                yield cloud, path, value
            stack.extend((f"{path}.{k}", v) for k, v in value.items() if isinstance(v, dict))


IMAGES = list(_image_entries())


@pytest.mark.parametrize(("cloud", "path", "entry"), IMAGES, ids=[f"{c}-{p}" for c, p, _ in IMAGES])
def test_every_image_says_its_minimum_root_with_a_source(cloud, path, entry):
    assert "minRootGb" in entry, f"catalog/{cloud}.yaml images.{path}: minRootGb (null when not sourced)"
    assert entry["minRootGb"] is None or (isinstance(entry["minRootGb"], int) and entry["minRootGb"] > 0)
    source = str(entry.get("minRootGbSource") or "")
    assert source, f"catalog/{cloud}.yaml images.{path}: minRootGbSource"
    assert (entry["minRootGb"] is None) == source.startswith("not sourced"), source


def test_the_default_dlami_root_is_75_gb():
    assert catalog.min_root_gb(catalog.load("aws").images["default"]) == 75


def test_an_arm64_eks_system_pool_gets_the_arm_ami_type():
    # EKS refuses an x86_64 amiType on a Graviton type (botocore eks AMITypes: AL2023_ARM_64_STANDARD)
    plan = plan_values(aws_values(scheduler="kubernetes", kubernetes={"systemInstanceType": "m7g.large"}))
    pools = {
        r["inputs"]["instanceTypes"][0]: r["inputs"]["amiType"] for r in resources_of(plan, "eks/nodeGroup:NodeGroup")
    }
    assert pools["m7g.large"] == "AL2023_ARM_64_STANDARD" and pools["p5.48xlarge"] == "AL2023_x86_64_NVIDIA"
