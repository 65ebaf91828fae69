"""`monitoring`: where the self-hosted Prometheus and Grafana can run (catalog/monitoring.yaml), and `auto`'s choice.

The host is the login node. Scheduler slurm always has one (spec/resolve.py adds `login: {}`: sbatch and srun run
there), so the Slurm head never hosts it: the head runs slurmctld, and a Prometheus that fills its disk or memory
there would stop the queue, where on the login node it stops no job; the login node also holds no cluster state and
is where people already are. VM mode without a login node has nowhere private to put it: `auto` is then none and
`selfHosted` is refused, naming what would give it a host.

`managed` (catalog/monitoring.yaml `managed`): the cloud's managed Prometheus stores the samples and evaluates the
rules, the login node's Prometheus only scrapes (agent mode) and writes to it (GCP, `collector: nodes`: each GPU
node's Ops Agent writes, so no login node is needed); refused by key where not built. With scheduler kubernetes, where
built (no `kubernetesWhy`: AKS), the cluster's own collector writes, so no login node is needed either.

Scheduler kubernetes: selfHosted is the kube-prometheus-stack release on the system pool (catalog/monitoring.yaml
`kubernetes`), on the clouds whose `releases:` install it. `auto` takes it where it can be built: the cluster pulls
the chart and its images (quay.io, registry.k8s.io, docker.io) through its NAT like the GPU operator's, and it
scrapes the exporters the cluster already runs. GKE keeps its managed route (Managed Service for Prometheus).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, Literal

from ...catalog import CLOUDS
from ...catalog import kubernetes as kube_offers
from ...catalog import monitoring as data
from ...errors import CLUSTER_KEY, ConfigError
from ...text import one_line
from ..context import Context
from ..model import ClusterConfig
from .emails import email_errors


def has_host(cfg: ClusterConfig) -> bool:
    """A login node to run a self-hosted Prometheus on (scheduler slurm always gets one; Kubernetes needs none)."""
    return cfg.scheduler != "kubernetes" and (cfg.login is not None or cfg.scheduler == "slurm")


def in_cluster_clouds() -> tuple[str, ...]:
    """The clouds whose Kubernetes `releases:` install the in-cluster stack (catalog/monitoring.yaml kubernetes)."""
    chart = data.kubernetes_chart()
    offers = {cloud: kube_offers.offer(cloud) for cloud in CLOUDS}
    return tuple(
        cloud
        for cloud, offer in offers.items()
        if offer is not None and any(r.get("chart") == chart for r in offer.extra.get("releases") or [])
    )


def _kubernetes_problems(cloud: str) -> list[str]:
    """Why the in-cluster stack is not built on `cloud` (empty: it is)."""
    if cloud in in_cluster_clouds():
        return []
    why = data.kubernetes_not_built_why(cloud)
    reason = f": {one_line(why)}" if why else ""
    return [
        f"is not built with scheduler kubernetes on {cloud}{reason} (built on: {', '.join(in_cluster_clouds())})"
        + ("" if why else "; use none")
    ]


def _problems(cloud: str, cfg: ClusterConfig) -> list[str]:
    """Why selfHosted cannot be built for this config (empty: it can)."""
    problems: list[str] = []
    if cfg.scheduler == "kubernetes":
        problems += _kubernetes_problems(cloud)
    elif data.self_hosted(cloud) is None:
        why = data.not_built_why(cloud)
        reason = f": {one_line(why)}" if why else ""
        problems.append(
            f"is not built on {cloud} yet{reason} (built on: {', '.join(data.self_hosted_clouds())}); use none and "
            "scrape the nodes' exporters from your own Prometheus"
        )
    if cfg.scheduler != "kubernetes" and not has_host(cfg):
        problems.append("needs a host: add a login node (login: {}; scheduler slurm has one)")
    if not cfg.monitoring.dcgm_exporter:
        problems.append("has nothing to scrape with monitoring.dcgmExporter false; set it true or use none")
    if cfg.network.egress != "nat":
        source = (
            "the kube-prometheus-stack chart and its images are pulled from prometheus-community.github.io, quay.io, "
            "registry.k8s.io and docker.io (catalog/kubernetes/charts.yaml)"
            if cfg.scheduler == "kubernetes"
            else "Prometheus and Grafana are installed at boot from github.com and apt.grafana.com "
            "(components/bootstrap/monitoring.yaml)"
        )
        problems.append(f"needs network.egress nat, got {cfg.network.egress}: {source}")
    return problems


def _managed_problems(cloud: str, cfg: ClusterConfig) -> list[str]:
    """Why `managed` cannot be built for this config (empty: it can): a cloud with an entry under
    catalog/monitoring.yaml `managed`, in Kubernetes where it says how (AWS: EKS), and the login node its agent runs
    on outside Kubernetes."""
    entry = data.managed(cloud)
    if entry is None:
        why = data.managed_not_built_why(cloud)
        reason = f": {one_line(why)}" if why else ""
        return [
            f"is not built on {cloud} yet{reason} (built on: {', '.join(data.built('managed'))}); use selfHosted or "
            "none"
        ]
    problems: list[str] = []
    kube = entry.get("kubernetes") or {}
    key = cfg.encryption.key
    # a managed collector in the cluster that cannot write to a workspace under the cluster's key (AWS: EKS)
    key_refused = cfg.scheduler == "kubernetes" and bool(kube.get("keyWhy")) and key != "provider"
    if cfg.scheduler == "kubernetes" and entry.get("kubernetesWhy"):
        problems.append(f"is not built with scheduler kubernetes: {one_line(entry['kubernetesWhy'])}")
    elif key_refused:
        problems.append(f"cannot be built with encryption.key {key}: {one_line(kube['keyWhy'])}")
    elif cfg.scheduler != "kubernetes" and entry.get("collector") != "nodes" and not has_host(cfg):
        problems.append(
            "needs a host for the Prometheus agent that scrapes the nodes and writes to "
            f"{entry['service']}: add a login node (login: {{}}; scheduler slurm has one)"
        )
    if not cfg.monitoring.dcgm_exporter:
        problems.append("has nothing to scrape with monitoring.dcgmExporter false; set it true or use none")
    kept = entry.get("retentionDays")  # a service taking a fixed list of retentions (Tencent's TMP)
    if kept and cfg.monitoring.retention_days > max(kept):
        problems.append(
            f"keeps samples at most {max(kept)} days in {entry['service']}, and monitoring.retentionDays is "
            f"{cfg.monitoring.retention_days}; use at most {max(kept)} (it takes {', '.join(map(str, kept))})"
        )
    pattern = entry.get("kmsKeyPattern")
    if pattern and not key_refused and key not in ("provider", "auto") and re.fullmatch(str(pattern), key) is None:
        problems.append(
            f"cannot encrypt its workspace with encryption.key {key}: {entry['service']} takes a key ARN matching "
            f"{pattern} (botocore amp KmsKeyArn; a multi-Region key is not one); use a single-Region key, auto or "
            "provider"
        )
    if cfg.network.egress != "nat" and cfg.scheduler != "kubernetes":
        why = entry.get("egressWhy") or (
            "the Prometheus agent and Grafana are installed at boot from github.com and apt.grafana.com "
            f"(components/bootstrap/monitoring.yaml) and write to and read {entry['service']}'s public endpoint"
        )
        problems.append(f"needs network.egress nat, got {cfg.network.egress}: {one_line(str(why))}")
    return problems


def resolve_prometheus(cloud: str, cfg: ClusterConfig) -> Literal["selfHosted", "managed", "none"]:
    """`auto`: selfHosted wherever it can be built, else none (never managed: it bills per sample, so a cluster asks
    for it); the explicit choices as written."""
    mode = cfg.monitoring.prometheus
    if mode == "auto":
        return "none" if _problems(cloud, cfg) else "selfHosted"
    return mode


def _retention_problem(days: int, allowed: dict[str, Any]) -> str | None:
    """Why the log service does not take `days` ({values: [...]} or {min, max}); None when it does."""
    if "values" in allowed:
        values = [int(v) for v in allowed["values"]]
        return None if days in values else f"one of {', '.join(map(str, values))}"
    low, high = int(allowed["min"]), int(allowed["max"])
    return None if low <= days <= high else f"{low} to {high}"


def _control_plane(ctx: Context) -> Iterator[ConfigError]:
    """`monitoring.logs.controlPlane`: a Kubernetes cluster on a cloud that ships them, with logs on and the control
    plane's name written (its log group is created before it, named after it)."""
    cfg, k = ctx.cfg, f"{CLUSTER_KEY}.monitoring.logs.controlPlane"
    if not cfg.monitoring.logs.control_plane:
        return
    plane = data.control_plane_logs(ctx.cloud)
    if plane is None or cfg.scheduler != "kubernetes":
        yield ConfigError(
            k,
            f"the control plane's logs are shipped with scheduler kubernetes on {_control_plane_clouds()} only, got "
            f"scheduler {cfg.scheduler} on {ctx.cloud}; remove it",
        )
        return
    if not cfg.monitoring.logs.enabled:
        yield ConfigError(k, "needs monitoring.logs.enabled: true (its retention and key are the logs' own)")
    # the types and the retention the cloud's control plane logging takes (catalog: EKS takes every type)
    unknown = [t for t in cfg.monitoring.logs.control_plane if t not in plane["types"]]
    if unknown:
        yield ConfigError(k, f"{', '.join(unknown)} is not shipped on {ctx.cloud}: one of {', '.join(plane['types'])}")
    days = cfg.monitoring.logs.retention_days
    why = _retention_problem(days, plane["retentionDays"]) if "retentionDays" in plane else None
    if why is not None:
        yield ConfigError(
            f"{CLUSTER_KEY}.monitoring.logs.retentionDays",
            f"{days}, but with controlPlane on {ctx.cloud} it is also the control plane logs' retention: {why} "
            f"(catalog/monitoring.yaml logs.{ctx.cloud}.kubernetes.controlPlane); lower it or remove controlPlane",
        )
    if _needs_cluster_name(plane) and _cluster_name_of(cfg) is None:
        group = str(plane["group"]).replace("{cluster}", "<cluster name>")
        yield ConfigError(
            k,
            f"needs kubernetes.clusterName: EKS creates {group} itself, with no retention and no key, unless "
            "it exists first, and a generated name is known only after the cluster; on a deployed cluster write the "
            "name its outputs show (kubernetes.clusterName: no change), on a new one any name",
        )


