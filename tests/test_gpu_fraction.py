"""vGPU slices (issue 32): `gpu: MODEL:1/N` parsed and resolved against the catalog's gpuFraction rows, what a slice
cannot do refused with its key, the price per GPU-hour counting the fraction, recommend offering a slice where the
model fits, the Azure partial sizes booting Ubuntu with the GRID driver (the boot script against stubs), and the
shipped slice stack's registered inputs."""

from __future__ import annotations

import base64
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from components import catalog
from components import recommend as rec
from components.bootstrap.grid_driver import grid_driver_part
from components.errors import ConfigError
from components.plan.render import cost_text, gpus_text
from components.spec import build_spec
from components.spec.rules.instance import parse_gpu, parse_gpu_request

from .conftest import aws_values, gcp_values, plan_json, plan_values, resources_of, spec_of
from .hook_helpers import assert_shellcheck_clean, run_hook, stub_bin
from .test_azure_resources import azure_values

SCRIPT = Path(__file__).resolve().parent.parent / "components" / "bootstrap" / "grid_driver.sh"
SLICES = [r for r in catalog.all_types() if r.gpuFraction]
AZURE_GRID = catalog.gpu_image("azure", catalog.find("azure", "Standard_NV6ads_A10_v5")[0])["gridDriver"]


# --- parsing ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("L4:1/8", ("L4", 1, "1/8")),
        (" l4 : 1 / 8 ", ("L4", 1, "1/8")),
        ("nvidia-a10:1/6", ("A10", 1, "1/6")),
        ("H100:8", ("H100", 8, None)),
        ("a100-80gb", ("A100-80GB", 1, None)),
    ],
)
def test_a_slice_parses_beside_the_whole_gpu_forms(text, parsed):
    assert parse_gpu_request(text) == parsed


@pytest.mark.parametrize("text", ["L4:3/8", "L4:1/1", "L4:1/0", "L4:/8", "L4:1/", "L4:1/8/2"])
def test_a_fraction_that_is_not_one_over_n_is_refused_with_the_form(text):
    with pytest.raises(ValueError, match=r"MODEL:1/N|1/N with N of 2 or more"):
        parse_gpu_request(text)


@given(st.integers(min_value=2, max_value=99))
def test_every_unit_fraction_parses_to_one_virtual_gpu(n):
    assert parse_gpu_request(f"L4:1/{n}") == ("L4", 1, f"1/{n}")
    assert parse_gpu(f"L4:1/{n}") == ("L4", 1)  # the old two-value form: a slice is one virtual GPU


# --- the rows ---------------------------------------------------------------------------------------------------------


def test_the_slices_the_clouds_document_are_rows_with_their_memory():
    # AWS: g6f L4-3Q/-6Q/-12Q (KARP-DRA-G6F), Azure: 1/6 4 GB, 1/3 8 GB, 1/2 12 GB (AZ-NVA10), Alibaba vgn7i-vws
    # 'NVIDIA A10 * 1/6', '24GB * 1/6' (ALI-GPU-ZH)
    got = {(r.cloud, r.instanceType): (r.gpu, r.gpuFraction, r.gpuMemoryGiB) for r in SLICES}
    assert got == {
        ("aws", "g6f.large"): ("L4", "1/8", 3),
        ("aws", "g6f.xlarge"): ("L4", "1/8", 3),
        ("aws", "g6f.2xlarge"): ("L4", "1/4", 6),
        ("aws", "g6f.4xlarge"): ("L4", "1/2", 12),
        ("aws", "gr6f.4xlarge"): ("L4", "1/2", 12),
        ("azure", "Standard_NV6ads_A10_v5"): ("A10", "1/6", 4),
        ("azure", "Standard_NV12ads_A10_v5"): ("A10", "1/3", 8),
        ("azure", "Standard_NV18ads_A10_v5"): ("A10", "1/2", 12),
        ("alicloud", "ecs.vgn7i-vws-m4.xlarge"): ("A10", "1/6", 4),
        ("alicloud", "ecs.vgn7i-vws-m8.2xlarge"): ("A10", "1/3", 8),
        ("alicloud", "ecs.vgn7i-vws-m12.3xlarge"): ("A10", "1/2", 12),
        # vgn6i-vws 'NVIDIA T4 * 1/4', '16GB * 1/4'; sgn7i-vws 'NVIDIA A10 * 1/12', '24GB * 1/12' (ALI-GPU-ZH)
        ("alicloud", "ecs.vgn6i-m4-vws.xlarge"): ("T4", "1/4", 4),
        ("alicloud", "ecs.vgn6i-m8-vws.2xlarge"): ("T4", "1/2", 8),
        ("alicloud", "ecs.sgn7i-vws-m2.xlarge"): ("A10", "1/12", 2),
        ("alicloud", "ecs.sgn7i-vws-m4.2xlarge"): ("A10", "1/6", 4),
        ("alicloud", "ecs.sgn7i-vws-m8.4xlarge"): ("A10", "1/3", 8),
        ("alicloud", "ecs.sgn7i-vws-m2s.xlarge"): ("A10", "1/12", 2),
        ("alicloud", "ecs.sgn7i-vws-m4s.2xlarge"): ("A10", "1/6", 4),
        ("alicloud", "ecs.sgn7i-vws-m8s.4xlarge"): ("A10", "1/3", 8),
    }
    # GCP sells no slice (docs/gpus.md); a slice is one virtual GPU with no fabric and no MIG
    assert not [r for r in catalog.all_types("gcp") if r.gpuFraction]
    assert all(r.gpus == 1 and not r.has_fabric and catalog.mig_profiles(r) is None for r in SLICES)


