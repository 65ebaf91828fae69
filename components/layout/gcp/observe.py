"""The nodes' logs in Cloud Logging (monitoring.logs) and the alert rules in Cloud Monitoring (monitoring.notify) on
GCP, pure (data: catalog/observe/gcp.yaml, sources there).

One Ops Agent per node (the one elastic fleets already run for the autoscaler's metric: scaling.ops_agent_part), its
config gaining, per node kind:
- logs: a `files` receiver (cloud-init, the Slurm daemon's file of that node) and a `systemd_journald` receiver whose
  entries are kept for our units, the Slurm and MUNGE daemons and the kernel only; a `modify_fields` processor labels
  every entry with the cluster and the stack. A per-cluster log bucket (retention, CMEK under `encryption`) takes them
  through a sink filtering on those labels. The project's _Default sink still routes them to _Default too (30 days;
  each bucket bills the ingestion: catalog/prices/gcp.yaml logs): an exclusion there is a project-wide change
  of a sink every cluster and workload of the project shares, so it is left to the project's owner (docs/gcp.md).
- alerts: a `prometheus` receiver scraping the node's own DCGM and node exporters (Managed Service for Prometheus,
  only the series the rules read), one alerting policy per rule of bootstrap.monitoring.rule_list (PromQL as
  written) and one email notification channel per address on every policy.
- managed (monitoring.prometheus; catalog/monitoring.yaml managed.gcp): the same receiver and policies without
  notify (no channels then: incidents show in Cloud Monitoring), keeping the dashboards' series too, and the Grafana
  boards as Cloud Monitoring dashboards (dashboards.py); the login node runs no Prometheus.
The node service account gets roles/logging.logWriter and roles/monitoring.metricWriter (both project-wide).
Scheduler kubernetes: GKE ships its system and workload logs itself; the same bucket and sink take them, filtered
on the GKE cluster's name and location. Alerts are not built there (notify is refused with its key).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Literal

import yaml

from ...bootstrap import Part
from ...bootstrap.metrics import endpoints
from ...bootstrap.monitoring import Thresholds, rule_list
from ...catalog import monitoring as catalog_monitoring
from ...datafile import load_yaml
from ...errors import CLUSTER_KEY, ConfigError
from ...spec import ClusterSpec
from ...text import one_line
from .dashboards import CloudDashboard, cloud_dashboards, dashboard_metrics
from .labels import label_value
from .scaling import autoscaler_port, ops_agent_body, ops_agent_part

NodeKind = Literal["gpu", "head", "login"]
CLUSTER_LABEL = "gpu-cluster_cluster"
STACK_LABEL = "gpu-cluster_stack"
ROLE_LABEL = "gpu-cluster_node"


@cache
def data() -> dict[str, Any]:
    """catalog/observe/gcp.yaml."""
    loaded: dict[str, Any] = load_yaml(Path(__file__).parents[2] / "catalog/observe/gcp.yaml")
    return loaded


@dataclass(frozen=True)
class LogBucket:
    bucket_id: str  # the cluster's log bucket, in the cluster's region (a CMEK key's location is the bucket's)
    location: str
    retention_days: int
    filter: str  # the entries the sink routes into it, and the exclusion keeps out of _Default
    sink: str
    cmek: bool  # encryption set: the bucket takes the cluster's key (Logging's CMEK account granted on it first)


@dataclass(frozen=True)
class AlertPolicy:
    alert: str
    display_name: str
    query: str
    duration: str  # seconds, as the API takes a Duration ("300s")
    evaluation_interval: str
    labels: dict[str, str]
    summary: str
    severity: str  # CRITICAL / WARNING: the policy's severity


@dataclass(frozen=True)
class GcpObserve:
    logs: LogBucket | None
    policies: tuple[AlertPolicy, ...]
    emails: tuple[str, ...]
    roles: tuple[str, ...]  # granted to the nodes' service account (and the head's own, when it has one)
    rule_group: str
    dashboards: tuple[CloudDashboard, ...] = ()  # monitoring.prometheus managed: the Grafana boards in Cloud Monitoring
    managed_service: str | None = None  # managed: catalog/monitoring.yaml managed.gcp service
    grafana_note: str = ""  # managed: where the dashboards live and why not Grafana (managed.gcp grafanaPlan)


def managed(spec: ClusterSpec) -> bool:
    """monitoring.prometheus managed: the nodes' Ops Agent writes to Managed Service for Prometheus (VM mode)."""
    return spec.prometheus == "managed" and spec.scheduler != "kubernetes"


