"""monitoring.prometheus managed on GCP: the GPU nodes' Ops Agent writes to Managed Service for Prometheus, the rules
are Cloud Monitoring alerting policies (with or without notify), the Grafana boards Cloud Monitoring dashboards; the
login node runs no Prometheus. Asserted on the inputs registered with the Pulumi mocks."""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import pytest

from components.bootstrap.monitoring import Thresholds, dashboards, exporter_metrics, rule_list
from components.errors import ConfigError, ConfigErrors
from components.layout.gcp import observe
from components.layout.gcp import plan as gcp_plan
from components.layout.gcp.dashboards import promql
from components.plan.render import monitoring_text

from .conformance import gcp
from .conftest import gcp_values, one, plan_values, resources_of, spec_of
from .test_monitoring import metric_names

JOB = "gpu-cluster-test-test-alerts"
VM = {"gpu": "H100:8", "instanceType": "a3-megagpu-8g", "nodes": 2, "zone": "us-central1-a"}


def vm(**monitoring: Any) -> dict[str, Any]:
    return gcp_values(**VM, monitoring={"prometheus": "managed", **monitoring})


@pytest.fixture(scope="module")
def planned():
    return plan_values(vm())


@pytest.fixture(scope="module")
def slurm_notify():
    return plan_values(
        gcp_values(scheduler="slurm", monitoring={"prometheus": "managed", "notify": ["ops@example.com"]})
    )


def boards(plan) -> dict[str, dict[str, Any]]:
    return {
        d["name"]: json.loads(d["inputs"]["dashboardJson"])
        for d in resources_of(plan, "monitoring/dashboard:Dashboard")
    }


def queries(board: dict[str, Any]) -> list[str]:
    out = []
    for tile in board["mosaicLayout"]["tiles"]:
        w = tile["widget"]
        if "scorecard" in w:
            out.append(w["scorecard"]["timeSeriesQuery"]["prometheusQuery"])
        else:
            out += [d["timeSeriesQuery"]["prometheusQuery"] for d in w["xyChart"]["dataSets"]]
    return out


def test_one_cloud_monitoring_dashboard_per_grafana_board_one_tile_per_panel(planned):
    got = boards(planned)
    assert set(got) == {"test-gcp-dashboard-nodes", "test-gcp-dashboard-overview"}
    for name, grafana in dashboards().items():
        key = name.removeprefix("dashboard-").removesuffix(".json")
        board = got[f"test-gcp-dashboard-{key}"]
        assert board["displayName"] == f"gpu-cluster test/test: {grafana['title']}"
        tiles = board["mosaicLayout"]["tiles"]
        assert board["mosaicLayout"]["columns"] == 48
        assert [t["widget"]["title"] for t in tiles] == [p["title"] for p in grafana["panels"]]
        for tile, panel in zip(tiles, grafana["panels"], strict=True):
            assert tile["xPos"] + tile["width"] <= 48
            assert (tile["xPos"], tile["width"]) == (panel["gridPos"]["x"] * 2, panel["gridPos"]["w"] * 2)
            widget = tile["widget"]
            n = len(panel["targets"])
            if panel["type"] == "stat" and n == 1:
                assert "scorecard" in widget
            else:
                assert len(widget["xyChart"]["dataSets"]) == n


def test_every_dashboard_query_names_only_pinned_exporter_metrics_scoped_to_the_cluster(planned):
    known = exporter_metrics()
    for name, board in boards(planned).items():
        for q in queries(board):
            assert metric_names(q) <= known, (name, q, metric_names(q) - known)
            assert "$" not in q, q  # no Grafana variable left
            # every selector of an exporter metric carries the cluster's job
            for m in re.finditer(r"\b(up|DCGM_FI_[A-Z0-9_]+|node_[A-Za-z0-9_]+)\b(\{[^}]*\})?", q):
                assert m.group(2) and f'job="{JOB}"' in m.group(2), (q, m.group(0))
            assert "by (node)" not in q and "node=~" not in q, q


def test_the_queries_are_rewritten_for_the_ops_agents_labels():
    assert promql('sum(up{job="dcgm-exporter"})', JOB) == f'sum(up{{job="{JOB}",instance="localhost:9400"}})'
    assert promql("avg by (node) (DCGM_FI_DEV_GPU_UTIL)", JOB) == (
        f'avg by (instance_name) (DCGM_FI_DEV_GPU_UTIL{{job="{JOB}"}})'
    )
    assert promql('rate(DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL{node=~"$node",hpc_job=~"$job"}[$__rate_interval])', JOB) == (
        f'rate(DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL{{job="{JOB}"}}[2m])'
    )
    assert promql('node_memory_MemAvailable_bytes{mode="idle",node=~"$node"}', JOB) == (
        f'node_memory_MemAvailable_bytes{{job="{JOB}",mode="idle"}}'
    )