def test_a_slices_memory_is_its_share_of_the_whole_gpu():
    whole = {"L4": 24, "A10": 24, "T4": 16}  # the whole-GPU rows' nominal memory (gr6, NV36ads, gn6i)
    for r in SLICES:
        assert r.gpuMemoryGiB == whole[str(r.gpu)] * r.fraction, r.instanceType


# --- resolution -----------------------------------------------------------------------------------------------------


def test_a_slice_resolves_to_the_smallest_type_of_that_fraction():
    res = catalog.resolve("aws", "L4", 1, fraction="1/8")
    assert res.type.instanceType == "g6f.large"
    assert res.reason.startswith("L4:1/8 -> g6f.large; also offered: g6f.xlarge")
    assert catalog.resolve("azure", "A10", 1, fraction="1/3").type.instanceType == "Standard_NV12ads_A10_v5"


def test_a_whole_gpu_request_never_gets_a_slice():
    assert catalog.resolve("aws", "L4", 1).type.gpuFraction is None
    assert catalog.resolve("azure", "A10", 1).type.instanceType == "Standard_NV36ads_A10_v5"
    assert all(not r.gpuFraction for r in rec.compare("L4", 1))


@pytest.mark.parametrize(
    ("cloud", "gpu", "message"),
    [
        ("aws", "L4:1/6", "no aws type has 1/6 of an L4; fractions offered: 1/8, 1/4, 1/2"),
        ("azure", "A10:1/8", "no azure type has 1/8 of an A10; fractions offered: 1/6, 1/3, 1/2"),
        ("aws", "T4:1/2", "aws sells no slice of a T4; slices offered: L4:1/2, L4:1/4, L4:1/8"),
        ("gcp", "L4:1/8", "gcp sells no slice of an L4; slices offered: none"),
    ],
)
def test_a_fraction_nobody_sells_is_one_keyed_error_listing_what_is(cloud, gpu, message):
    cfg = {"aws": aws_values, "azure": azure_values, "gcp": gcp_values}[cloud](gpu=gpu, nodes=1)
    with pytest.raises(ConfigError) as err:
        build_spec(cfg, "test")
    assert err.value.key == "gpu-cluster:cluster.gpu"
    assert message in str(err.value)


def test_a_slice_has_no_mig_and_says_why():
    with pytest.raises(ConfigError) as err:
        spec_of(azure_values(gpu="A10:1/6", nodes=1, gpuPartition="1g.6gb"))
    assert err.value.key == "gpu-cluster:cluster.gpuPartition"
    assert "1/6 vGPU slice of Standard_NV6ads_A10_v5" in str(err.value)


def test_slices_of_several_nodes_that_train_together_are_refused_for_want_of_a_fabric():
    with pytest.raises(ConfigError) as err:
        spec_of(azure_values(gpu="A10:1/2", nodes=2))
    assert err.value.key == "gpu-cluster:cluster.gpu" and "has a fabric NCCL can use" in str(err.value)
    # independent replicas (fabric: none) are fine
    assert spec_of(azure_values(gpu="A10:1/2", nodes=2, fabric="none")).instance.gpuFraction == "1/2"


# --- price ------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("itype", ["g6f.large", "g6f.2xlarge", "g6f.4xlarge", "gr6f.4xlarge"])
def test_the_price_per_gpu_hour_counts_the_fraction(itype):
    (row,) = catalog.find("aws", itype)
    assert row.hourlyUsd is not None
    assert row.usd_per_gpu_hour == pytest.approx(row.hourlyUsd / float(Fraction(str(row.gpuFraction))))
    assert rec.compare_row(row)["gpuFraction"] == row.gpuFraction