def metrics(spec: ClusterSpec) -> bool:
    """The alert rules evaluated in Cloud Monitoring: for notify, or as managed's rules."""
    return bool(spec.monitoring.notify) or managed(spec)


def enabled(spec: ClusterSpec) -> bool:
    """Anything of the Ops Agent's logs or alerts on a VM-mode cluster (GKE's nodes run Google's own agents)."""
    m = spec.monitoring
    return spec.scheduler != "kubernetes" and (m.logs.enabled or metrics(spec))


def roles(spec: ClusterSpec) -> tuple[str, ...]:
    d, m = data(), spec.monitoring
    if spec.scheduler == "kubernetes":
        return ()
    out = [d["logs"]["role"]] if m.logs.enabled else []
    if metrics(spec):
        out.append(d["alerts"]["role"])
    return tuple(out)


def _name(spec: ClusterSpec, suffix: str) -> str:
    """A per-stack-and-cluster id: letters, digits, '-' and '_' (log bucket ids take at most 100)."""
    return re.sub(r"[^A-Za-z0-9_-]", "-", f"gpu-cluster-{spec.stack}-{spec.name}-{suffix}")[:100]


def log_filter(spec: ClusterSpec) -> str:
    """The entries our Ops Agent labels (the Logging query language takes a quoted label key)."""
    return f'labels."{CLUSTER_LABEL}"="{label_value(spec.name)}" AND labels."{STACK_LABEL}"="{label_value(spec.stack)}"'


def gke_log_filter(cluster: str, location: str) -> str:
    """GKE's own system and workload logs (its default logging_config) carry the cluster's name and location as
    resource labels (k8s_container, k8s_pod, k8s_node, k8s_cluster)."""
    return f'resource.labels.cluster_name="{cluster}" AND resource.labels.location="{location}"'


def _bucket(spec: ClusterSpec, gke_name: str | None) -> LogBucket | None:
    if not spec.monitoring.logs.enabled:
        return None
    return LogBucket(
        bucket_id=_name(spec, "logs"),
        location=spec.region,
        retention_days=spec.monitoring.logs.retention_days,
        filter=log_filter(spec) if gke_name is None else gke_log_filter(gke_name, spec.region),
        sink=_name(spec, "logs"),
        cmek=spec.encryption_key != "provider",
    )


def _labels(text: str) -> str:
    """Prometheus' {{ $labels.x }} as Cloud Monitoring's documentation variable of the series' label."""
    return re.sub(r"\{\{ \$labels\.(\w+) \}\}", r"${metric.label.\1}", text).replace("{{ $value }}", "(its value)")


def _seconds(duration: str) -> str:
    """A Prometheus `for` (Nm) as a Duration string."""
    match = re.fullmatch(r"(\d+)m", duration)
    assert match is not None, duration
    return f"{int(match.group(1)) * 60}s"


def policies(spec: ClusterSpec) -> tuple[AlertPolicy, ...]:
    every = f"{data()['alerts']['evaluationIntervalSeconds']}s"
    out = []
    for rule in rule_list(Thresholds(**spec.monitoring.alerts.model_dump())):
        severity = str(rule["labels"]["severity"])
        out.append(
            AlertPolicy(
                alert=rule["alert"],
                display_name=f"gpu-cluster {spec.stack}/{spec.name}: {rule['alert']}",
                # only this cluster's series: the prometheus receiver's job is the cluster's
                query=_scoped(rule["expr"], _job(spec)),
                duration=_seconds(rule["for"]),
                evaluation_interval=every,
                labels={k: str(v) for k, v in rule["labels"].items()},
                summary=_labels(rule["annotations"]["summary"]),
                severity="CRITICAL" if severity == "critical" else "WARNING",
            )
        )
    return tuple(out)


