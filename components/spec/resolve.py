"""The auto values, resolved once every rule passed: placement, health action, MIG partition, and the scaling,
Kubernetes and Slurm blocks; `resolve` assembles the `ClusterSpec`."""

from __future__ import annotations

from typing import Literal

from .. import catalog
from ..catalog import Cloud, InstanceType
from ..catalog import kubernetes as kubernetes_offers
from ..catalog.capabilities import capabilities
from ..text import one_line
from .context import Context
from .model import AlicloudOptions, AzureOptions, ClusterConfig, GcpOptions, KubernetesConfig, LoginConfig, SlurmConfig
from .resolved import BudgetSpec, ClusterSpec, KubernetesSpec, PartitionSpec, ScalingSpec, ServeSpec
from .rules.budget import budget_data
from .rules.capacity import flex_start_loose
from .rules.identity import check_access
from .rules.instance import zone_of
from .rules.monitoring import resolve_prometheus
from .rules.scaling import min_nodes
from .rules.serve import DEFAULT_HEALTH_PATH
from .rules.update import update_spec


def _compact_fixed_count(ctx: Context) -> str | None:
    """Why `placement: auto` resolves to none for one GCP VM whose placement would be a compact (COLLOCATED) policy:
    such a policy fixes its VM count (vmCount), so a count change recreates it and the nodes anyway (updates.yaml
    cluster.nodes) and one VM has no neighbour. A MIG of a workload-policy type (catalog/gcp.yaml
    workloadPolicyTypes) and a GKE pool (COMPACT) take no count: they keep their placement at one node."""
    cfg, row = ctx.cfg, ctx.row
    if ctx.cloud != "gcp" or row is None or ctx.max_nodes > 1 or cfg.scheduler == "kubernetes":
        return None
    if (
        cfg.slurm is not None and cfg.slurm.partitions
    ):  # their policies have no vmCount (layout/gcp partition_placement)
        return None
    if cfg.node_group == "managed" and row.instanceType in ctx.rules["workloadPolicyTypes"]:
        return None
    return (
        f"auto resolves to none at one node: {row.instanceType} would get a compact placement policy, which fixes its "
        "VM count (vmCount), so a count change recreates it and the nodes anyway; one VM has no neighbour"
    )


def _placement(ctx: Context) -> Literal["cluster", "spread", "none"]:
    """`placement: auto` resolved, then what the cloud's managed groups can apply (capabilities data).

    auto is cluster at any node count (docs/day2.md "Placement at one node"): every cloud's group (AWS placement
    group, Azure proximity placement group, GCP workload policy and GKE COMPACT pool, Alibaba deployment set, Tencent
    placement group) is created with no member count and accepts one member, so a cluster shrunk to one node keeps
    its group, and that node, and grows back in place. It is none only for a stated reason (each said as info)."""
    cfg = ctx.cfg
    placement: Literal["cluster", "spread", "none"]
    if cfg.placement == "auto":
        if cfg.reservation:
            placement = "none"
            ctx.warn(
                "placement",
                "auto resolves to none with a reservation: a forced cluster placement group breaks capacity "
                "reservations (aws-parallelcluster#4215)",
                "info",
            )
        elif (loose := flex_start_loose(ctx)) is not None:
            placement = "none"
            ctx.warn("placement", loose)
        elif cfg.scaling is not None and cfg.scaling.metric != "none" and not ctx.fabric_wired:
            # a fleet that grows and shrinks: a cluster placement group would cap where new nodes can land
            # (GCP compact placement fixes the VM count), and nothing between its nodes needs the locality
            placement = "none"
            ctx.warn("placement", "auto resolves to none for a scaling fleet without a fabric", "info")
        elif cfg.spot.enabled and not capabilities(ctx.cloud).spot_with_placement:
            # the layout would drop it anyway (the cloud's applied_placement); said here, as info
            placement = "none"
            ctx.warn(
                "placement",
                f"auto resolves to none for spot nodes: {ctx.cloud} places no spot nodes in a placement group "
                "(catalog/capabilities spotWithPlacement)",
                "info",
            )
        elif (fixed := _compact_fixed_count(ctx)) is not None:
            placement = "none"
            ctx.warn("placement", fixed, "info")
        else:
            placement = "cluster"
            if ctx.max_nodes > 1:
                why = "maxNodes > 1"
            elif ctx.fabric_wired:
                why = "the fabric is wired"
            else:
                why = "also at one node: the group keeps the node when the cluster shrinks to one and grows back"
            ctx.warn("placement", f"auto resolves to cluster ({why})", "info")
    else:
        placement = cfg.placement
    if placement == "cluster" and cfg.reservation:
        ctx.warn(
            "placement", "a reservation with a cluster placement group may fail for capacity; prefer placement: auto"
        )
    row = ctx.row
    if row is not None and ctx.fabric_wired and placement != "cluster" and ctx.max_nodes > 1:
        ctx.warn(
            "placement",
            f"{row.fabric} is wired but placement is {placement}: "
            "fabric latency and bandwidth between nodes are not guaranteed",
        )
    return placement


