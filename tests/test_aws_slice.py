"""AWS vGPU slices (g6f/gr6f, issue 32) that boot with their driver: `image: auto` boots the pinned Canonical Ubuntu
22.04 and installs the GRID driver AWS publishes for them from its ec2-linux-nvidia-drivers bucket (grid_driver.sh
with an s3:// runfile, against stubs), the node role may read exactly that object and only when a slice node exists,
the EKS pool keeps the EKS NVIDIA AMI (which carries the GRID module), and the shipped stack aws-l4-slice."""

from __future__ import annotations

import base64
import gzip
import json
from pathlib import Path

import pytest
import yaml

from components import catalog
from components.bootstrap.grid_driver import grid_driver_part
from components.layout import aws as aws_layout

from .conformance import aws as aws_conformance
from .conformance.aws_iam import policy_problems
from .conftest import aws_values, one, plan_json, plan_stack, plan_values, resources_of, spec_of
from .hook_helpers import run_hook, stub_bin

SCRIPT = Path(__file__).resolve().parent.parent / "components" / "bootstrap" / "grid_driver.sh"
(G6F,) = catalog.find("aws", "g6f.2xlarge")
GRID = catalog.gpu_image("aws", G6F)["gridDriver"]
RUNFILE = "NVIDIA-Linux-x86_64-580.159.03-grid-aws.run"
OBJECT = f"s3://ec2-linux-nvidia-drivers/grid-19.5/{RUNFILE}"
UBUNTU = "<resolved at deploy: ami ubuntu/images/hvm-ssd/ubuntu-jammy-22.04-amd64-server-20260731 of 099720109477>"


def user_data(plan) -> dict:
    lt = one(plan, "launchTemplate:LaunchTemplate")["inputs"]
    return yaml.safe_load(gzip.decompress(base64.b64decode(lt["userData"])).decode())


def files_of(plan) -> dict[str, str]:
    return {f["path"]: f["content"] for f in user_data(plan)["write_files"]}


def driver_policies(plan) -> list[dict]:
    return [r for r in resources_of(plan, "iam/rolePolicy:RolePolicy") if r["name"].endswith("-node-role-grid-driver")]


@pytest.fixture(scope="module")
def slice_plan():
    return plan_values(aws_values(gpu="L4:1/4", nodes=1))


# --- the catalog entry ------------------------------------------------------------------------------------------------


def test_the_slices_pin_grid_19_5_within_the_range_the_ec2_guide_gives():
    # "G6f and Gr6f instances require GRID 18.4 to GRID 19.5": the newest of the range, never the bucket's latest/
    assert (GRID["version"], GRID["vgpuSoftware"], GRID["url"]) == ("580.159.03", "19.5", OBJECT)
    assert "/latest/" not in GRID["url"] and GRID["source"]
    (gr6f,) = catalog.find("aws", "gr6f.4xlarge")
    assert catalog.gpu_image("aws", gr6f) == catalog.gpu_image("aws", G6F)
    assert all(not catalog.gpu_image("aws", r).get("gridDriver") for r in catalog.all_types("aws") if not r.gpuFraction)


# --- the node: image, bootstrap, summary ----------------------------------------------------------------------------


def test_image_auto_boots_the_pinned_ubuntu_and_installs_the_driver_before_the_health_check(slice_plan):
    lt = one(slice_plan, "launchTemplate:LaunchTemplate")["inputs"]
    assert (lt["instanceType"], lt["imageId"]) == ("g6f.2xlarge", UBUNTU)
    assert all(nic.get("interfaceType") != "efa" for nic in lt.get("networkInterfaces") or [])
    files = files_of(slice_plan)
    env = files["/etc/gpu-cluster/grid-driver.env"]
    assert f'DRIVER_URL="{OBJECT}"' in env and 'DRIVER_VERSION="580.159.03"' in env
    assert 'KERNEL_PACKAGES="linux-headers linux-modules-extra"' in env
    assert 'BLACKLIST_MODULES="vga16fb nouveau rivafb nvidiafb rivatv"' in env
    script = files["/usr/local/sbin/gpu-cluster-grid-driver"]
    assert "aws s3 cp" in script and "aws_region()" in script  # the AWS CLI library inlined, one file on the node
    unit = files["/etc/systemd/system/gpu-cluster-grid-driver.service"]
    assert "Before=gpu-cluster-mig.service gpu-cluster-health.service" in unit
    runcmd = [" ".join(c) for c in user_data(slice_plan)["runcmd"]]
    grid = next(i for i, c in enumerate(runcmd) if "gpu-cluster-grid-driver.service" in c)
    health = next(i for i, c in enumerate(runcmd) if "gpu-cluster-health.service" in c)
    assert grid < health


def test_the_plan_names_the_image_and_the_driver(slice_plan):
    summary = plan_json(slice_plan)["summary"]
    assert summary["image"] == UBUNTU
    assert summary["gpuDriver"] == f"NVIDIA GRID 580.159.03, vGPU software 19.5, installed at boot from {OBJECT}"
    assert summary["gpuSlice"] == "1/4 of an L4, 6 GB"