def _cluster_name(ctx: Context) -> Iterator[ConfigError]:
    """`kubernetes.clusterName`: the EKS name, written only where it is built."""
    cfg = ctx.cfg
    plane = data.control_plane_logs(ctx.cloud)
    built = plane is not None and _needs_cluster_name(plane) and cfg.scheduler == "kubernetes"
    if _cluster_name_of(cfg) is not None and not built:
        yield ConfigError(
            f"{CLUSTER_KEY}.kubernetes.clusterName",
            f"is built with scheduler kubernetes on {_control_plane_clouds(named=True)} only (where the control "
            "plane's logs "
            f"need the name first), got scheduler {cfg.scheduler} on {ctx.cloud}; remove it",
        )


def _cluster_name_of(cfg: ClusterConfig) -> str | None:
    return cfg.kubernetes.cluster_name if cfg.kubernetes is not None else None


def _needs_cluster_name(plane: dict[str, Any]) -> bool:
    """The control plane's log group is named after the cluster (EKS), so the name must be known first."""
    return "{cluster}" in str(plane.get("group", ""))


def _control_plane_clouds(named: bool = False) -> str:
    """The clouds that ship the control plane's logs (`named`: those whose group needs kubernetes.clusterName)."""
    clouds = [(c, data.control_plane_logs(c)) for c in data.built("logs")]
    return ", ".join(c for c, p in clouds if p is not None and (not named or _needs_cluster_name(p))) or "none"


