"""The node group: its counts, its kind (managed or instances, and the default), and the image the nodes boot."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

from ... import catalog
from ...catalog import InstanceType, releases
from ...catalog.capabilities import capabilities
from ...errors import CLUSTER_KEY, ConfigError
from ..context import Context
from ..model import ClusterConfig, SlurmConfig


def _node_counts(ctx: Context) -> Iterator[ConfigError]:
    cfg, k = ctx.cfg, f"{CLUSTER_KEY}."
    if cfg.nodes > ctx.max_nodes:
        yield ConfigError(f"{k}nodes", f"{cfg.nodes} is more than maxNodes {ctx.max_nodes}")
    if cfg.node_group == "instances" and cfg.nodes == 0:
        yield ConfigError(
            f"{k}nodes", "0 with nodeGroup: instances creates nothing; use 1 or more, or nodeGroup: managed"
        )
    if cfg.node_group == "instances" and cfg.max_nodes is not None and cfg.max_nodes != cfg.nodes:
        yield ConfigError(f"{k}maxNodes", "only applies to nodeGroup: managed (instances are a fixed count)")


def _node_group(ctx: Context) -> Iterator[ConfigError]:
    caps = capabilities(ctx.cloud)
    # with scheduler kubernetes the managed group is the Kubernetes service's node pool (catalog/kubernetes), not the
    # VM mode's group the capabilities list (Tencent: TKE node pools, no VM-mode auto scaling group yet)
    pool = ctx.cfg.scheduler == "kubernetes" and ctx.cfg.node_group == "managed"
    if ctx.cfg.node_group not in caps.node_groups and not pool:
        yield ConfigError(
            f"{CLUSTER_KEY}.nodeGroup",
            f"{ctx.cfg.node_group} is not built on {ctx.cloud} ({caps.node_groups_why}); "
            f"allowed: {', '.join(caps.node_groups)}",
        )


# What a managed-group limit of the cloud (capabilities `managedGroupLimits`) takes from a wired fabric, read on the
# resolved type: `fabric` the whole wired fabric (Alibaba ESS: no ERI passes both provider and ESS; no card index),
# `placement` the deployment set the fabric's nodes are placed in (at any count: a one-node cluster keeps its set to
# grow back in place, docs/day2.md), `hccCluster` the HCC fabric itself (Tencent).
_FABRIC_LIMITS: dict[str, Callable[[Context, InstanceType], bool]] = {
    "fabric": lambda ctx, row: True,
    "placement": lambda ctx, row: True,
    "hccCluster": lambda ctx, row: True,
}


def _needs_managed(cfg: ClusterConfig) -> str:
    """What in the config only a managed group does ("" when nothing): the keys the spec refuses with instances."""
    spot = cfg.spot
    needs = [
        ("scheduler kubernetes", cfg.scheduler == "kubernetes"),
        ("maxNodes", cfg.max_nodes is not None and cfg.max_nodes != cfg.nodes),
        ("minNodes", cfg.min_nodes is not None and cfg.min_nodes != cfg.nodes),
        ("scaling", cfg.scaling is not None),
        ("spot onDemandBase/fallback", spot.enabled and (spot.on_demand_base > 0 or spot.fallback != "none")),
        ("nodes: 0", cfg.nodes == 0),
    ]
    return ", ".join(what for what, needed in needs if needed)


def _node_group_default(ctx: Context) -> Iterator[ConfigError]:
    """nodeGroup not set: instances where the cloud's managed group would cut the fabric the type is rated for (its
    `managedGroupLimits`; Alibaba's ESS wires no ERI and takes no deployment set, so an ebmgn8v would get none of its
    160 Gb/s, unplaced). A default must not halve the fabric paid for; a config that needs a managed group
    (`_needs_managed`) keeps it, and the layout says what it loses."""
    cfg, row = ctx.cfg, ctx.row
    if row is None or "node_group" in cfg.model_fields_set or not ctx.fabric_wired or _needs_managed(cfg):
        return
    caps = capabilities(ctx.cloud)
    cut = [lim for lim in caps.managed_group_limits if (cuts := _FABRIC_LIMITS.get(lim.feature)) and cuts(ctx, row)]
    if not cut or "instances" not in caps.node_groups:
        return
    ctx.cfg = cfg.model_copy(update={"node_group": "instances"})
    ctx.warn(
        "nodeGroup",
        f"not set; instances, for all {row.fabricGbps:g} Gb/s of {row.instanceType}'s {row.fabric}: a managed group "
        "would apply less ("
        + "; ".join(f"{lim.feature}: {lim.applied}, {lim.source}" for lim in cut)
        # a limit applied as `refused` (Tencent HCC) leaves nothing to take: managed is refused for the type
        + (
            ")"
            if "managed" not in caps.node_groups or any(lim.applied == "refused" for lim in cut)
            else "); set nodeGroup: managed to take that"
        ),
        "info",
    )
    yield from ()


def _image(ctx: Context) -> Iterator[ConfigError]:
    image, row, k = ctx.cfg.image, ctx.row, f"{CLUSTER_KEY}."
    if image not in (releases.AUTO, releases.LATEST) and not re.fullmatch(ctx.rules["imagePattern"], image):
        yield ConfigError(
            f"{k}image",
            f"got {image!r}; allowed: auto (a pinned release), latest (the newest image at each deploy) or "
            f"{ctx.rules['imageHint']}",
        )
    if row is None:
        return
    _tracking(ctx, row)
    named = None if releases.is_catalog_image(ctx.cloud, image) else catalog.image_arch(image)
    if named is not None and named != row.arch:
        # the reference names its architecture (an SSM path's x86_64/arm64, a family's amd64/arm64): the cloud refuses
        # to boot it on the other one
        yield ConfigError(
            f"{k}image",
            f"{image} names an {named} image, but {row.instanceType} is {row.arch}; allowed: auto (the {row.arch} "
            f"image) or an image built for {row.arch}",
        )
    yield from _root_floor(ctx, row)


def _tracking(ctx: Context, row: InstanceType) -> None:
    """A catalog image that tracks the newest release (`image: latest`, or `auto` where the catalog pins none) is
    warned of: a later `pulumi up` may replace the nodes with an image the offline diff never showed."""
    if ctx.cfg.scheduler == "kubernetes":  # the node pools boot catalog/kubernetes images, chosen by the service
        return
    entry = catalog.gpu_image(ctx.cloud, row)
    chosen = releases.choice(ctx.cloud, entry, ctx.cfg.image)
    tracked = next((str(entry[key]) for key in catalog.IMAGE_KEYS if entry.get(key)), None)
    if chosen is not None and chosen.release is None and tracked is not None:
        ctx.warn("image", releases.tracking_warning(ctx.cfg.image, tracked, chosen, bool(entry.get("heldByNodes"))))


def _root_floor(ctx: Context, row: InstanceType) -> Iterator[ConfigError]:
    """`storage.rootGb` against the root size of the images `image: auto` boots (catalog `minRootGb`): the clouds refuse
    a root disk smaller than the image's (EC2: the AMI's root snapshot). An unsourced size (null) is not checked."""
    cfg = ctx.cfg
    if cfg.scheduler == "kubernetes":  # the node pools boot catalog/kubernetes images, which carry no size here
        return
    booted: list[tuple[str, dict[str, Any]]] = []
    if releases.is_catalog_image(ctx.cloud, cfg.image):
        booted.append((row.instanceType, catalog.gpu_image(ctx.cloud, row)))
    head = (cfg.slurm or SlurmConfig()).head_instance_type or capabilities(ctx.cloud).login_default_type
    if cfg.scheduler == "slurm" and ctx.cloud != "azure":  # the head's root is rootGb too (Azure: the image's size)
        booted.append((f"the Slurm head ({head})", catalog.cpu_image(ctx.cloud, head)))
    for what, entry in booted:
        floor = catalog.min_root_gb(entry)
        if floor is not None and cfg.storage.root_gb < floor:
            name = next(
                (str(entry[key]) for key in ("ssmParameter", "urn", "family", "nameRegex") if entry.get(key)), ""
            )
            yield ConfigError(
                f"{CLUSTER_KEY}.storage.rootGb",
                f"{cfg.storage.root_gb} GB, but {what} boots {name}, whose root is {floor} GB "
                f"(catalog/{ctx.cloud}.yaml minRootGb), and {ctx.cloud} refuses a smaller root disk; "
                f"allowed: {floor} or more",
            )