# --- the node role's read of the driver -------------------------------------------------------------------------------


def test_the_node_role_may_get_exactly_the_driver_object(slice_plan):
    (policy,) = driver_policies(slice_plan)
    role = one(slice_plan, "iam/role:Role")
    assert policy["inputs"]["role"] == f"<autoname:{role['name']}>"
    (statement,) = json.loads(policy["inputs"]["policy"])["Statement"]
    assert statement == {
        "Sid": "ReadGridDriver",
        "Effect": "Allow",
        "Action": ["s3:GetObject"],  # a known key: no s3:ListBucket, no bucket-wide read
        "Resource": [f"arn:<partition of us-east-1>:s3:::ec2-linux-nvidia-drivers/grid-19.5/{RUNFILE}"],
    }
    inline = plan_json(slice_plan)["outputs"]["identity"]["inline"]
    assert {"action": ["s3:GetObject"], "resource": [OBJECT]} in inline


@pytest.mark.parametrize(
    "cluster",
    [
        {"gpu": "L4:1", "nodes": 1},  # a whole L4 (g6): the DLAMI's driver
        {"gpu": "L4:1/4", "nodes": 1, "image": "ami-0123456789abcdef0"},  # your image brings its driver
    ],
)
def test_no_slice_on_image_auto_no_driver_grant_and_no_driver_part(cluster):
    plan = plan_values(aws_values(**cluster))
    assert driver_policies(plan) == []
    assert "/etc/gpu-cluster/grid-driver.env" not in files_of(plan)
    assert "gpuDriver" not in plan_json(plan)["summary"] or plan_json(plan)["summary"]["gpuDriver"] is None


def test_an_existing_instance_profile_gets_no_policy_of_ours():
    plan = plan_values(aws_values(gpu="L4:1/4", nodes=1, identity={"existing": "my-gpu-profile"}))
    assert driver_policies(plan) == [] and not resources_of(plan, "iam/role:Role")
    assert "/etc/gpu-cluster/grid-driver.env" in files_of(plan)  # the profile's owner grants the read (docs/aws.md)


def test_slurm_slice_nodes_get_the_grant_too():
    layout = aws_layout.plan(spec_of(aws_values(gpu="L4:1/2", instanceType="gr6f.4xlarge", nodes=1, scheduler="slurm")))
    (grant,) = layout.driver_grants
    assert (grant.bucket, grant.key, grant.action) == (
        "ec2-linux-nvidia-drivers",
        f"grid-19.5/{RUNFILE}",
        "s3:GetObject",
    )


def test_an_eks_pool_of_slices_runs_the_eks_nvidia_ami_which_loads_its_grid_module():
    # amazon-eks-ami templates/al2023/runtime/gpu/nvidia-kmod-load.sh loads nvidia-open-grid on L4-3Q/-6Q/-12Q
    layout = aws_layout.plan(spec_of(aws_values(gpu="L4:1/4", nodes=1, scheduler="kubernetes")))
    assert layout.kubernetes is not None
    gpu_pool = next(p for p in layout.kubernetes.pools if p.instance_type == "g6f.2xlarge")
    assert gpu_pool.ami_type == "AL2023_x86_64_NVIDIA"
    assert layout.driver_grants == () and layout.gpu_driver is None


# --- the shipped stack -----------------------------------------------------------------------------------------------


def test_the_shipped_slice_stack_plans_one_g6f_with_its_driver():
    plan = plan_stack("aws-l4-slice")
    summary = plan_json(plan)["summary"]
    assert (summary["gpuFraction"], summary["gpuSlice"]) == ("1/4", "1/4 of an L4, 6 GB")
    assert summary["gpuDriver"].startswith("NVIDIA GRID 580.159.03")
    assert len(driver_policies(plan)) == 1 and plan.warnings() == []


# --- grid_driver.sh with an s3:// runfile, against stubs -------------------------------------------------------------