def test_compare_lists_slices_of_the_model_with_their_share():
    rows = {r["instanceType"]: r for r in (rec.compare_row(x) for x in rec.compare("L4"))}
    assert rows["g6f.large"]["usdPerGpuHour"] == pytest.approx(0.202 * 8)
    assert rows["g6.xlarge"]["gpuFraction"] is None


# --- recommend --------------------------------------------------------------------------------------------------------


def test_recommend_offers_a_slice_before_a_whole_gpu_where_the_model_fits():
    need = rec.memory_need("inference", 7e9, "int4")  # 3.3 GiB of weights + 2 GiB of KV cache
    options = rec.recommend(need, cloud="aws", limit=50)
    first = options[0]
    assert first.row.gpuFraction is not None
    assert first.row.gpuMemoryGiB is not None and first.row.gpuMemoryGiB * rec.USABLE_FRACTION >= need.total_gib
    assert "vGPU slice" in first.why
    whole = [o for o in options if o.row.gpuFraction is None]
    assert whole and (first.hourly_usd or 0) < (whole[0].hourly_usd or 0)
    assert rec.stack_config(first, "dev")["gpu-cluster:cluster"]["gpu"] == first.row.gpu_request


def test_recommend_offers_no_slice_the_model_does_not_fit():
    need = rec.memory_need("inference", 7e9)  # bf16: 13 GiB of weights, more than any slice's usable memory
    options = rec.recommend(need, limit=100)
    assert options and not [o for o in options if o.row.gpuFraction]


# --- the Azure slice: Ubuntu with the GRID driver --------------------------------------------------------------


def test_the_azure_slice_boots_ubuntu_and_installs_the_grid_driver_before_the_health_check():
    plan = plan_values(azure_values(gpu="A10:1/6", nodes=1))
    vmss = resources_of(plan, "compute:VirtualMachineScaleSet")[0]["inputs"]
    profile = vmss["virtualMachineProfile"]
    assert vmss["sku"]["name"] == "Standard_NV6ads_A10_v5"
    assert profile["storageProfile"]["imageReference"] == {
        "publisher": "Canonical",
        "offer": "0001-com-ubuntu-server-jammy",
        "sku": "22_04-lts-gen2",
        "version": "latest",
    }
    text = base64.b64decode(profile["osProfile"]["customData"]).decode()
    assert AZURE_GRID["url"] in text and f'DRIVER_VERSION="{AZURE_GRID["version"]}"' in text
    assert text.index("gpu-cluster-grid-driver.service") < text.index("gpu-cluster-health.service")
    summary = plan_json(plan)["summary"]
    assert (summary["gpuFraction"], summary["gpuSlice"]) == ("1/6", "1/6 of an A10, 4 GB")


def test_a_whole_gpu_or_a_custom_image_gets_no_grid_driver_part():
    for values in (azure_values(gpu="T4:1", nodes=1), azure_values(gpu="A10:1/6", nodes=1, image="my:own:image:1")):
        vmss = resources_of(plan_values(values), "compute:VirtualMachineScaleSet")[0]["inputs"]
        text = base64.b64decode(vmss["virtualMachineProfile"]["osProfile"]["customData"]).decode()
        assert "grid-driver" not in text
    assert grid_driver_part(None).empty


# --- grid_driver.sh against stubs -------------------------------------------------------------------------------------