def _health_action(cfg: ClusterConfig) -> Literal["replace", "report"] | None:
    if not cfg.health.enabled:
        return None
    if cfg.health.action == "auto":
        return "replace" if cfg.node_group == "managed" else "report"
    return cfg.health.action


def _partition(cfg: ClusterConfig, row: InstanceType) -> tuple[str, int] | None:
    if cfg.gpu_partition is None:
        return None
    profiles = catalog.mig_profiles(row) or {}
    return cfg.gpu_partition, profiles[cfg.gpu_partition]


def _scaling_spec(cfg: ClusterConfig) -> ScalingSpec | None:
    scaling = cfg.scaling
    if scaling is None or scaling.metric == "none":
        return None
    return ScalingSpec(
        metric=scaling.metric,
        target=scaling.target,
        queue=scaling.queue,
        schedule=scaling.schedule,
        time_zone=scaling.time_zone,
        scale_in_cooldown_seconds=scaling.scale_in_cooldown_seconds,
    )


def _serve_spec(cfg: ClusterConfig) -> ServeSpec | None:
    serve = cfg.serve
    if serve is None:
        return None
    path = (serve.health_path or DEFAULT_HEALTH_PATH) if serve.protocol == "http" else None
    return ServeSpec(
        port=serve.port,
        protocol=serve.protocol,
        health_path=path,
        public=serve.public,
        certificate=serve.certificate,
        allowed_cidrs=serve.allowed_cidrs,
        idle_timeout_seconds=serve.idle_timeout_seconds,
        requests_per_node=serve.requests_per_node,
    )


def _kubernetes_spec(cloud: Cloud, cfg: ClusterConfig) -> KubernetesSpec | None:
    offer = kubernetes_offers.offer(cloud)
    if cfg.scheduler != "kubernetes" or offer is None:
        return None
    kube = cfg.kubernetes or KubernetesConfig()
    return KubernetesSpec(
        version=kube.version or offer.default,
        public_endpoint=kube.public_endpoint,
        public_cidrs=kube.public_cidrs,
        gpu_software=kube.gpu_software,
        system_instance_type=kube.system_instance_type or offer.systemInstanceType,
        system_nodes=kube.system_nodes,
        service_monitor=kube.service_monitor,
        gpu_sharing=kube.gpu_sharing,
        cluster_name=kube.cluster_name,
    )


def _slurm_spec(cloud: Cloud, cfg: ClusterConfig) -> SlurmConfig | None:
    if cfg.scheduler != "slurm":
        return None
    slurm = cfg.slurm or SlurmConfig()
    head = slurm.head_instance_type or capabilities(cloud).login_default_type
    return slurm.model_copy(update={"head_instance_type": head})


def _partitions(cloud: Cloud, cfg: ClusterConfig, row: InstanceType) -> tuple[PartitionSpec, ...]:
    """Each elastic partition with its catalog row (the cluster's type by default); the first is the default unless
    one says it is (the rules allowed at most one)."""
    if cfg.scheduler != "slurm" or cfg.slurm is None or not cfg.slurm.partitions:
        return ()
    parts = cfg.slurm.partitions
    marked = any(p.default for p in parts)
    out = []
    for i, part in enumerate(parts):
        # the rules refused a type the catalog does not have or has with several GPU models
        found = catalog.find(cloud, part.instance_type)[0] if part.instance_type else row
        default = part.default if marked else i == 0
        out.append(PartitionSpec(part.name, found, part.min_nodes, part.max_nodes, part.spot, default))
    return tuple(out)


