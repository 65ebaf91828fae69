"""The metrics part: NVIDIA's DCGM exporter and the node exporter on every node (the node exporter only on
non-NVIDIA GPUs, whose metrics exporter is not wired: catalog.vendor_gaps).

Both listen on the node's own address; what may reach them is decided by each cloud's network
rules (only the cluster's own security group / NSG / firewall / VPC range), never the internet.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from ..datafile import load_yaml
from . import File, Part, script


@cache
def versions() -> dict[str, Any]:
    data: dict[str, Any] = load_yaml(Path(__file__).parent / "versions.yaml")
    return data


@dataclass(frozen=True)
class Endpoint:
    name: str
    port: int
    path: str = "/metrics"


def endpoints() -> tuple[Endpoint, ...]:
    v = versions()
    return (
        Endpoint("dcgm-exporter", int(v["dcgmExporter"]["port"])),
        Endpoint("node-exporter", int(v["nodeExporter"]["port"])),
    )


UNIT = """[Unit]
Description=NVIDIA DCGM exporter (GPU metrics on :{port}/metrics)
Wants=network-online.target
After=network-online.target docker.service nvidia-persistenced.service

[Service]
Restart=always
RestartSec=30
ExecStartPre=/usr/local/sbin/gpu-cluster-container-runtime
ExecStartPre=-/usr/bin/docker rm -f dcgm-exporter
ExecStart={command}
ExecStop=/usr/bin/docker stop dcgm-exporter

[Install]
WantedBy=multi-user.target
"""


UNIT_PATH = "/etc/systemd/system/gpu-cluster-dcgm-exporter.service"


def exporter_command(job_map: str | None = None) -> str:
    """The exporter's `docker run`; `job_map`: the HPC job mapping directory (a file per GPU index, its jobs' ids; the
    metrics gain the label hpc_job), mounted read-only and named by DCGM_HPC_JOB_MAPPING_DIR (dcgm-exporter's
    --hpc-job-mapping-dir, pkg/cmd/app.go)."""
    image = versions()["dcgmExporter"]["image"]
    mapping = f"-v {job_map}:{job_map}:ro -e DCGM_HPC_JOB_MAPPING_DIR={job_map} " if job_map else ""
    return f"/usr/bin/docker run --rm --name dcgm-exporter --gpus all --cap-add SYS_ADMIN --net host {mapping}{image}"


def job_map_dropin(job_map: str) -> File:
    """The exporter unit's drop-in giving it the job mapping directory (Slurm GPU nodes: bootstrap/slurm_jobmap.py);
    a drop-in, so the unit of every other node stays as it is. An empty ExecStart= clears the unit's own first
    (systemd.service(5))."""
    return File(f"{UNIT_PATH}.d/slurm-jobmap.conf", f"[Service]\nExecStart=\nExecStart={exporter_command(job_map)}\n")


def metrics_part(enabled: bool, gpu_vendor: str = "nvidia") -> Part:
    if not enabled:
        return Part("metrics")
    v = versions()
    exporter, node = v["dcgmExporter"], v["nodeExporter"]
    package = node["package"]
    install_node_exporter = (
        "sh",
        "-c",
        f"dpkg -s {package} >/dev/null 2>&1 || (apt-get update -q && apt-get install -y -q {package})",
    )
    if gpu_vendor != "nvidia":
        # The DCGM exporter reads NVIDIA GPUs only; the AMD device metrics exporter is not wired (yet), so these
        # nodes export host metrics only and the GPU metrics gap is said (catalog.vendor_gaps).
        return Part(
            "metrics",
            commands=(install_node_exporter,),
            summary=f"runs the node exporter (:{node['port']}); no GPU metrics ({gpu_vendor} GPUs: the DCGM exporter "
            "is NVIDIA's, the AMD device metrics exporter is not wired).",
        )
    return Part(
        "metrics",
        files=(
            # images without Docker or the NVIDIA runtime (GCP accelerator, Alibaba Ubuntu) get them first
            File("/usr/local/sbin/gpu-cluster-container-runtime", script("container_runtime.sh"), "0755"),
            File(UNIT_PATH, UNIT.format(port=exporter["port"], command=exporter_command())),
        ),
        commands=(
            install_node_exporter,
            ("systemctl", "daemon-reload"),
            ("systemctl", "enable", "--now", "--no-block", "gpu-cluster-dcgm-exporter.service"),
        ),
        summary=f"runs the DCGM exporter (:{exporter['port']}) and the node exporter (:{node['port']}).",
    )
