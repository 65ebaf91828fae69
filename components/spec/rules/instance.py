"""The instance type: `gpu`/`instanceType` resolved against the catalog and availability data, the zone, and what
the resolved type decides (fabric, MIG partition, GPU vendor, CPU architecture)."""

from __future__ import annotations

import re
from collections.abc import Iterator

from ... import catalog
from ...catalog import CLOUDS, Cloud, releases
from ...catalog import capacity as capacity_offers
from ...catalog import storage as shared_storage
from ...errors import CLUSTER_KEY, ConfigError
from ..context import Context
from ..model import ClusterConfig

GPU_PATTERN = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9 _.-]*?)\s*(?::\s*(\d+)\s*(?:/\s*(\d+)\s*)?)?$")


def parse_gpu_request(text: str) -> tuple[str, int, str | None]:
    """`H100:8` -> ("H100", 8, None); `a100-80gb` -> ("A100-80GB", 1, None); `L4:1/8` -> ("L4", 1, "1/8"), a vGPU
    slice of one GPU. Raises ValueError with the reason."""
    match = GPU_PATTERN.match(text) if isinstance(text, str) else None
    if not match:
        raise ValueError(f"{text!r} is not MODEL, MODEL:COUNT or MODEL:1/N (for example H100:8 or L4:1/8)")
    model, count_text, denominator = match.group(1), match.group(2), match.group(3)
    canonical = catalog.normalize_gpu(model)
    if canonical is None:
        known = ", ".join(sorted(set(catalog.gpu_aliases().values())))
        raise ValueError(f"unknown GPU model {model!r}; known models: {known}")
    if denominator is not None:
        if int(count_text) != 1 or int(denominator) < 2:
            raise ValueError(f"slice {count_text}/{denominator} is not 1/N with N of 2 or more (for example L4:1/8)")
        return canonical, 1, f"1/{int(denominator)}"
    count = int(count_text) if count_text is not None else 1
    if not 1 <= count <= 16:
        raise ValueError(f"GPU count {count} is out of range; allowed: 1 to 16 per node")
    return canonical, count, None


def parse_gpu(text: str) -> tuple[str, int]:
    """`H100:8` -> ("H100", 8); `a100-80gb` -> ("A100-80GB", 1); a slice (`L4:1/8`) counts as its one virtual GPU.
    Raises ValueError with the reason."""
    model, count, _ = parse_gpu_request(text)
    return model, count


def _trains_across_nodes(cfg: ClusterConfig) -> bool:
    """Whether the nodes run one job together, so NCCL needs a fabric between them: more than one node (maxNodes
    counts), unless fabric is none (the ordinary network is accepted) or a scaling fleet (independent replicas; the
    placement rule reads a fleet so too)."""
    max_nodes = cfg.max_nodes if cfg.max_nodes is not None else cfg.nodes
    fleet = cfg.scaling is not None and cfg.scaling.metric != "none"
    return max_nodes > 1 and cfg.fabric != "none" and not fleet


def _fabric_check(cloud: Cloud, cfg: ClusterConfig) -> catalog.FabricCheck | None:
    """What a multi-node cluster's type must pass: a fabric NCCL can use on the catalog's image (auto, latest or a
    pinned release: the catalog vouches for it), or on a custom image a fabric at all (the image may bring the software;
    the plan says what it cannot vouch for); None when the nodes do not train together."""
    if not _trains_across_nodes(cfg):
        return None
    return catalog.fabric_usable if releases.is_catalog_image(cloud, cfg.image) else catalog.fabric_present


def resolve_type(cloud: Cloud, cfg: ClusterConfig, region: str | None = None) -> catalog.Resolution:
    """The type for the config; with a region, one the availability data does not rule out there. Multi-node
    (`_trains_across_nodes`), `gpu: MODEL:COUNT` prefers a type whose fabric NCCL can use; the resolution carries
    `fabric_problem` when the type has none (`_instance_type` refuses it for `gpu:`, warns for a configured type)."""
    wanted: tuple[str, int] | None = None
    fraction: str | None = None
    check = _fabric_check(cloud, cfg)
    if cfg.gpu is not None:
        try:
            model, count, fraction = parse_gpu_request(cfg.gpu)
            wanted = (model, count)
        except ValueError as exc:
            raise ConfigError(f"{CLUSTER_KEY}.gpu", str(exc)) from None
    if cfg.instance_type is not None:
        rows = catalog.find(cloud, cfg.instance_type)
        if not rows:
            raise ConfigError(
                f"{CLUSTER_KEY}.instanceType",
                f"{cfg.instance_type!r} is not a GPU type gpu-cluster knows on {cloud}; "
                f"see `gpu-cluster catalog --cloud {cloud}`",
            )
        if wanted is not None:
            rows = [r for r in rows if (r.gpu, r.gpus) == wanted and r.gpuFraction == fraction]
            if not rows:
                have = ", ".join(r.gpu_request for r in catalog.find(cloud, cfg.instance_type))
                raise ConfigError(
                    f"{CLUSTER_KEY}.gpu",
                    f"gpu {cfg.gpu} disagrees with instanceType {cfg.instance_type}, which has {have}",
                )
        if len(rows) > 1:
            options = ", ".join(f"{r.gpu}:{r.gpus}" for r in rows)
            raise ConfigError(
                f"{CLUSTER_KEY}.gpu", f"{cfg.instance_type} takes several GPU configurations ({options}); set gpu"
            )
        gpu = rows[0].gpu  # n1's availability is per GPU
        unsold = None if region is None else catalog.availability.why_not(cloud, cfg.instance_type, region, gpu=gpu)
        if unsold:
            raise ConfigError(f"{CLUSTER_KEY}.instanceType", unsold)
        ok, why = check(rows[0]) if check is not None else (True, "")
        problem = None if ok else f"{cfg.instance_type} has no fabric NCCL can use between nodes ({why})"
        return catalog.Resolution(rows[0], f"instanceType {cfg.instance_type} as configured", problem)
    if wanted is None:
        raise ConfigError(CLUSTER_KEY, "set gpu (MODEL:COUNT, for example H100:8) or instanceType")
    try:
        return catalog.resolve(cloud, *wanted, region=region, fabric=check, fraction=fraction)
    except catalog.CatalogError as exc:
        raise ConfigError(f"{CLUSTER_KEY}.gpu", str(exc)) from None