def _budget_spec(cloud: Cloud, cfg: ClusterConfig) -> BudgetSpec | None:
    """`budget` with its currency: the one given, or the cloud's billing currency (the `_budget` rule passed)."""
    budget = cfg.budget
    if budget is None:
        return None
    data = budget_data(cloud)
    currency = data["currencies"][0] if budget.currency == "auto" else budget.currency
    source = "given" if budget.currency != "auto" else f"the default on {cloud}: {one_line(data['currencySource'])}"
    return BudgetSpec(
        monthly=float(budget.monthly),
        currency=currency,
        currency_source=source,
        thresholds=tuple(float(t) for t in budget.thresholds),
        forecast=None if budget.forecast is None else float(budget.forecast),
        notify=budget.notify,
        billing_account=budget.billing_account,
    )


def resolve(ctx: Context, project: str, gcp_project: str | None, max_hourly: float | None) -> ClusterSpec:
    """The spec of a config every rule of `CROSS_RULES` passed (the context holds what they resolved)."""
    cloud, stack = ctx.cloud, ctx.stack
    cfg = ctx.cfg  # with what the rules resolved (nodeGroup's default)
    assert ctx.resolution is not None  # _instance_type yielded no error
    row = ctx.resolution.type
    placement = _placement(ctx)
    if cfg.scheduler == "slurm" and cfg.login is None:
        # users reach the cluster through the login node: sbatch/srun run there
        cfg = cfg.model_copy(update={"login": LoginConfig()})
    access, login = check_access(cloud, cfg, ctx.findings)
    prometheus = resolve_prometheus(cloud, cfg)
    scratch: Literal["nvme", "disk", "none"] = (
        ("nvme" if row.localNvmeCount > 0 else "disk") if cfg.storage.scratch == "auto" else cfg.storage.scratch
    )
    return ClusterSpec(
        project=project,
        stack=stack,
        cloud=cloud,
        region=ctx.region,
        zone=zone_of(ctx),
        name=cfg.name or stack,
        instance=row,
        resolution=ctx.resolution.reason,
        nodes=cfg.nodes,
        max_nodes=ctx.max_nodes,
        node_group=cfg.node_group,
        spot=cfg.spot.enabled,
        # a disabled spot block is refused when it sets these, so they hold only with enabled
        spot_on_demand_base=cfg.spot.on_demand_base,
        spot_fallback=cfg.spot.fallback,
        min_nodes=min_nodes(cfg),
        encryption_key=cfg.encryption.key,
        encryption_algorithm=cfg.encryption.algorithm,
        encryption_kms_instance=cfg.encryption.kms_instance,
        compliance=cfg.compliance,
        scaling=_scaling_spec(cfg),
        serve=_serve_spec(cfg),
        reservation=cfg.reservation,
        reservation_type=cfg.reservation_type,
        fabric_wired=ctx.fabric_wired,
        placement=placement,
        scratch=scratch,
        storage=cfg.storage,
        network=cfg.network,
        image=cfg.image,
        admin_user=cfg.admin_user,
        ssh_public_key=cfg.ssh_public_key,
        tags=dict(sorted(cfg.tags.items())),
        findings=tuple(ctx.findings),
        gcp_project=gcp_project,
        access=access,
        identity=cfg.identity,
        login=login,
        health_action=_health_action(cfg),
        dcgm_exporter=cfg.monitoring.dcgm_exporter,
        prometheus=prometheus,
        monitoring=cfg.monitoring,
        gpu_partition=_partition(cfg, row),
        max_hourly_usd=max_hourly,
        scheduler=cfg.scheduler,
        kubernetes=_kubernetes_spec(cloud, cfg),
        slurm=_slurm_spec(cloud, cfg),
        partitions=_partitions(cloud, cfg, row),
        update=update_spec(cloud, cfg),
        budget=_budget_spec(cloud, cfg),
        azure=cfg.azure or AzureOptions(),
        gcp=cfg.gcp or GcpOptions(),
        alicloud=cfg.alicloud or AlicloudOptions(),
    )
