"""`scheduler` and its blocks: Kubernetes (catalog/kubernetes) and Slurm (catalog/names.yaml `slurm:`)."""

from __future__ import annotations

from collections.abc import Iterator

from pydantic.alias_generators import to_camel

from ... import catalog
from ...catalog import accounting as accounting_catalog
from ...catalog import kubernetes as kubernetes_offers
from ...catalog import names as derived_names
from ...catalog import slurm as slurm_catalog
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
    yield from _users(ctx, slurm)
    if slurm.partitions:
        yield from _partitions(ctx, slurm)
    elif cfg.nodes == 0:
        yield ConfigError(
            f"{k}nodes",
            "0 with scheduler slurm: the partition would be empty (its nodes are the group's, always running); use 1 "
            "or more, or slurm.partitions for partitions that scale from zero",
        )
    else:
        for key in ("suspend_after_seconds", "resume_timeout_seconds"):
            if getattr(slurm, key) is not None:
                yield ConfigError(f"{k}slurm.{to_camel(key)}", "set, but there are no slurm.partitions to power save")
    refused = accounting_catalog.refusal(ctx.cloud) if slurm.accounting else None
    if refused is not None:  # catalog/accounting.yaml clouds.<cloud>.notBuilt
        yield ConfigError(f"{k}slurm.accounting", f"true on {ctx.cloud}, but {refused}")
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


def _users(ctx: Context, slurm: SlurmConfig) -> Iterator[ConfigError]:
    """slurm.users: one name and one uid each, none the nodes already have (catalog/slurm.yaml users)."""
    rules, k = slurm_catalog.data()["users"], f"{CLUSTER_KEY}.slurm.users"
    reserved = {*rules["reservedNames"], ctx.cfg.admin_user}
    taken_uid = int(slurm_catalog.data()["slurmUid"])
    names: set[str] = set()
    uids: set[int] = set()
    for i, user in enumerate(slurm.users):
        if user.name in reserved:
            yield ConfigError(
                f"{k}[{i}].name", f"{user.name!r} is a user the nodes already have ({rules['source']}); pick another"
            )
        elif user.name in names:
            yield ConfigError(f"{k}[{i}].name", f"{user.name!r} is listed twice; one entry per person")
        if user.uid == taken_uid:
            yield ConfigError(f"{k}[{i}].uid", f"{user.uid} is the slurm user's uid; pick another in 1000..59999")
        elif user.uid in uids:
            yield ConfigError(f"{k}[{i}].uid", f"{user.uid} is given to two users; each needs its own uid")
        names.add(user.name)
        uids.add(user.uid)


def _partitions(ctx: Context, slurm: SlurmConfig) -> Iterator[ConfigError]:
    """Elastic partitions: the nodes Slurm launches and deletes (power saving), instead of the cluster's group."""
    cfg, k = ctx.cfg, f"{CLUSTER_KEY}."
    refused = slurm_catalog.power_save_refusal(ctx.cloud)
    if refused is not None:
        yield ConfigError(f"{k}slurm.partitions", f"elastic partitions are not built on {ctx.cloud}: {refused}")
        return
    if cfg.nodes != 0:
        yield ConfigError(
            f"{k}nodes",
            f"{cfg.nodes} with slurm.partitions: the partitions' minNodes..maxNodes size the cluster and Slurm "
            "launches their nodes; set nodes: 0",
        )
    for key, value in (("maxNodes", cfg.max_nodes), ("minNodes", cfg.min_nodes)):
        if value is not None:
            yield ConfigError(f"{k}{key}", f"{value} with slurm.partitions: set {key} per partition instead")
    if cfg.scaling is not None and cfg.scaling.metric != "none":
        yield ConfigError(
            f"{k}scaling", "set with slurm.partitions: Slurm launches and deletes the nodes for its queue; drop scaling"
        )
    seen: set[str] = set()
    for i, part in enumerate(slurm.partitions):
        pk = f"{k}slurm.partitions[{i}]"
        if part.name in seen:
            yield ConfigError(f"{pk}.name", f"{part.name!r} names two partitions; each needs its own name")
        seen.add(part.name)
        word = derived_names.reserved_partition(part.name)
        if word is not None:
            yield ConfigError(f"{pk}.name", f"got {part.name!r}; PartitionName={word} is slurm.conf's defaults record")
        if part.min_nodes > part.max_nodes:
            yield ConfigError(
                f"{pk}.minNodes", f"{part.min_nodes} is above maxNodes {part.max_nodes}; use 0..{part.max_nodes}"
            )
        rows = catalog.find(ctx.cloud, part.instance_type) if part.instance_type else [None]
        if not rows:
            yield ConfigError(
                f"{pk}.instanceType",
                f"{part.instance_type} is not a GPU type of the {ctx.cloud} catalog; `gpu-cluster compare` lists them",
            )
        elif len(rows) > 1:
            yield ConfigError(
                f"{pk}.instanceType",
                f"{part.instance_type} comes with several GPU models; give the partition a type with one",
            )
    defaults = [p.name for p in slurm.partitions if p.default]
    if len(defaults) > 1:
        yield ConfigError(
            f"{k}slurm.partitions", f"{', '.join(defaults)} are all default; mark one (or none: the first)"
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
