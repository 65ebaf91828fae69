"""A GPU node's bootstrap, in order: scratch, the GRID driver (vGPU slices whose cloud has no image with it), the
cloud's fabric parts, MIG, health check, metrics, interruption
watcher (scheduler slurm or none: drain before the node goes). Layout work:
it chooses the bootstrap parts from the spec.

Every cloud's layout calls `node_parts` with what only it knows (how many fabric devices it wired,
the by-id globs of local NVMe, the fabric enablement parts, the hook that takes an unhealthy node
out of service) and renders the result with `cloud_init` or `startup_script`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from .. import bootstrap, catalog
from ..bootstrap import Part
from ..bootstrap.grid_driver import grid_driver_part
from ..bootstrap.health import HealthCheck, health_part
from ..bootstrap.interruption import interruption_part
from ..bootstrap.metrics import metrics_part
from ..bootstrap.mig import mig_part
from ..bootstrap.mounts import Mount, mounts_part
from ..bootstrap.scratch import Scratch, scratch_part
from ..catalog import releases
from ..spec import ClusterSpec


def gpu_name_text(gpu: str | None) -> str:
    """What every `nvidia-smi` GPU name of the model contains: `A100-80GB` -> `A100` (NVIDIA A100-SXM4-80GB)."""
    return (gpu or "").split("-")[0]


def health_check(spec: ClusterSpec, fabric_devices: int, nvme_globs: tuple[str, ...]) -> HealthCheck | None:
    if spec.health_action is None:
        return None
    row = spec.instance
    mig = spec.gpu_partition[1] * row.gpus if spec.gpu_partition else 0
    # The GPU checks (nvidia-smi, ECC, MIG, DCGM diag) are NVIDIA's: on other GPUs they would fail every healthy node,
    # so they are left out there and the check covers fabric, NVMe and mounts only (catalog.vendor_gaps says so).
    nvidia = row.gpu_vendor == "nvidia"
    return HealthCheck(
        gpus=row.gpus if nvidia else 0,
        gpu_model=gpu_name_text(row.gpu) if nvidia else "",
        dcgm_level=HealthCheck.dcgm_level if nvidia else 0,
        gpu_vendor=row.gpu_vendor,
        fabric_kind=row.fabric if spec.fabric_wired and fabric_devices else "none",
        fabric_devices=fabric_devices if spec.fabric_wired else 0,
        nvme_devices=row.localNvmeCount if nvme_globs else 0,
        nvme_globs=nvme_globs,
        action=spec.health_action,
        mig_devices=mig,
    )


def grid_driver(spec: ClusterSpec) -> dict[str, str] | None:
    """The GRID driver the node installs itself: the `gridDriver` of the catalog image it boots (`image: auto`, a
    pinned release), None on other images (an image of your own brings its driver) and on Kubernetes pools (their
    images are the managed service's)."""
    if spec.scheduler == "kubernetes" or not releases.is_catalog_image(spec.cloud, spec.image):
        return None
    driver: dict[str, str] | None = catalog.gpu_image(spec.cloud, spec.instance).get("gridDriver")
    return driver


def grid_driver_summary(spec: ClusterSpec) -> str | None:
    """The plan's line for the GRID driver a node installs itself (None: the image brings its driver)."""
    driver = grid_driver(spec)
    if driver is None:
        return None
    release = f", vGPU software {driver['vgpuSoftware']}" if driver.get("vgpuSoftware") else ""
    return f"NVIDIA GRID {driver['version']}{release}, installed at boot from {driver['url']}"


def node_parts(
    spec: ClusterSpec,
    scratch: Scratch,
    *,
    fabric_devices: int,
    nvme_globs: tuple[str, ...],
    fabric: Sequence[Part] = (),
    unhealthy_hook: str | None = None,
    mounts: Mount | None = None,
) -> tuple[Part, ...]:
    check = health_check(spec, fabric_devices, nvme_globs)
    if check is not None and mounts is not None:
        check = replace(check, mounts=(mounts.path,))
    # Kubernetes nodes: an empty part (the in-cluster handler or the managed pool drains them)
    drain = interruption_part(spec.cloud, spec.scheduler, managed=spec.node_group == "managed")
    parts = (
        scratch_part(scratch),
        grid_driver_part(grid_driver(spec)),
        *fabric,
        mig_part(spec.gpu_partition),
        mounts_part(mounts),
        health_part(check, unhealthy_hook),
        metrics_part(spec.dcgm_exporter, spec.instance.gpu_vendor),
        drain,
    )
    # With the drain the scripts go without their comments: EC2 and Alibaba take 16 KB of gzip user data, which a
    # Slurm node with EFS over TLS would pass. Nodes without it (Kubernetes) keep their user data byte for byte.
    return parts if drain.empty else bootstrap.without_comments(parts)