_METRIC = re.compile(r"\b(up|DCGM_FI_[A-Z_]+|node_[a-z_]+)\b(\{([^}]*)\})?")


def _scoped(expr: str, job: str) -> str:
    """Every selector of `expr` narrowed to this cluster's scrape job (other clusters share the project's metrics)."""

    def one(m: re.Match[str]) -> str:
        inner = m.group(3)
        matchers = f'job="{job}"' + (f",{inner}" if inner else "")
        return f"{m.group(1)}{{{matchers}}}"

    return _METRIC.sub(one, expr)


def _job(spec: ClusterSpec) -> str:
    return f"gpu-cluster-{spec.stack}-{spec.name}-alerts"


def plan(spec: ClusterSpec, gke_name: str | None = None) -> GcpObserve | None:
    """`gke_name`: scheduler kubernetes, the GKE cluster whose logs the bucket takes."""
    notify = spec.monitoring.notify
    if gke_name is not None:
        if notify:
            raise ConfigError(
                f"{CLUSTER_KEY}.monitoring.notify",
                "is not built with scheduler kubernetes on gcp: GKE's managed DCGM metrics are not the DCGM exporter's "
                "series the alert rules read; remove notify (the nodes' logs, monitoring.logs, are built)",
            )
        if not spec.monitoring.logs.enabled:
            return None
        return GcpObserve(_bucket(spec, gke_name), (), (), (), _name(spec, "alerts"))
    if not enabled(spec):
        return None
    if metrics(spec) and not spec.dcgm_exporter:
        raise ConfigError(
            f"{CLUSTER_KEY}.monitoring.notify",
            "needs monitoring.dcgmExporter true on gcp: the alert rules read the nodes' DCGM and node exporters "
            "(the Ops Agent sends them to Managed Service for Prometheus); set it true or remove notify",
        )
    return GcpObserve(
        logs=_bucket(spec, None),
        policies=policies(spec) if metrics(spec) else (),
        emails=tuple(notify),
        roles=roles(spec),
        rule_group=_name(spec, "alerts"),
        dashboards=cloud_dashboards(spec, _job(spec)) if managed(spec) else (),
        **_managed_texts(spec),
    )


def _managed_texts(spec: ClusterSpec) -> dict[str, Any]:
    entry = catalog_monitoring.managed("gcp") if managed(spec) else None
    if entry is None:
        return {}
    return {"managed_service": str(entry["service"]), "grafana_note": one_line(str(entry["grafanaPlan"]))}


def _log_config(spec: ClusterSpec, kind: NodeKind) -> dict[str, Any]:
    d = data()["logs"]
    files = list(d["files"])
    if spec.slurm is not None:
        slurm = d["slurmFiles"]
        files += slurm.get(kind, [])
        if kind == "head" and spec.slurm.accounting:
            files += slurm["headAccounting"]
    units = d["journalUnits"]
    return {
        "receivers": {
            "gpu_cluster_files": {"type": "files", "include_paths": files},
            "gpu_cluster_journal": {"type": "systemd_journald"},
        },
        "processors": {
            # the journal receiver reads the whole journal: keep our units and the kernel (NVIDIA XID errors)
            "gpu_cluster_units": {
                "type": "exclude_logs",
                "match_any": [
                    f'NOT (jsonPayload._SYSTEMD_UNIT =~ "{units}" OR jsonPayload._TRANSPORT = "kernel")',
                ],
            },
            # the sink routes by these labels into the cluster's bucket
            "gpu_cluster_labels": {
                "type": "modify_fields",
                "fields": {
                    f'labels."{CLUSTER_LABEL}"': {"static_value": label_value(spec.name)},
                    f'labels."{STACK_LABEL}"': {"static_value": label_value(spec.stack)},
                    f'labels."{ROLE_LABEL}"': {"static_value": kind},
                },
            },
        },
        "service": {
            "pipelines": {
                "gpu_cluster_files": {"receivers": ["gpu_cluster_files"], "processors": ["gpu_cluster_labels"]},
                "gpu_cluster_journal": {
                    "receivers": ["gpu_cluster_journal"],
                    "processors": ["gpu_cluster_units", "gpu_cluster_labels"],
                },
            }
        },
    }


