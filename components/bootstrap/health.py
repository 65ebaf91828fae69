"""The health part: a boot-time unit that checks the node against what its type was sold with.

Expectations come from the catalog and the layout (GPU count and model, fabric devices wired,
local NVMe); the cloud adds the hook that takes an unhealthy node out of service (an ASG health
status, a MIG health check, ...), run only with `health.action: replace`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from . import File, Part, oneshot_unit, script, service_part

HOOK_PATH = "/usr/local/sbin/gpu-cluster-unhealthy"
RESULT_PATH = "/var/lib/gpu-cluster/health.json"

UNIT = oneshot_unit(
    "gpu-cluster node health check (GPUs, fabric, local NVMe)",
    name="health",
    wants=["network-online.target"],
    after=[
        "network-online.target",
        "nvidia-persistenced.service",
        "nvidia-fabricmanager.service",
        "gpu-cluster-scratch.service",
    ],
)


@dataclass(frozen=True)
class HealthCheck:
    gpus: int
    gpu_model: str  # text every GPU name contains (nvidia-smi), e.g. "H100"
    fabric_kind: str  # a catalog fabric kind, or "none"
    fabric_devices: int  # what the layout wired: EFA interfaces, IB ports, RDMA ports, GPU NICs
    nvme_devices: int
    nvme_globs: tuple[str, ...]
    action: Literal["replace", "report"]
    dcgm_level: int = 1
    mig_devices: int = 0  # gpus x instances per GPU with gpuPartition
    mounts: tuple[str, ...] = ()  # shared filesystems that must be mounted (storage.shared.path)
    gpu_vendor: str = "nvidia"  # not nvidia: gpus is 0 (the GPU checks are NVIDIA tools), said in the summary

    def env(self) -> dict[str, str]:
        extra = {"EXPECTED_MOUNTS": " ".join(self.mounts)} if self.mounts else {}
        return {
            **extra,
            "EXPECTED_GPUS": str(self.gpus),
            "GPU_MODEL": self.gpu_model,
            "FABRIC_KIND": self.fabric_kind,
            "EXPECTED_FABRIC_DEVICES": str(self.fabric_devices),
            "EXPECTED_NVME": str(self.nvme_devices),
            "NVME_GLOBS": " ".join(self.nvme_globs),
            "EXPECTED_MIG_DEVICES": str(self.mig_devices),
            "DCGM_LEVEL": str(self.dcgm_level),
            "ACTION": self.action,
            "UNHEALTHY_HOOK": HOOK_PATH,
            "HEALTH_RESULT": RESULT_PATH,
        }


# Where the mount check goes into health.sh (before the checks run, and its call after check_mig).
_MOUNTS_BEFORE = 'if [ "$EXPECTED_GPUS" -gt 0 ]; then\n  check_gpus'
_MOUNTS_CALL = ("check_mig\ncheck_dcgm\n", "check_mig\ncheck_mounts\ncheck_dcgm\n")


def health_script(mounts: bool = False) -> str:
    """health.sh; with `mounts`, with the mount check (health_mounts.sh) spliced in. Without, byte for byte the
    script every node had before storage.shared existed: no deployed node's user data changes for it."""
    text = script("health.sh")
    if not mounts:
        return text
    assert text.count(_MOUNTS_BEFORE) == 1 and text.count(_MOUNTS_CALL[0]) == 1, "health.sh anchors moved"
    fragment = script("health_mounts.sh").replace("# shellcheck shell=bash\n", "", 1)
    return text.replace(_MOUNTS_BEFORE, fragment + _MOUNTS_BEFORE, 1).replace(*_MOUNTS_CALL, 1)


def _gpus_text(check: HealthCheck) -> str:
    if check.gpu_vendor == "nvidia":
        return f"{check.gpus} GPU(s)"
    return f"no GPUs ({check.gpu_vendor}: nvidia-smi and DCGM do not see them; amd-smi is not wired)"


def health_part(check: HealthCheck | None, unhealthy_hook: str | None = None) -> Part:
    """The unit, its settings and (for `replace`) the cloud's hook; an empty part when disabled."""
    if check is None:
        return Part("health")
    hook = (File(HOOK_PATH, unhealthy_hook, "0755"),) if check.action == "replace" and unhealthy_hook else ()
    return service_part(
        "health",
        script_text=health_script(mounts=bool(check.mounts)),
        env=check.env(),
        unit=UNIT,
        extra_files=hook,
        no_block=True,
        summary=f"checks {_gpus_text(check)}, {check.fabric_devices} {check.fabric_kind} device(s) and "
        f"{check.nvme_devices} local NVMe at boot ({RESULT_PATH}).",
    )