def zone_of(ctx: Context) -> str | None:
    """The configured zone; else, once the type is resolved, the first zone of the region that sells it,
    where the availability data lists the cloud's zones (GCP); else None (the cloud's own default)."""
    zone_key = ctx.rules["zoneKey"]
    zone = ctx.cfg.zone or (ctx.values.get(zone_key) if zone_key else None)
    if zone is None and ctx.row is not None:
        selling = catalog.availability.zones_selling(ctx.cloud, ctx.row.instanceType, ctx.region, gpu=ctx.row.gpu)
        return selling[0] if selling else None
    return None if zone is None else str(zone)


def _zone(ctx: Context) -> Iterator[ConfigError]:
    zone = zone_of(ctx)
    pattern = ctx.rules["zonePattern"].format(region=re.escape(ctx.region))
    if zone is not None and not re.fullmatch(pattern, str(zone)):
        yield ConfigError(f"{CLUSTER_KEY}.zone", f"got {zone!r}; it must be a zone of {ctx.region} on {ctx.cloud}")


def _zone_known(ctx: Context) -> Iterator[ConfigError]:
    """A configured zone the availability data lists for no GPU type of the region is refused, where the data knows
    the region's GPU zones (catalog/capacity.yaml zonesKnown: GCP); a listed zone that does not sell the type stays a
    warning (`_instance_type`): per-zone offers change more often than the list of zones."""
    row, zone_key = ctx.row, ctx.rules["zoneKey"]
    configured = ctx.cfg.zone or (ctx.values.get(zone_key) if zone_key else None)
    if row is None or configured is None or not capacity_offers.zones_known(ctx.cloud):
        return
    pattern = ctx.rules["zonePattern"].format(region=re.escape(ctx.region))
    if not re.fullmatch(pattern, str(configured)):
        return  # `_zone` said so
    offer = catalog.availability.offer(ctx.cloud, row.instanceType, gpu=row.gpu)
    listed = capacity_offers.zones_listed(ctx.cloud, ctx.region)
    if offer is None or not offer.zones_in(ctx.region) or str(configured) in listed:
        return
    data = catalog.availability.load(ctx.cloud)
    what = catalog.availability.label(ctx.cloud, row.instanceType, gpu=row.gpu)
    yield ConfigError(
        f"{CLUSTER_KEY}.zone" if ctx.cfg.zone else str(zone_key),
        f"got {configured!r}; no GPU type is sold in such a zone of {ctx.region}: "
        f"catalog/availability/{ctx.cloud}.yaml (read {data.date}) lists {', '.join(listed)} there, and {what} in "
        f"{', '.join(offer.zones_in(ctx.region))}; use one of those",
    )


def _other_cloud_blocks(ctx: Context) -> Iterator[ConfigError]:
    for other in CLOUDS:
        if other != ctx.cloud and getattr(ctx.cfg, other) is not None:
            yield ConfigError(
                f"{CLUSTER_KEY}.{other}", f"options for {other}, but gpu-cluster:cloud is {ctx.cloud}; remove the block"
            )