def _keep(spec: ClusterSpec) -> str:
    """The series the Ops Agent sends (GMP bills per sample): the rules' (catalog), with managed the dashboards' too;
    notify alone keeps the catalog's list as deployed nodes already run it."""
    keep = str(data()["alerts"]["keep"])
    if not managed(spec):
        return keep
    ours = keep.split("|")
    return "|".join(ours + [m for m in dashboard_metrics(_job(spec)) if m not in ours])


def _alerts_receiver(spec: ClusterSpec, kind: NodeKind) -> dict[str, Any]:
    """The node's own exporters (GPU nodes: DCGM and node exporter; head and login: none of ours run there)."""
    a = data()["alerts"]
    ports = [e.port for e in endpoints()]
    return {
        "type": "prometheus",
        "config": {
            "scrape_configs": [
                {
                    "job_name": _job(spec),
                    "scrape_interval": f"{a['scrapeIntervalSeconds']}s",
                    "static_configs": [{"targets": [f"localhost:{p}" for p in ports]}],
                    "metric_relabel_configs": [{"source_labels": ["__name__"], "regex": _keep(spec), "action": "keep"}],
                }
            ]
        },
    }


def agent_body(spec: ClusterSpec, kind: NodeKind, base: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """The Ops Agent config of one node kind: `base` (the autoscaler's receiver, elastic GPU fleets) plus the logs'
    and the alerts' parts; None when nothing of them is asked."""
    if not enabled(spec):
        return None
    body: dict[str, Any] = {k: v for k, v in (base or {}).items()}
    if spec.monitoring.logs.enabled:
        body["logging"] = _log_config(spec, kind)
    if metrics(spec) and kind == "gpu" and spec.dcgm_exporter:
        metrics_ = body.setdefault("metrics", {"receivers": {}, "service": {"pipelines": {}}})
        metrics_["receivers"]["gpu_cluster_alerts"] = _alerts_receiver(spec, kind)
        metrics_["service"]["pipelines"]["gpu_cluster_alerts"] = {"receivers": ["gpu_cluster_alerts"]}
    return body if body else None


def config_text(body: dict[str, Any]) -> str:
    return "# gpu-cluster: the Ops Agent's receivers (autoscaler metric, logs, alert metrics)\n" + yaml.safe_dump(
        body, sort_keys=False
    )


def summary(spec: ClusterSpec, kind: NodeKind) -> str:
    what = []
    if spec.monitoring.logs.enabled:
        # no retention here: it is the bucket's, changed in place without touching the nodes' boot data
        what.append("the node's logs to Cloud Logging (the cluster's log bucket)")
    if metrics(spec) and kind == "gpu" and spec.dcgm_exporter:
        what.append(
            "the alert rules' and dashboards' metrics to Managed Service for Prometheus"
            if managed(spec)
            else "the alert rules' metrics to Managed Service for Prometheus"
        )
    return "; ".join(what)


def part_kinds(spec: ClusterSpec) -> tuple[NodeKind, ...]:
    """The node kinds that get the agent: all of them with logs; GPU nodes only for alerts alone."""
    if not enabled(spec):
        return ()
    if spec.monitoring.logs.enabled:
        return ("gpu", "head", "login")
    return ("gpu",) if spec.dcgm_exporter else ()


def agent_part(spec: ClusterSpec, kind: NodeKind, autoscaler_job: str | None = None) -> Part | None:
    """The node kind's Ops Agent part with the logs' and alerts' receivers (None: nothing asked of it; an elastic
    fleet then keeps scaling's own part, `autoscaler_job` its receiver)."""
    if kind not in part_kinds(spec):
        return None
    base = ops_agent_body(autoscaler_job, autoscaler_port()) if autoscaler_job else None
    body = agent_body(spec, kind, base)
    assert body is not None
    return ops_agent_part(autoscaler_job, config_text(body), summary(spec, kind))
