"""GPU sharing: `kubernetes.gpuSharing` (catalog/kubernetes/sharing.yaml, catalog/mig.yaml) and the Slurm GRES of
MIG instances and MPS (`gpuPartition`, `slurm.mps`)."""

from __future__ import annotations

from collections.abc import Iterator

from ... import catalog
from ...catalog import kubernetes as kubernetes_offers
from ...errors import CLUSTER_KEY, ConfigError
from ...text import one_line
from ..context import Context
from ..model import GpuSharingConfig

SHARED_MODES = ("timeSlicing", "mps")  # the modes that advertise each GPU `replicas` times


def _gpu_sharing(ctx: Context) -> Iterator[ConfigError]:
    """kubernetes.gpuSharing: its keys agree with its mode, the cloud builds the mode, the GPU has the MIG profile."""
    cfg = ctx.cfg
    if cfg.kubernetes is None:
        return
    sharing, k = cfg.kubernetes.gpu_sharing, f"{CLUSTER_KEY}.kubernetes.gpuSharing"
    yield from _unused_keys(sharing)
    if cfg.scheduler != "kubernetes" or sharing.mode == "none":
        return
    offered = kubernetes_offers.sharing(ctx.cloud)
    if "notBuilt" in offered:
        yield ConfigError(f"{k}.mode", f"{sharing.mode} on {ctx.cloud}, but {one_line(offered['notBuilt'])}")
        return
    mode = offered.get(sharing.mode)
    if mode is None:
        built = ", ".join(m for m in ("timeSlicing", "mps", "mig") if m in offered)
        why = (offered.get("refused") or {}).get(sharing.mode)
        yield ConfigError(
            f"{k}.mode",
            f"{sharing.mode} is not built on {ctx.cloud}: {one_line(why)}"
            if why
            else f"{sharing.mode} is not built on {ctx.cloud}; allowed: none, {built}",
        )
        return
    software = mode.get("gpuSoftware")
    if software and cfg.kubernetes.gpu_software not in software:
        yield ConfigError(
            f"{CLUSTER_KEY}.kubernetes.gpuSoftware",
            f"{cfg.kubernetes.gpu_software} with gpuSharing mode {sharing.mode}: {one_line(mode['refusedWithout'])}",
        )
    if sharing.mode in SHARED_MODES:
        most = mode.get("maxReplicas")
        if sharing.replicas is None:
            yield ConfigError(f"{k}.replicas", f"missing: mode {sharing.mode} needs the pods that share one GPU (2+)")
        elif most is not None and sharing.replicas > int(most):
            yield ConfigError(
                f"{k}.replicas",
                f"{sharing.replicas}, but {ctx.cloud} shares a GPU between at most {most} "
                f"({one_line(offered['source'])})",
            )
    else:
        yield from _mig(ctx, sharing, mode)


def _unused_keys(sharing: GpuSharingConfig) -> Iterator[ConfigError]:
    k = f"{CLUSTER_KEY}.kubernetes.gpuSharing"
    if sharing.replicas is not None and sharing.mode not in SHARED_MODES:
        yield ConfigError(f"{k}.replicas", f"set, but mode is {sharing.mode}: replicas are for timeSlicing and mps")
    if sharing.mig_profile is not None and sharing.mode != "mig":
        yield ConfigError(f"{k}.migProfile", f"set, but mode is {sharing.mode}: a MIG profile is for mode mig")


def _mig(ctx: Context, sharing: GpuSharingConfig, mode: dict[str, object]) -> Iterator[ConfigError]:
    k, row = f"{CLUSTER_KEY}.kubernetes.gpuSharing.migProfile", ctx.row
    if ctx.cfg.gpu_partition is not None:
        yield ConfigError(
            f"{CLUSTER_KEY}.gpuPartition",
            "set with kubernetes.gpuSharing mode mig: the pool's MIG profile is gpuSharing.migProfile alone; drop it",
        )
    if sharing.mig_profile is None:
        yield ConfigError(k, "missing: mode mig needs the profile every GPU is split into, e.g. 1g.10gb")
        return
    if row is None:
        return
    profiles = catalog.mig_profiles(row)
    if profiles is None:
        yield ConfigError(
            f"{CLUSTER_KEY}.kubernetes.gpuSharing.mode",
            f"mig, but the {row.gpu or row.gpuDescription} GPUs of {row.instanceType} have no MIG (catalog/mig.yaml); "
            "use timeSlicing or mps",
        )
        return
    if sharing.mig_profile not in profiles:
        yield ConfigError(
            k, f"got {sharing.mig_profile!r}; {row.gpu} takes {', '.join(profiles)} (NVIDIA MIG User Guide)"
        )
        return
    named = mode.get("profiles")
    if isinstance(named, dict):  # AKS: one gpuInstanceProfile per slice size, its smallest memory
        size = sharing.mig_profile.split(".", 1)[0]
        takes = aks_mig_profiles(profiles, named)
        if takes.get(size) != sharing.mig_profile:
            yield ConfigError(
                k,
                f"{sharing.mig_profile} on {ctx.cloud}: the pool's gpuInstanceProfile ({', '.join(named.values())}) "
                f"takes one profile per slice size, its smallest; {row.gpu} takes {', '.join(takes.values())}",
            )


def aks_mig_profiles(profiles: dict[str, int], named: dict[str, str]) -> dict[str, str]:
    """Slice size (1g, 2g ...) -> the profile a gpuInstanceProfile of that size makes: the most instances per GPU."""
    out = {}
    for size in named:
        sized = [p for p in profiles if p.startswith(f"{size}.")]
        if sized:
            out[size] = max(sized, key=lambda p: profiles[p])
    return out


def _slurm_gres(ctx: Context) -> Iterator[ConfigError]:
    """gpuPartition and slurm.mps as Slurm GRES: on the cluster's own nodes (AutoDetect=nvml finds MIG instances),
    not on elastic partitions, and not together."""
    cfg, k = ctx.cfg, f"{CLUSTER_KEY}."
    if cfg.scheduler != "slurm" or cfg.slurm is None:
        return
    if cfg.slurm.partitions and cfg.gpu_partition:
        yield ConfigError(
            f"{k}gpuPartition",
            f"{cfg.gpu_partition} with slurm.partitions: an elastic partition's CLOUD nodes take no AutoDetect, so "
            "their gres.conf names each device file (slurm_conf.render_gres_conf), and a MIG instance's files "
            "(/dev/nvidia-caps) are numbered by the driver only once the instance exists; drop it or the partitions",
        )
    if cfg.slurm.mps and cfg.gpu_partition is not None:
        yield ConfigError(
            f"{k}slurm.mps",
            f"true with gpuPartition {cfg.gpu_partition}: the MPS GRES is built over whole GPUs (Gres=mps:<100 per "
            "GPU>), not over MIG instances; drop one of them",
        )