def test_the_gpu_nodes_agent_keeps_the_rules_and_the_dashboards_series(planned):
    spec = spec_of(vm())
    gpu = observe.agent_body(spec, "gpu")
    assert gpu is not None
    job = gpu["metrics"]["receivers"]["gpu_cluster_alerts"]["config"]["scrape_configs"][0]
    assert job["job_name"] == JOB
    kept = set(job["metric_relabel_configs"][0]["regex"].split("|"))
    needed = set().union(*(metric_names(q) for b in boards(planned).values() for q in queries(b)))
    for rule in rule_list(Thresholds(**spec.monitoring.alerts.model_dump())):
        needed |= metric_names(rule["expr"])
    assert needed <= kept, needed - kept
    # the GPU template's startup-script carries that config
    script = one(planned, "compute/instanceTemplate:InstanceTemplate")["inputs"]["metadata"]["startup-script"]
    assert "gpu_cluster_alerts" in script and "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE" in script


def test_notify_alone_keeps_the_series_list_deployed_nodes_run():
    notify = observe.agent_body(spec_of(gcp_values(**VM, monitoring={"notify": ["a@b.co"]})), "gpu")
    assert notify is not None
    regex = notify["metrics"]["receivers"]["gpu_cluster_alerts"]["config"]["scrape_configs"][0]
    assert regex["metric_relabel_configs"][0]["regex"] == observe.data()["alerts"]["keep"]


def test_the_rules_are_alerting_policies_without_channels_when_notify_is_not_set(planned):
    policies = {p["name"]: p["inputs"] for p in resources_of(planned, "monitoring/alertPolicy:AlertPolicy")}
    rules = rule_list(Thresholds(**spec_of(vm()).monitoring.alerts.model_dump()))
    assert set(policies) == {f"test-gcp-alert-{r['alert']}" for r in rules}
    assert all(not p.get("notificationChannels") for p in policies.values())
    assert not resources_of(planned, "monitoring/notificationChannel:NotificationChannel")
    query = policies["test-gcp-alert-GpuIdle"]["conditions"][0]["conditionPrometheusQueryLanguage"]["query"]
    assert f'DCGM_FI_DEV_GPU_UTIL{{job="{JOB}"}}' in query


def test_with_notify_on_slurm_the_policies_mail_and_the_login_node_runs_no_prometheus(slurm_notify):
    policies = resources_of(slurm_notify, "monitoring/alertPolicy:AlertPolicy")
    assert policies and all(len(p["inputs"]["notificationChannels"]) == 1 for p in policies)
    assert len(resources_of(slurm_notify, "monitoring/dashboard:Dashboard")) == 2
    for inst in resources_of(slurm_notify, "compute/instance:Instance"):
        script = inst["inputs"]["metadata"].get("startup-script") or ""
        assert "gpu-cluster-prometheus" not in script and "grafana" not in script.lower(), inst["name"]
    layout = gcp_plan(spec_of(gcp_values(scheduler="slurm", monitoring={"prometheus": "managed"})))
    assert layout.monitoring is None  # no self-hosted part, no roles/compute.viewer
    assert "roles/compute.viewer" not in layout.identity.roles
    assert "roles/monitoring.metricWriter" in layout.identity.roles


def test_vm_mode_needs_no_login_node_and_the_plan_says_where_the_dashboards_are(planned):
    summary = planned.summary()
    out = summary["monitoring"]
    assert out["prometheus"] == "managed" and out["grafana"] is None
    assert out["dashboards"] == [
        "gpu-cluster test/test: GPU cluster: per node",
        "gpu-cluster test/test: GPU cluster: overview",
    ]
    text = monitoring_text(summary)
    assert text.startswith("Google Cloud Managed Service for Prometheus, written by the GPU nodes' Ops Agent")
    assert "Cloud Monitoring" in text


def test_each_dashboard_conforms_to_the_monitoring_v1_document_and_a_bad_field_is_refused(planned):
    listed = [r.as_json() for r in planned.resources if r.type.endswith("monitoring/dashboard:Dashboard")]
    report = gcp.check_resources(listed)
    assert not report.refusals, report.text()
    assert report.checked == {"gcp:monitoring/dashboard:Dashboard": 2}
    bad = copy.deepcopy(listed[0])
    body = json.loads(bad["inputs"]["dashboardJson"])
    data_set = body["mosaicLayout"]["tiles"][0]["widget"]["xyChart"]["dataSets"][0]
    data_set["timeSeriesQuery"]["promQuery"] = data_set["timeSeriesQuery"].pop("prometheusQuery")
    bad["inputs"]["dashboardJson"] = json.dumps(body)
    refused = gcp.check_resources([bad]).refusals
    assert refused and any("promQuery" in r.where + r.message for r in refused), refused


def _errors(values: dict[str, Any]) -> str:
    with pytest.raises((ConfigError, ConfigErrors)) as info:
        plan_values(values)
    return str(info.value)


def test_managed_on_gke_and_without_the_dcgm_exporter_are_refused_with_the_key():
    gke = _errors(gcp_values(**VM, scheduler="kubernetes", monitoring={"prometheus": "managed"}))
    assert "gpu-cluster:cluster.monitoring.prometheus" in gke and "GKE already sends its DCGM metrics" in gke
    no_dcgm = _errors(vm(dcgmExporter=False))
    assert "gpu-cluster:cluster.monitoring.prometheus" in no_dcgm and "dcgmExporter" in no_dcgm


def test_managed_without_nat_names_the_ops_agent_download():
    text = _errors(gcp_values(**VM, network={"egress": "none"}, monitoring={"prometheus": "managed"}))
    assert "dl.google.com" in text and "github.com" not in text
