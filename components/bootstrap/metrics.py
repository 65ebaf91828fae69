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
ExecStart=/usr/bin/docker run --rm --name dcgm-exporter --gpus all --cap-add SYS_ADMIN --net host {image}
ExecStop=/usr/bin/docker stop dcgm-exporter

[Install]
WantedBy=multi-user.target
"""


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
            File(
                "/etc/systemd/system/gpu-cluster-dcgm-exporter.service",
                UNIT.format(port=exporter["port"], image=exporter["image"]),
            ),
        ),
        commands=(
            install_node_exporter,
            ("systemctl", "daemon-reload"),
            ("systemctl", "enable", "--now", "--no-block", "gpu-cluster-dcgm-exporter.service"),
        ),
        summary=f"runs the DCGM exporter (:{exporter['port']}) and the node exporter (:{node['port']}).",
    )
