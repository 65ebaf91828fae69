"""The scratch part: local NVMe striped as RAID0, or one cloud disk, mounted at `scratchPath` at every boot.

A systemd unit rather than a one-shot command, because local NVMe is wiped on stop/start and the
array must be rebuilt (or re-mounted after a reboot) on every boot.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from . import Part, oneshot_unit, script, service_part


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


def scratch_script() -> str:
    return script("scratch.sh")


def scratch_unit(path: str) -> str:
    return oneshot_unit(
        f"gpu-cluster scratch at {path}",
        name="scratch",
        after=["local-fs.target"],
        before=["docker.service", "containerd.service"],
    )


def scratch_part(scratch: Scratch) -> Part:
    if scratch.kind == "none":
        return Part("scratch")
    env = {
        "SCRATCH_PATH": scratch.path,
        "DEVICE_GLOBS": " ".join(scratch.device_globs),
        "EXPECTED_DEVICES": str(scratch.devices),
        "EXCLUDE_ROOT": "1",
    }
    return service_part(
        "scratch",
        script_text=scratch_script(),
        env=env,
        unit=scratch_unit(scratch.path),
        summary=f"installs the scratch unit that mounts {scratch.path}.",
    )