def _instance_type(ctx: Context) -> Iterator[ConfigError]:
    try:
        ctx.resolution = resolve_type(ctx.cloud, ctx.cfg, ctx.region)
    except ConfigError as exc:
        yield exc
        return
    problem = ctx.resolution.fabric_problem
    if problem and ctx.cfg.instance_type is None:
        # resolved from gpu: nothing of that count has a fabric NCCL can use, and the user has not said that is fine
        picked = ctx.resolution.type
        # a wired fabric the catalog cannot vouch for may still be wanted: naming the type takes it, with a warning
        as_is = (
            f"set instanceType: {picked.instanceType} to take its {picked.fabric} as it is, "
            if picked.has_fabric
            else ""
        )
        yield ConfigError(
            f"{CLUSTER_KEY}.gpu",
            f"{ctx.cfg.gpu} for {ctx.max_nodes} nodes that train together: {problem}; or {as_is}set fabric: none to "
            "accept nodes that talk over the ordinary network",
        )
    elif problem:  # a configured type: the user chose it, so a warning, said loudly
        ctx.warn(
            "instanceType",
            f"{problem}; {ctx.max_nodes} nodes that train together would talk over the ordinary network; set "
            "fabric: none if that is intended",
        )
    zone_key = ctx.rules["zoneKey"]
    configured = ctx.cfg.zone or (ctx.values.get(zone_key) if zone_key else None)
    row, where = ctx.row, f"catalog/availability/{ctx.cloud}.yaml"
    if row is None:
        return
    what = catalog.availability.label(ctx.cloud, row.instanceType, gpu=row.gpu)  # `n1-standard-96 with T4`
    offer = catalog.availability.offer(ctx.cloud, row.instanceType, gpu=row.gpu)
    if offer is not None and catalog.availability.sold_in(ctx.cloud, row.instanceType, ctx.region, gpu=row.gpu) is None:
        ctx.warn(
            "instanceType",
            f"{what} in {ctx.region}: unknown, {where} does not cover {ctx.region}; it lists "
            f"{what} in {', '.join(catalog.availability.nearest_first(ctx.region, offer.regions))}",
        )
    if configured is not None:
        # A configured zone the data does not list is warned, not refused: per-zone offers change more often
        # than per-region ones, and the source is a snapshot (its date is in the message).
        unsold = catalog.availability.why_not(ctx.cloud, row.instanceType, ctx.region, str(configured), gpu=row.gpu)
        if unsold:
            ctx.warn("zone", f"{unsold}; the deploy fails there unless the zone sells it by then")
    elif (defaulted := zone_of(ctx)) is not None:
        ctx.warn(
            "zone",
            f"not set; {defaulted}, the first zone of {ctx.region} that sells {what} "
            f"({where}, read {catalog.availability.load(ctx.cloud).date}); set zone to choose",
            "info",
        )


def _fabric(ctx: Context) -> Iterator[ConfigError]:
    row = ctx.row
    if row is not None and ctx.cfg.fabric == "required" and not row.has_fabric:
        yield ConfigError(
            f"{CLUSTER_KEY}.fabric",
            f"required, but {row.instanceType} has no HPC fabric; pick a type that has one or use auto",
        )
    if row is not None and row.has_fabric and not ctx.fabric_wired and ctx.max_nodes > 1:
        ctx.warn(
            "fabric",
            f"none: {row.instanceType} has {row.fabricGbps:g} Gb/s of {row.fabric} "
            "that multi-node training will not use",
        )


def _gpu_partition(ctx: Context) -> Iterator[ConfigError]:
    profile, row = ctx.cfg.gpu_partition, ctx.row
    if profile is None or row is None:
        return
    profiles = catalog.mig_profiles(row)
    key = f"{CLUSTER_KEY}.gpuPartition"
    if profiles is None:
        what = (
            f"{row.gpuFraction} vGPU slice of {row.instanceType} (a slice of the host's GPU)" if row.gpuFraction else ""
        )
        yield ConfigError(
            key,
            f"the {what} has no MIG partitioning; use a whole-GPU type"
            if what
            else f"{row.gpu or row.gpuDescription} GPUs of {row.instanceType} have no MIG partitioning",
        )
    elif profile not in profiles:
        yield ConfigError(key, f"got {profile!r}; {row.gpu} takes {', '.join(profiles)} (NVIDIA MIG User Guide)")


def _gpu_vendor(ctx: Context) -> Iterator[ConfigError]:
    """On GPUs that are not NVIDIA's, the plan says what the node bootstrap does not cover (catalog.vendor_gaps)."""
    row = ctx.row
    if row is None:
        return
    for gap in catalog.vendor_gaps(row, health=ctx.cfg.health.enabled, metrics=ctx.cfg.monitoring.dcgm_exporter):
        ctx.warn("instanceType", gap)
    yield from ()


def _cpu_arch(ctx: Context) -> Iterator[ConfigError]:
    """On hosts that are not x86_64 (Grace), the plan says what the node bootstrap does not vouch for there
    (catalog.arch_gaps: the Lustre clients' arm64 builds)."""
    row, shared = ctx.row, ctx.cfg.storage.shared
    if row is None or row.arch == "x86_64":
        return
    offered = shared_storage.load(ctx.cloud) if shared is not None else None
    service = offered.service(shared.kind) if offered is not None and shared is not None else None
    for gap in catalog.arch_gaps(row, lustre=service is not None and service.kind == "lustre"):
        ctx.warn("storage.shared", gap)
    yield from ()