def run_script(tmp_path: Path, *, installed: str = "", arch: str = "x86_64", reports: str = "550.144.06"):
    """The script with apt-get, update-initramfs, uname, curl and nvidia-smi stubbed: curl writes a runfile that
    extracts an nvidia-installer stub, which makes nvidia-smi report `reports`. Returns the run and the calls."""
    calls, state = tmp_path / "calls", tmp_path / "driver"
    if installed:
        state.write_text(installed)
    installer, runfile = tmp_path / "installer-stub", tmp_path / "runfile-stub"
    installer.write_text(f'#!/bin/bash\necho "nvidia-installer $*" >>"{calls}"\necho {reports} >"{state}"\n')
    # the runfile's -x extracts NVIDIA-Linux-...-grid-azure/ beside it, with the installer inside
    runfile.write_text(
        f'#!/bin/sh\n[ "$1" = -x ] || exit 2\nd="$(basename "$0" .run)"\nmkdir -p "$d"\n'
        f'cp "{installer}" "$d/nvidia-installer"\nchmod +x "$d/nvidia-installer"\n'
    )
    bin_dir = stub_bin(
        tmp_path,
        {
            "apt-get": f'echo "apt-get $*" >>"{calls}"\n',
            "update-initramfs": f'echo "update-initramfs $*" >>"{calls}"\n',
            "uname": f'case "$1" in -m) echo {arch} ;; -r) echo 5.15.0-1070-azure ;; esac\n',
            "curl": f'echo "curl $*" >>"{calls}"\ncp "{runfile}" "${{@: -2:1}}"\n',
            "nvidia-smi": f'[ -s "{state}" ] && cat "{state}"\n',
        },
        tools=("bash", "sh", "cat", "cp", "mkdir", "chmod", "basename", "head", "rm"),
    )
    env = {
        "DRIVER_URL": "https://download.example/NVIDIA-Linux-x86_64-550.144.06-grid-azure.run",
        "DRIVER_VERSION": "550.144.06",
        "WORKDIR": str(tmp_path / "work"),
        "BLACKLIST": str(tmp_path / "blacklist-nouveau.conf"),
        "INSTALL_LOG": str(tmp_path / "installer.log"),
    }
    proc = run_hook(SCRIPT, bin_dir, env, isolated=True)
    return proc, calls.read_text().splitlines() if calls.exists() else []


def test_script_is_shellcheck_clean():
    assert_shellcheck_clean(SCRIPT)


def test_installs_the_driver_the_aks_gpu_way(tmp_path):
    proc, calls = run_script(tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "apt-get install -y -q build-essential dkms linux-headers-5.15.0-1070-azure" in calls
    assert (tmp_path / "blacklist-nouveau.conf").read_text() == "blacklist nouveau\noptions nouveau modeset=0\n"
    assert "update-initramfs -u" in calls
    assert any(c.startswith("curl ") and c.endswith("NVIDIA-Linux-x86_64-550.144.06-grid-azure.run") for c in calls)
    (installer,) = [c for c in calls if c.startswith("nvidia-installer")]
    assert installer.split()[1:] == [
        "-s",
        "-k=5.15.0-1070-azure",
        f"--log-file-name={tmp_path / 'installer.log'}",
        "-a",
        "--no-drm",
        "--dkms",
    ]
    assert calls.index("update-initramfs -u") < calls.index(installer)
    assert not list((tmp_path / "work").iterdir())  # the runfile and its extraction are removed


def test_a_node_whose_driver_answers_is_left_alone(tmp_path):
    proc, calls = run_script(tmp_path, installed="550.144.06")
    assert proc.returncode == 0 and calls == []


def test_a_driver_of_another_version_fails_loudly(tmp_path):
    proc, _ = run_script(tmp_path, reports="535.1")
    assert proc.returncode == 1 and "expected 550.144.06" in proc.stderr


def test_arm64_is_refused(tmp_path):
    proc, calls = run_script(tmp_path, arch="aarch64")
    assert proc.returncode == 1 and "x86_64 only" in proc.stderr and calls == []


def test_the_part_carries_the_url_and_version():
    part = grid_driver_part(AZURE_GRID)
    env = next(f for f in part.files if f.path.endswith("grid-driver.env")).content
    assert f'DRIVER_URL="{AZURE_GRID["url"]}"' in env and 'DRIVER_VERSION="550.144.06"' in env
    unit = next(f for f in part.files if f.path.endswith(".service")).content
    assert "Before=gpu-cluster-mig.service gpu-cluster-health.service" in unit


def test_an_aws_slice_on_an_image_of_your_own_plans_as_a_single_gpu_node_without_efa():
    plan = plan_values(aws_values(gpu="L4:1/8", nodes=1, image="ami-0123456789abcdef0"))
    (template,) = resources_of(plan, "ec2/launchTemplate:LaunchTemplate")
    inputs = template["inputs"]
    assert (inputs["instanceType"], inputs["imageId"]) == ("g6f.large", "ami-0123456789abcdef0")
    assert all(nic.get("interfaceType") != "efa" for nic in inputs.get("networkInterfaces") or [])
    summary = plan_json(plan)["summary"]
    assert summary["gpuSlice"] == "1/8 of an L4, 3 GB"
    assert summary["usdPerGpuHour"] == pytest.approx(0.202 * 8)
    assert cost_text(summary) == "$0.20/h; $1.62 per GPU-hour (1/8 of a GPU per node)"
    assert gpus_text(summary).startswith("1 node x a vGPU slice: 1/8 of an L4, 3 GB (one physical GPU shared by 8")
