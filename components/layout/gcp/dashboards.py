"""The Grafana dashboards of bootstrap/monitoring/ as Cloud Monitoring dashboards (monitoring.prometheus managed on
GCP), pure: one dashboard per Grafana board, one tile per panel, each target's PromQL as a `prometheusQuery`.

The samples are the GPU nodes' own Ops Agent scrapes (observe.py), not the self-hosted Prometheus' gce_sd scrapes,
so the queries are rewritten where the labels differ (catalog/monitoring.yaml managed.gcp grafana):
- every selector is narrowed to this cluster's scrape job (other clusters write to the same project);
- `job="dcgm-exporter"` becomes the exporter's target (`instance="localhost:<port>"`: one job scrapes both
  exporters);
- `node` (the self-hosted relabel) becomes `instance_name`, the label the Ops Agent sets to the VM's name;
- the Grafana variables go: `$node` and `$job` matchers (their default is all), `$__rate_interval` a fixed 2m.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from ...bootstrap.metrics import endpoints
from ...bootstrap.monitoring import dashboards
from ...spec import ClusterSpec

# the Cloud Monitoring grid is 48 columns (monitoring v1 MosaicLayout.columns: 1 to 48), Grafana's 24
COLUMNS = 48
GRAFANA_COLUMNS = 24
# four of the Ops Agent's 30 s scrapes (catalog/observe/gcp.yaml alerts.scrapeIntervalSeconds): a rate needs two
RATE_RANGE = "2m"
NODE_LABEL = "instance_name"

_METRIC = re.compile(r"\b(up|DCGM_FI_[A-Z0-9_]+|node_[A-Za-z0-9_]+)\b(\{([^}]*)\})?")
_VARIABLE_MATCHER = re.compile(r'\s*,?\s*\b(node|hpc_job)=~"\$(node|job)"')


@dataclass(frozen=True)
class CloudDashboard:
    key: str  # the Grafana board's file stem: the Pulumi name's suffix
    display_name: str
    dashboard_json: str  # monitoring v1 Dashboard (pulumi-gcp monitoring.Dashboard dashboard_json)


def promql(expr: str, job: str) -> str:
    """A Grafana panel's query over the self-hosted Prometheus, as it reads the Ops Agent's samples of this cluster."""
    ports = {e.name: e.port for e in endpoints()}
    out = _VARIABLE_MATCHER.sub("", expr).replace("{,", "{").replace("{}", "")
    out = re.sub(r'job="([a-z-]+)"', lambda m: f'instance="localhost:{ports[m.group(1)]}"', out)
    out = out.replace("$__rate_interval", RATE_RANGE)
    out = re.sub(r"\bby \(node\)", f"by ({NODE_LABEL})", out)

    def scoped(m: re.Match[str]) -> str:
        inner = m.group(3)
        return f'{m.group(1)}{{job="{job}"' + (f",{inner}" if inner else "") + "}"

    return _METRIC.sub(scoped, out)


def metric_names(expr: str) -> set[str]:
    """The exporter metrics a query reads (what the Ops Agent must keep for the dashboards)."""
    return {m.group(1) for m in _METRIC.finditer(expr)}


def _widget(panel: dict[str, Any], job: str) -> dict[str, Any]:
    queries = [promql(t["expr"], job) for t in panel["targets"]]
    if panel["type"] == "stat" and len(queries) == 1:
        return {"title": panel["title"], "scorecard": {"timeSeriesQuery": {"prometheusQuery": queries[0]}}}
    data_sets = [{"timeSeriesQuery": {"prometheusQuery": q}, "plotType": "LINE"} for q in queries]
    return {"title": panel["title"], "xyChart": {"dataSets": data_sets}}


def _tile(panel: dict[str, Any], job: str) -> dict[str, Any]:
    scale = COLUMNS // GRAFANA_COLUMNS
    pos = panel["gridPos"]
    return {
        "xPos": pos["x"] * scale,
        "yPos": pos["y"] * scale,
        "width": pos["w"] * scale,
        "height": pos["h"] * scale,
        "widget": _widget(panel, job),
    }


def board(spec: ClusterSpec, grafana: dict[str, Any], job: str) -> dict[str, Any]:
    return {
        "displayName": f"gpu-cluster {spec.stack}/{spec.name}: {grafana['title']}",
        "mosaicLayout": {"columns": COLUMNS, "tiles": [_tile(p, job) for p in grafana["panels"]]},
    }


def cloud_dashboards(spec: ClusterSpec, job: str) -> tuple[CloudDashboard, ...]:
    out = []
    for file, grafana in dashboards().items():
        body = board(spec, grafana, job)
        key = file.removeprefix("dashboard-").removesuffix(".json")
        out.append(CloudDashboard(key, body["displayName"], json.dumps(body, sort_keys=True)))
    return tuple(out)


def dashboard_metrics(job: str) -> tuple[str, ...]:
    """Every exporter metric the dashboards read, sorted."""
    names: set[str] = set()
    for grafana in dashboards().values():
        for panel in grafana["panels"]:
            for target in panel["targets"]:
                names |= metric_names(promql(target["expr"], job))
    return tuple(sorted(names))
