"""The node bootstrap as a whole: parts in order, rendered for cloud-init and for GCP's startup script."""

from __future__ import annotations

import subprocess
from pathlib import Path

import yaml

from components import bootstrap
from components.bootstrap.metrics import endpoints, metrics_part, versions
from components.bootstrap.scratch import Scratch
from components.layout.node import gpu_name_text, health_check, node_parts

from .conftest import aws_values, spec_of

NVME = ("/dev/disk/by-id/nvme-Amazon_EC2_NVMe_Instance_Storage_*",)


def scratch() -> Scratch:
    return Scratch("nvme", "/scratch", 8, 3800.0, NVME)


def test_parts_run_in_order_and_render_as_valid_cloud_init():
    spec = spec_of(aws_values(gpuPartition="3g.40gb"))
    parts = node_parts(spec, scratch(), fabric_devices=32, nvme_globs=NVME)
    assert [p.name for p in parts if not p.empty] == ["scratch", "mig", "health", "metrics", "interruption"]
    body = yaml.safe_load(bootstrap.cloud_init(parts).removeprefix("#cloud-config\n"))
    paths = [f["path"] for f in body["write_files"]]
    assert "/usr/local/sbin/gpu-cluster-health" in paths and "/usr/local/sbin/gpu-cluster-mig" in paths
    units = [" ".join(c) for c in body["runcmd"] if "enable" in c]
    order = [u.split()[-1] for u in units]
    assert order == [
        "gpu-cluster-scratch.service",
        "gpu-cluster-mig.service",
        "gpu-cluster-health.service",
        "gpu-cluster-dcgm-exporter.service",
        "gpu-cluster-drain.service",  # with gpu-cluster-interruption.service
    ]


def test_the_startup_script_of_the_same_parts_is_shellcheck_clean(tmp_path):
    spec = spec_of(aws_values())
    script = bootstrap.startup_script(node_parts(spec, scratch(), fabric_devices=32, nvme_globs=NVME), ["test"])
    assert script is not None
    path = tmp_path / "startup.sh"
    path.write_text(script)
    proc = subprocess.run(["shellcheck", "-S", "warning", str(path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout


def test_health_expectations_come_from_the_type_and_what_was_wired():
    spec = spec_of(aws_values())  # 2 x p5.48xlarge, managed
    check = health_check(spec, 32, NVME)
    assert check is not None
    assert (check.gpus, check.gpu_model, check.fabric_kind, check.fabric_devices) == (8, "H100", "efa", 32)
    assert check.nvme_devices == 8 and check.action == "replace"
    instances = health_check(spec_of(aws_values(nodeGroup="instances")), 32, NVME)
    assert instances is not None and instances.action == "report"
    no_fabric = health_check(spec_of(aws_values(fabric="none")), 0, ())
    assert no_fabric is not None and no_fabric.fabric_kind == "none" and no_fabric.nvme_devices == 0
    assert health_check(spec_of(aws_values(health={"enabled": False})), 32, NVME) is None
    forced = health_check(spec_of(aws_values(nodeGroup="instances", health={"action": "replace"})), 32, NVME)
    assert forced is not None and forced.action == "replace"


def test_gpu_name_text():
    assert gpu_name_text("A100-80GB") == "A100"
    assert gpu_name_text("H100") == "H100"
    assert gpu_name_text(None) == ""


def test_metrics_are_pinned_and_can_be_turned_off():
    part = metrics_part(True)
    unit = next(f.content for f in part.files if f.path.endswith(".service"))
    assert versions()["dcgmExporter"]["image"] in unit and "--net host" in unit
    assert [e.port for e in endpoints()] == [9400, 9100]
    assert metrics_part(False).empty
    assert spec_of(aws_values(monitoring={"dcgmExporter": False})).dcgm_exporter is False


def test_the_nccl_environment_is_one_sorted_file_with_its_source():
    from components.bootstrap.fabric import NCCL_ENV, FabricUsability, nccl_env_part

    part = nccl_env_part({"FI_PROVIDER": "efa", "FI_EFA_USE_DEVICE_RDMA": "1"}, "AWS EFA docs")
    (env,) = part.files
    assert env.path == NCCL_ENV
    assert env.content.splitlines()[1:] == ["FI_EFA_USE_DEVICE_RDMA=1", "FI_PROVIDER=efa"]
    assert "AWS EFA docs" in env.content.splitlines()[0]
    assert nccl_env_part({}, "x").empty
    assert FabricUsability(False, ("the TCPXO NCCL plugin",)).describe() == (
        "not usable by NCCL: missing the TCPXO NCCL plugin"
    )


RUNTIME = Path(__file__).resolve().parent.parent / "components" / "bootstrap" / "container_runtime.sh"


def _runtime(tmp_path: Path, have: tuple[str, ...]) -> list[str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "calls"

    def stub(name: str, body: str = "") -> None:
        (bin_dir / name).write_text(f'#!/bin/bash\necho "{name} $*" >> {calls}\n{body}\n')
        (bin_dir / name).chmod(0o755)

    for name in have:
        stub(name)
    stub("curl", 'echo "deb https://nvidia.github.io/x /"')
    stub("gpg", "cat >/dev/null")  # reads the key from the pipe, as gpg --dearmor does
    stub("systemctl")
    # installing a package puts its command on the PATH, as apt would
    installs = {"docker.io": "docker", "nvidia-container-toolkit": "nvidia-ctk"}
    body = "; ".join(
        f'case "$*" in *{pkg}*) printf "#!/bin/bash\\necho \\"{cmd} \\$*\\" >> {calls}\\n" > {bin_dir}/{cmd}; '
        f"chmod +x {bin_dir}/{cmd} ;; esac"
        for pkg, cmd in installs.items()
    )
    stub("apt-get", body)
    # only the stubs and the basic tools: docker / nvidia-ctk absent unless stubbed
    base = ":".join(p for p in ("/usr/bin", "/bin") if Path(p).exists())
    env = {
        "PATH": f"{bin_dir}:{base}",
        "KEYRING": str(tmp_path / "keyring.gpg"),
        "LIST": str(tmp_path / "nvidia.list"),
    }
    if any((Path(p) / n).exists() for p in ("/usr/bin", "/bin") for n in ("docker", "nvidia-ctk")):
        import pytest

        pytest.skip("this machine has docker or nvidia-ctk on /usr/bin: the absent case cannot be stubbed")
    proc = subprocess.run(["bash", str(RUNTIME)], env=env, capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    return calls.read_text().splitlines() if calls.exists() else []


def test_the_container_runtime_is_left_alone_where_the_image_has_it(tmp_path):
    assert _runtime(tmp_path, ("docker", "nvidia-ctk")) == []


def test_the_container_runtime_is_installed_where_missing(tmp_path):
    calls = _runtime(tmp_path, ())
    assert "apt-get install -y -q docker.io" in calls
    assert "apt-get install -y -q nvidia-container-toolkit" in calls
    assert "nvidia-ctk runtime configure --runtime=docker" in calls
    assert "signed-by=" in (tmp_path / "nvidia.list").read_text()


def test_the_container_runtime_script_is_shellcheck_clean_and_shipped():
    assert subprocess.run(["shellcheck", str(RUNTIME)], capture_output=True).returncode == 0
    part = metrics_part(True)
    assert any(f.content == RUNTIME.read_text() for f in part.files)
    assert "ExecStartPre=/usr/local/sbin/gpu-cluster-container-runtime" in part.files[-1].content
