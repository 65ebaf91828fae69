"""`scheduler` and its blocks: Kubernetes (catalog/kubernetes) and Slurm (catalog/names.yaml `slurm:`)."""

from __future__ import annotations

from collections.abc import Iterator

from ... import catalog
from ...catalog import kubernetes as kubernetes_offers
from ...catalog import names as derived_names
from ...catalog.capabilities import capabilities
from ...cidr import wide_public
from ...errors import CLUSTER_KEY, ConfigError
from ...text import one_line
from ..context import Context
from ..model import KubernetesConfig, SlurmConfig


def _scheduler(ctx: Context) -> Iterator[ConfigError]:
    """`scheduler` and its own block: offered by the cloud (capabilities, catalog/kubernetes), used alone."""
    cfg, k = ctx.cfg, f"{CLUSTER_KEY}."
    caps = capabilities(ctx.cloud)
    if cfg.scheduler not in caps.schedulers:
        yield ConfigError(
            f"{k}scheduler",
            f"{cfg.scheduler} is not built on {ctx.cloud} ({caps.schedulers_why}); "
            f"allowed: {', '.join(caps.schedulers)}",
        )
        return
    for block in ("kubernetes", "slurm"):
        if getattr(cfg, block) is not None and cfg.scheduler != block:
            yield ConfigError(f"{k}{block}", f"options for scheduler {block}, but scheduler is {cfg.scheduler}")
    if cfg.scheduler == "kubernetes":
        yield from _kubernetes(ctx, cfg.kubernetes or KubernetesConfig())
    elif cfg.scheduler == "slurm":
        yield from _slurm(ctx, cfg.slurm or SlurmConfig())


def _kubernetes(ctx: Context, kube: KubernetesConfig) -> Iterator[ConfigError]:
    cfg, k = ctx.cfg, f"{CLUSTER_KEY}."
    offer = kubernetes_offers.offer(ctx.cloud)
    if offer is None:  # the capabilities list kubernetes, so the data must exist: a packaging mistake
        yield ConfigError(f"{k}scheduler", f"kubernetes has no catalog/kubernetes/{ctx.cloud}.yaml")
        return
    if cfg.node_group == "instances":
        yield ConfigError(
            f"{k}nodeGroup",
            f"instances, but scheduler kubernetes runs the GPU nodes as a {offer.service} node pool; use managed",
        )
    if kube.version is not None and kube.version not in offer.versions:
        yield ConfigError(
            f"{k}kubernetes.version",
            f"got {kube.version!r}; {offer.service} offers {', '.join(offer.versions)} "
            f"(read {offer.read}: {offer.source})",
        )
    refused = offer.extra.get("publicEndpointRefused")
    if kube.public_endpoint and refused:
        yield ConfigError(f"{k}kubernetes.publicEndpoint", f"true, but {one_line(refused)}")
    if kube.public_endpoint and not kube.public_cidrs:
        yield ConfigError(
            f"{k}kubernetes.publicCidrs",
            "empty, but publicEndpoint is true: list the CIDRs allowed to reach the API server",
        )
    if kube.public_cidrs and not kube.public_endpoint:
        yield ConfigError(f"{k}kubernetes.publicCidrs", "set, but publicEndpoint is false: the API stays private")
    for cidr in kube.public_cidrs:
        if wide_public(cidr):
            yield ConfigError(
                f"{k}kubernetes.publicCidrs",
                f"{cidr} opens the API server to much of the internet; list narrower CIDRs",
            )
    system = kube.system_instance_type
    if system is not None and catalog.find(ctx.cloud, system):
        yield ConfigError(
            f"{k}kubernetes.systemInstanceType",
            f"{system} is a GPU type; the system pool is CPU, such as {offer.systemInstanceType}",
        )


def _slurm(ctx: Context, slurm: SlurmConfig) -> Iterator[ConfigError]:
    cfg, k = ctx.cfg, f"{CLUSTER_KEY}."
    if cfg.nodes == 0:
        yield ConfigError(
            f"{k}nodes",
            "0 with scheduler slurm: the partition would be empty (Slurm power saving is not built, "
            "so the group size is nodes); use 1 or more",
        )
    if slurm.accounting:
        yield ConfigError(
            f"{k}slurm.accounting",
            "true, but slurmdbd (accounting) is not built yet; use false (jobs run, sacct has no history)",
        )
    if cfg.gpu_partition is not None:
        yield ConfigError(
            f"{k}gpuPartition",
            f"{cfg.gpu_partition} with scheduler slurm: MIG instances as Slurm GRES are not built; "
            "drop gpuPartition (whole GPUs are the GRES)",
        )
    if cfg.network.egress != "nat":
        yield ConfigError(
            f"{k}network.egress",
            f"{cfg.network.egress} with scheduler slurm: the head, GPU and login nodes install Slurm and MUNGE at "
            "boot from packages.microsoft.com and Ubuntu's archive (catalog/slurm.yaml); use nat",
        )
    head = slurm.head_instance_type
    if head is not None and catalog.find(ctx.cloud, head):
        yield ConfigError(
            f"{k}slurm.headInstanceType",
            f"{head} is a GPU type; the head node is a small CPU VM such as "
            f"{capabilities(ctx.cloud).login_default_type}",
        )


def _slurm_names(ctx: Context) -> Iterator[ConfigError]:
    """`slurm.partition`: not a word slurm.conf reads as its defaults record (catalog/names.yaml `slurm:`)."""
    slurm = ctx.cfg.slurm
    word = None if slurm is None else derived_names.reserved_partition(slurm.partition)
    if slurm is not None and word is not None:
        yield ConfigError(
            f"{CLUSTER_KEY}.slurm.partition",
            f"got {slurm.partition!r}; PartitionName={word} is slurm.conf's defaults record (compared without case), "
            "not a partition: the cluster would come up with none (catalog/names.yaml: SchedMD/slurm "
            "read_config.c _parse_partitionname); use another name such as gpu",
        )
