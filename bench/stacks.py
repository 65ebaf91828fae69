"""Which shipped stack represents each cloud, and generated variants of it at other sizes."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from components.errors import ConfigError
from components.plan.stackfile import project_info, read_stack_file
from components.spec import build_spec

CLUSTER_KEYS = ("gpu-cluster:cluster", "cluster")  # the project namespace may be omitted in stack files


@dataclass(frozen=True)
class Shipped:
    stack: str
    path: Path
    cloud: str
    instance_type: str
    fabric: str
    fabric_gbps: float
    gpus: int
    gpu: str | None
    scheduler: str = "none"  # none (VM mode), kubernetes or slurm


def stack_dir(project: Path) -> Path:
    return project_info(project)[1]


SHIPPED_LIST = "shipped.yaml"  # in the stack folder: the shipped stacks and their clouds


def shipped_names(folder: Path) -> list[str]:
    """The shipped stacks (`stacks/shipped.yaml`); a project without that list ships every stack file in `folder`.
    A list, not a scan: a team's own stack beside the shipped ones must not become a flagship."""
    listed = folder / SHIPPED_LIST
    if listed.exists():
        return sorted(str(name) for name in (yaml.safe_load(listed.read_text()) or {}))
    return sorted(p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in folder.glob("Pulumi.*.yaml"))


def shipped_stacks(project: Path) -> tuple[list[Shipped], dict[str, str]]:
    """Every shipped stack that validates, and the reason for each one that does not."""
    name, folder = project_info(project)
    found: list[Shipped] = []
    invalid: dict[str, str] = {}
    for path in (folder / f"Pulumi.{stack}.yaml" for stack in shipped_names(folder)):
        try:
            sf = read_stack_file(path, name)
            spec = build_spec(copy.deepcopy(sf.values), sf.stack, sf.project)
        except (ConfigError, ValueError) as exc:  # a stack another engineer is still writing
            invalid[path.name] = str(exc)
            continue
        row = spec.instance
        found.append(
            Shipped(
                sf.stack,
                path,
                spec.cloud,
                row.instanceType,
                row.fabric,
                row.fabricGbps,
                row.gpus,
                row.gpu,
                spec.scheduler,
            )
        )
    return found, invalid


def pick(stacks: list[Shipped], cloud: str) -> Shipped | None:
    """The cloud's flagship: the stack whose type has the largest fabric (then most GPUs, then name), among the
    VM-mode stacks (a scheduler's stack measures its own series: `kubernetes_stacks`)."""
    mine = [s for s in stacks if s.cloud == cloud and s.scheduler == "none"]
    if not mine:
        return None
    return min(mine, key=lambda s: (-s.fabric_gbps, -s.gpus, s.stack))


def kubernetes_stacks(stacks: list[Shipped], clouds: tuple[str, ...] | list[str]) -> list[Shipped]:
    """Every shipped `scheduler: kubernetes` stack of the clouds asked for, in stack-name order."""
    return [s for s in stacks if s.scheduler == "kubernetes" and s.cloud in clouds]


def _cluster_block(doc: dict[str, Any]) -> dict[str, Any]:
    config = doc.setdefault("config", {})
    for key in CLUSTER_KEYS:
        if isinstance(config.get(key), dict):
            block: dict[str, Any] = config[key]
            return block
    block = config.setdefault(CLUSTER_KEYS[0], {})
    return block


def variant(base: Path, out_dir: Path, stack: str, **overrides: Any) -> Path:
    """A copy of `base` with cluster keys overridden (None removes a key; `a.b` sets a nested key)."""
    doc = yaml.safe_load(base.read_text()) or {}
    block = _cluster_block(doc)
    for dotted, value in overrides.items():
        *parents, leaf = dotted.split(".")
        target = block
        for part in parents:
            target = target.setdefault(part, {})
        if value is None:
            target.pop(leaf, None)
        else:
            target[leaf] = value
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"Pulumi.{stack}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def sized(base: Path, out_dir: Path, cloud: str, mode: str, nodes: int, **extra: Any) -> Path:
    name = f"bench-{cloud}-{mode}-{nodes}" + "".join(f"-{k}-{v}" for k, v in extra.items())
    return variant(base, out_dir, name, nodes=nodes, maxNodes=nodes, nodeGroup=mode, **extra)


def kubernetes_sized(base: Path, out_dir: Path, stack: str, nodes: int, **extra: Any) -> Path:
    """The Kubernetes stack at `nodes` GPU nodes (its pool is always a managed group)."""
    name = f"bench-k8s-{stack}-{nodes}" + "".join(f"-{k}-{v}" for k, v in extra.items()).replace("/", "_")
    return variant(base, out_dir, name, nodes=nodes, maxNodes=nodes, **extra)


# Tried in order when a flagship is refused at the largest size: cloud limits on one placement
# group or one InfiniBand domain (Azure: 100 VMs per scale set with IB; GCP: 150 per compact policy)
# would otherwise stop the series short of 2,048 nodes.
RELAXED: tuple[dict[str, str], ...] = ({}, {"placement": "none"}, {"placement": "none", "fabric": "none"})


def series_overrides(project: Path, base: Path, out_dir: Path, cloud: str, mode: str, nodes: int) -> dict[str, str]:
    """The first of RELAXED with which the spec and layout accept `nodes` (none: the flagship as is)."""
    found = _first_accepted(project, RELAXED, lambda extra: sized(base, out_dir, cloud, mode, nodes, **extra))
    return {} if found is None else found


def _first_accepted(
    project: Path, options: tuple[dict[str, str], ...], write: Callable[[dict[str, str]], Path]
) -> dict[str, str] | None:
    """The first overrides whose stack file (`write` makes it) the spec and the layout accept; None if none is."""
    from components.cluster import plan_layout  # pure: no provider SDK

    name = project_info(project)[0]
    for extra in options:
        path = write(extra)
        try:
            sf = read_stack_file(path, name)
            plan_layout(build_spec(copy.deepcopy(sf.values), sf.stack, sf.project))
        except (ConfigError, ValueError):
            continue
        finally:
            path.unlink(missing_ok=True)
        return extra
    return None


# A Kubernetes stack's pods take addresses from the cluster network (GKE: a pod range per node): a larger
# network.cidr lets the series reach 2,048 nodes where the shipped /16 stops it.
K8S_RELAXED: tuple[dict[str, str], ...] = (
    *RELAXED,
    {"network.cidr": "10.0.0.0/10"},
    {"placement": "none", "network.cidr": "10.0.0.0/10"},
)


def kubernetes_overrides(project: Path, base: Path, out_dir: Path, stack: str, nodes: int) -> dict[str, str] | None:
    """As `series_overrides`, for a Kubernetes stack's series; None when no relaxation is accepted at `nodes`."""
    return _first_accepted(project, K8S_RELAXED, lambda extra: kubernetes_sized(base, out_dir, stack, nodes, **extra))