def run_s3(tmp_path: Path, reports: str = "580.159.03"):
    """The script with an s3:// DRIVER_URL: IMDSv2 answers us-west-2, `aws s3 cp` writes a runfile stub that extracts
    an nvidia-installer stub (which makes nvidia-smi report `reports`); apt-get notes whether the blacklist exists
    when it runs. Returns the run and the calls."""
    calls, state = tmp_path / "calls", tmp_path / "driver"
    blacklist = tmp_path / "blacklist.conf"
    installer, runfile = tmp_path / "installer-stub", tmp_path / "runfile-stub"
    installer.write_text(f'#!/bin/bash\necho "nvidia-installer $*" >>"{calls}"\necho {reports} >"{state}"\n')
    runfile.write_text(
        f'#!/bin/sh\n[ "$1" = -x ] || exit 2\nd="$(basename "$0" .run)"\nmkdir -p "$d"\n'
        f'cp "{installer}" "$d/nvidia-installer"\nchmod +x "$d/nvidia-installer"\n'
    )
    bin_dir = stub_bin(
        tmp_path,
        {
            "apt-get": f'echo "apt-get $* blacklisted=$([ -s "{blacklist}" ] && echo yes || echo no)" >>"{calls}"\n',
            "update-initramfs": f'echo "update-initramfs $*" >>"{calls}"\n',
            "uname": 'case "$1" in -m) echo x86_64 ;; -r) echo 6.8.0-1021-aws ;; esac\n',
            "curl": 'case "$*" in *api/token*) echo TOKEN ;; *placement/region*) echo us-west-2 ;; *) exit 7 ;; esac\n',
            "aws": f'echo "aws $*" >>"{calls}"\ncp "{runfile}" "${{@: -1}}"\n',
            "nvidia-smi": f'[ -s "{state}" ] && cat "{state}"\n',
        },
        tools=("bash", "sh", "cat", "cp", "mkdir", "chmod", "basename", "head", "rm"),
    )
    env = {
        "DRIVER_URL": OBJECT,
        "DRIVER_VERSION": "580.159.03",
        "KERNEL_PACKAGES": "linux-headers linux-modules-extra",
        "BLACKLIST_MODULES": "vga16fb nouveau rivafb nvidiafb rivatv",
        "WORKDIR": str(tmp_path / "work"),
        "BLACKLIST": str(blacklist),
        "INSTALL_LOG": str(tmp_path / "installer.log"),
    }
    proc = run_hook(SCRIPT, bin_dir, env, isolated=True)
    return proc, calls.read_text().splitlines() if calls.exists() else [], blacklist


def test_an_s3_runfile_is_read_with_the_aws_cli_in_the_nodes_region(tmp_path):
    proc, calls, _ = run_s3(tmp_path)
    assert proc.returncode == 0, proc.stderr
    (cp,) = [c for c in calls if c.startswith("aws ")]
    assert cp == f"aws s3 cp --only-show-errors --region us-west-2 {OBJECT} {tmp_path / 'work' / RUNFILE}"
    (installer,) = [c for c in calls if c.startswith("nvidia-installer")]
    assert installer.split()[1:3] == ["-s", "-k=6.8.0-1021-aws"] and "--dkms" in installer
    assert calls.index(cp) < calls.index(installer)
    assert not list((tmp_path / "work").iterdir())


def test_the_ec2_guides_ubuntu_prerequisites_come_first(tmp_path):
    proc, calls, blacklist = run_s3(tmp_path)
    assert proc.returncode == 0, proc.stderr
    install = (
        "apt-get install -y -q build-essential dkms linux-headers-6.8.0-1021-aws linux-modules-extra-6.8.0-1021-aws"
    )
    assert f"{install} blacklisted=yes" in calls  # nouveau is blacklisted before modules-extra brings it
    assert blacklist.read_text() == (
        "blacklist vga16fb\nblacklist nouveau\nblacklist rivafb\nblacklist nvidiafb\nblacklist rivatv\n"
        "options nouveau modeset=0\n"
    )
    assert calls.index(f"{install} blacklisted=yes") < calls.index("update-initramfs -u")


def test_a_driver_outside_the_pin_fails_loudly(tmp_path):
    proc, _, _ = run_s3(tmp_path, reports="595.91.07")
    assert proc.returncode == 1 and "expected 580.159.03" in proc.stderr


def test_the_part_carries_the_aws_install_settings_and_azures_keeps_the_defaults():
    env = next(f for f in grid_driver_part(GRID).files if f.path.endswith("grid-driver.env")).content
    assert 'KERNEL_PACKAGES="linux-headers linux-modules-extra"' in env and f'DRIVER_URL="{OBJECT}"' in env
    (azure_row,) = catalog.find("azure", "Standard_NV6ads_A10_v5")
    azure = catalog.gpu_image("azure", azure_row)["gridDriver"]
    azure_env = next(f for f in grid_driver_part(azure).files if f.path.endswith("grid-driver.env")).content
    assert "KERNEL_PACKAGES" not in azure_env and "BLACKLIST_MODULES" not in azure_env


# --- the conformance layer judges the grant -----------------------------------------------------------------------


def test_the_grant_is_judged_by_the_conformance_layer_and_accepted():
    report = aws_conformance.check_plan(plan_stack("aws-l4-slice"))
    assert report.ok, report.lines()
    (put,) = [q for q in report.requests if q.operation == "PutRolePolicy" and q.urn.endswith("-node-role-grid-driver")]
    assert "s3:GetObject" in put.params["PolicyDocument"]


@pytest.mark.parametrize(
    ("action", "resource", "problem"),
    [
        ("s3:GetObject", "arn:aws:s3:::ec2-linux-nvidia-drivers", "acts on objects (its Key is required)"),
        ("s3:GetObjects", f"arn:aws:s3:::ec2-linux-nvidia-drivers/grid-19.5/{RUNFILE}", "s3 has no operation"),
        ("s3:GetObject", "arn:aws:ec2:us-east-1:123456789012:instance/*", "is of service ec2"),
        ("s3:GetObject", "ec2-linux-nvidia-drivers/grid-19.5", "is not arn:partition"),
    ],
)
def test_the_policy_judge_refuses_a_grant_that_would_not_work(action, resource, problem):
    document = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": [action], "Resource": resource}]}
    problems = policy_problems(json.dumps(document))
    assert len(problems) == 1 and problem in problems[0]