def _logs(ctx: Context) -> Iterator[ConfigError]:
    """`monitoring.logs`: a cloud that ships them, and a retention its log service takes."""
    logs, k = ctx.cfg.monitoring.logs, f"{CLUSTER_KEY}.monitoring.logs"
    yield from _cluster_name(ctx)
    yield from _control_plane(ctx)
    if not logs.enabled:
        return
    entry = data.logs(ctx.cloud)
    if entry is None:
        why = data.logs_not_built_why(ctx.cloud)
        reason = f": {one_line(why)}" if why else ""
        yield ConfigError(
            f"{k}.enabled",
            f"shipping logs is not built on {ctx.cloud} yet{reason} (built on: "
            f"{', '.join(data.built('logs')) or 'none'}); use false",
        )
        return
    allowed = _retention_problem(logs.retention_days, entry["retentionDays"])
    if allowed is not None:
        yield ConfigError(
            f"{k}.retentionDays",
            f"got {logs.retention_days}; {entry['service']} keeps logs for {allowed} days "
            f"({one_line(entry['source'])})",
        )
    floor = data.logs_retention_floor(ctx.cfg.compliance)
    if allowed is None and floor is not None and logs.retention_days < int(floor["days"]):
        yield ConfigError(
            f"{k}.retentionDays",
            f"got {logs.retention_days}; compliance {ctx.cfg.compliance} keeps the nodes' logs at least "
            f"{floor['days']} days ({one_line(floor['source'])}): set {floor['days']} or more",
        )


