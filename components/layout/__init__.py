"""Pure, cloud-specific layouts: what each cloud's resources must look like, as frozen dataclasses.

A layout is computed from a `ClusterSpec` without Pulumi; each cloud package only maps its layout
onto resources. Pieces every cloud shares live here: the scratch plan and the cloud-init bootstrap.
"""

from __future__ import annotations

import ipaddress
import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Literal

import yaml

from .. import catalog
from ..catalog import Cloud
from ..spec import ClusterSpec

_SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"


@dataclass(frozen=True)
class Scratch:
    """Where `scratchPath` comes from on each node."""

    kind: Literal["nvme", "disk", "none"]
    path: str
    devices: int  # local NVMe devices striped, or 1 cloud disk
    device_gb: float | None  # per device
    device_globs: tuple[str, ...]  # by-id globs the bootstrap matches at boot
    retain: bool = False  # keep the cloud disk when its node or the stack is deleted

    @property
    def total_gb(self) -> float | None:
        return None if self.device_gb is None else self.device_gb * self.devices

    def describe(self) -> str:
        if self.kind == "none":
            return "none"
        size = f"{self.total_gb:,.0f} GB" if self.total_gb is not None else "size unknown"
        if self.kind == "nvme":
            how = "RAID0 of " if self.devices > 1 else ""
            return f"{how}{self.devices} local NVMe ({size}) at {self.path}"
        return f"cloud disk {size} at {self.path}" + (" (retained on delete)" if self.retain else "")


def scratch_for(spec: ClusterSpec, nvme_globs: tuple[str, ...], disk_globs: tuple[str, ...]) -> Scratch:
    row, storage = spec.instance, spec.storage
    if spec.scratch == "nvme":
        return Scratch("nvme", storage.scratch_path, row.localNvmeCount, row.localNvmeGb, nvme_globs)
    if spec.scratch == "disk":
        return Scratch("disk", storage.scratch_path, 1, storage.scratch_gb, disk_globs, storage.retain_scratch)
    return Scratch("none", storage.scratch_path, 0, None, ())


@cache
def scratch_script() -> str:
    return (_SCRIPTS / "scratch.sh").read_text()


def image_for(cloud: Cloud, instance_type: str) -> dict[str, Any]:
    """The `image: auto` entry for a type: the longest matching family prefix, else the default."""
    section = catalog.load(cloud).images
    families: dict[str, Any] = section.get("families") or {}
    match = max((p for p in families if instance_type.startswith(p)), key=len, default=None)
    entry: dict[str, Any] = families[match] if match else section["default"]
    return entry


_UNIT = """[Unit]
Description=gpu-cluster scratch at {path}
After=local-fs.target
Before=docker.service containerd.service

[Service]
Type=oneshot
RemainAfterExit=yes
EnvironmentFile=/etc/gpu-cluster/scratch.env
ExecStart=/usr/local/sbin/gpu-cluster-scratch

[Install]
WantedBy=multi-user.target
"""


def cloud_init(scratch: Scratch, extra_runcmd: tuple[tuple[str, ...], ...] = ()) -> str:
    """The `#cloud-config` user data: install the scratch script as a boot-time unit and run it.

    A systemd unit rather than a one-shot runcmd, because local NVMe is wiped on stop/start and
    the array must be rebuilt (or re-mounted after a reboot) on every boot.
    """
    files: list[dict[str, str]] = []
    runcmd: list[list[str]] = []
    if scratch.kind != "none":
        env = {
            "SCRATCH_PATH": scratch.path,
            "DEVICE_GLOBS": " ".join(scratch.device_globs),
            "EXPECTED_DEVICES": str(scratch.devices),
            "EXCLUDE_ROOT": "1",
        }
        files += [
            {"path": "/usr/local/sbin/gpu-cluster-scratch", "permissions": "0755", "content": scratch_script()},
            {
                "path": "/etc/gpu-cluster/scratch.env",
                "permissions": "0644",
                "content": "".join(f"{k}={json.dumps(v)}\n" for k, v in env.items()),
            },
            {
                "path": "/etc/systemd/system/gpu-cluster-scratch.service",
                "permissions": "0644",
                "content": _UNIT.format(path=scratch.path),
            },
        ]
        runcmd += [["systemctl", "daemon-reload"], ["systemctl", "enable", "--now", "gpu-cluster-scratch.service"]]
    runcmd += [list(cmd) for cmd in extra_runcmd]
    body: dict[str, Any] = {}
    if files:
        body["write_files"] = files
    if runcmd:
        body["runcmd"] = runcmd
    return "#cloud-config\n" + yaml.safe_dump(body, sort_keys=False, width=1000)


def split_cidr(cidr: str, extra_bits: int, count: int) -> tuple[str, ...]:
    """The first `count` subnets of `cidr`, each `extra_bits` longer (stable: same input, same ranges)."""
    subnets = ipaddress.IPv4Network(cidr).subnets(prefixlen_diff=extra_bits)
    return tuple(str(next(subnets)) for _ in range(count))
