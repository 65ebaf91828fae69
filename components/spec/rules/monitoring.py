"""`monitoring`: where the self-hosted Prometheus and Grafana can run (catalog/monitoring.yaml), and `auto`'s choice.

The host is the login node. Scheduler slurm always has one (spec/resolve.py adds `login: {}`: sbatch and srun run
there), so the Slurm head never hosts it: the head runs slurmctld, and a Prometheus that fills its disk or memory
there would stop the queue, where on the login node it stops no job; the login node also holds no cluster state and
is where people already are. VM mode without a login node, and Kubernetes, have nowhere private to put it: `auto` is
then none and `selfHosted` is refused, naming what would give it a host.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Literal

from ...catalog import monitoring as data
from ...errors import CLUSTER_KEY, ConfigError
from ...text import one_line
from ..context import Context
from ..model import ClusterConfig


def has_host(cfg: ClusterConfig) -> bool:
    """A login node to run a self-hosted Prometheus on (scheduler slurm always gets one; Kubernetes is not built)."""
    return cfg.scheduler != "kubernetes" and (cfg.login is not None or cfg.scheduler == "slurm")


def _problems(cloud: str, cfg: ClusterConfig) -> list[str]:
    """Why selfHosted cannot be built for this config (empty: it can)."""
    problems: list[str] = []
    if data.self_hosted(cloud) is None:
        why = data.not_built_why(cloud)
        reason = f": {one_line(why)}" if why else ""
        problems.append(
            f"is not built on {cloud} yet{reason} (built on: {', '.join(data.self_hosted_clouds())}); use none and "
            "scrape the nodes' exporters from your own Prometheus"
        )
    if cfg.scheduler == "kubernetes":
        problems.append("is not built with scheduler kubernetes (kube-prometheus-stack is not wired yet); use none")
    elif not has_host(cfg):
        problems.append("needs a host: add a login node (login: {}; scheduler slurm has one)")
    if not cfg.monitoring.dcgm_exporter:
        problems.append("has nothing to scrape with monitoring.dcgmExporter false; set it true or use none")
    if cfg.network.egress != "nat":
        problems.append(
            f"needs network.egress nat, got {cfg.network.egress}: Prometheus and Grafana are installed at boot from "
            "github.com and apt.grafana.com (components/bootstrap/monitoring.yaml)"
        )
    return problems


def resolve_prometheus(cloud: str, cfg: ClusterConfig) -> Literal["selfHosted", "none"]:
    """`auto`: selfHosted wherever it can be built, else none; the explicit choices as written."""
    mode = cfg.monitoring.prometheus
    if mode == "auto":
        return "none" if _problems(cloud, cfg) else "selfHosted"
    return mode


def _monitoring(ctx: Context) -> Iterator[ConfigError]:
    """`monitoring.prometheus: selfHosted` where it cannot be built: one error per reason."""
    if ctx.cfg.monitoring.prometheus != "selfHosted":
        return
    for problem in _problems(ctx.cloud, ctx.cfg):
        yield ConfigError(f"{CLUSTER_KEY}.monitoring.prometheus", f"selfHosted {problem}")