def _notify(ctx: Context) -> Iterator[ConfigError]:
    """`monitoring.notify`: well-formed addresses, on a cloud that sends alerts, with what evaluates the rules."""
    notify, k = ctx.cfg.monitoring.notify, f"{CLUSTER_KEY}.monitoring.notify"
    if not notify:
        return
    entry = data.notify(ctx.cloud)
    if entry is None:
        why = data.notify_not_built_why(ctx.cloud)
        yield ConfigError(
            k,
            f"sending alerts is not built on {ctx.cloud} yet (built on: {', '.join(data.built('notify')) or 'none'}); "
            + (f"{one_line(why)}; remove it" if why else "remove it and read the alerts in Grafana"),
        )
        return
    most = entry.get("maxEmails")
    yield from email_errors(notify, k, most, f"{entry['service']} takes at most {most}")
    # managed on Kubernetes: the cloud's managed Prometheus evaluates and sends (AWS: AMP's alert manager to SNS;
    # AKS: the workspace's rule group fires the action group), no login node
    in_cluster = ctx.cfg.scheduler == "kubernetes" and ctx.cfg.monitoring.prometheus != "managed"
    if entry.get("needs") == "selfHosted" and in_cluster:
        yield ConfigError(
            k,
            f"on {ctx.cloud} the login node's Prometheus sends the alerts, and a Kubernetes cluster has none (the "
            "in-cluster kube-prometheus-stack's Alertmanager has no receiver: its alerts show in its UI and Grafana); "
            "remove notify",
        )
    elif entry.get("needs") == "selfHosted" and resolve_prometheus(ctx.cloud, ctx.cfg) == "none":
        yield ConfigError(
            k,
            f"on {ctx.cloud} the login node's Prometheus evaluates the alert rules, and monitoring.prometheus "
            "resolves to none here; set it to selfHosted (see its errors) or remove notify",
        )
    elif entry.get("needs") == "managed" and ctx.cfg.monitoring.prometheus != "managed":
        yield ConfigError(
            k,
            f"on {ctx.cloud} the managed Prometheus evaluates the alert rules and sends them ({entry['service']}), "
            f"and monitoring.prometheus is {ctx.cfg.monitoring.prometheus}; set it to managed (see its errors) or "
            "remove notify",
        )


def _monitoring(ctx: Context) -> Iterator[ConfigError]:
    """`monitoring`: selfHosted where it cannot be built (one error per reason), logs and notify."""
    if ctx.cfg.monitoring.prometheus == "selfHosted":
        for problem in _problems(ctx.cloud, ctx.cfg):
            yield ConfigError(f"{CLUSTER_KEY}.monitoring.prometheus", f"selfHosted {problem}")
    elif ctx.cfg.monitoring.prometheus == "managed":
        for problem in _managed_problems(ctx.cloud, ctx.cfg):
            yield ConfigError(f"{CLUSTER_KEY}.monitoring.prometheus", f"managed {problem}")
    yield from _logs(ctx)
    yield from _notify(ctx)
    yield from _grafana_admins(ctx)


_OBJECT_ID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_OBJECT_ID_FORM = "a Microsoft Entra object id (a GUID, e.g. `az ad user show`'s id)"


def _grafana_admins(ctx: Context) -> Iterator[ConfigError]:
    """`monitoring.grafanaAdmins`: who signs in to the cloud's managed Grafana built with prometheus managed, in the
    cloud's id form (Azure: Entra object ids; AWS: IAM Identity Center user ids, catalog managed.aws.managedGrafana)."""
    admins, k = ctx.cfg.monitoring.grafana_admins, f"{CLUSTER_KEY}.monitoring.grafanaAdmins"
    if not admins:
        return
    entry = data.managed(ctx.cloud) or {}
    grafana = entry.get("managedGrafana")
    if grafana is None:
        clouds = [c for c in data.built("managed") if "managedGrafana" in (data.managed(c) or {})]
        yield ConfigError(
            k, f"a managed Grafana is built on {', '.join(clouds)} only, not {ctx.cloud}; remove grafanaAdmins"
        )
        return
    service = grafana.get("service", "Azure Managed Grafana")
    if ctx.cfg.monitoring.prometheus != "managed":
        yield ConfigError(
            k,
            f"names the admins of the {service} built with monitoring.prometheus managed, got "
            f"{ctx.cfg.monitoring.prometheus}; set prometheus managed or remove grafanaAdmins",
        )
    pattern = re.compile(grafana["adminIdPattern"]) if "adminIdPattern" in grafana else _OBJECT_ID
    form = one_line(grafana["adminIdForm"]) if "adminIdForm" in grafana else _OBJECT_ID_FORM
    for i, admin in enumerate(admins):
        if pattern.fullmatch(admin) is None:
            yield ConfigError(f"{k}[{i}]", f"on {ctx.cloud} must be {form}, got {admin!r}")
