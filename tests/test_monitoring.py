"""The self-hosted monitoring (monitoring.prometheus: selfHosted): the spec's choices and refusals, the rendered
Prometheus files judged by promtool, the dashboards' queries against the pinned exporters' metric names, and the
AWS wiring (the login node's user data, the role's grant, the exporter rules)."""

from __future__ import annotations

import base64
import gzip
import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.bootstrap import monitoring
from components.errors import ConfigErrors
from components.layout.aws import monitoring as aws_monitoring
from components.layout.azure import monitoring as azure_monitoring
from components.layout.gcp import monitoring as gcp_monitoring

from .conftest import aws_values, gcp_values, plan_stack_with, plan_values, resources_of, spec_of

# PromQL words that are not metric names: functions are followed by "(" and stripped by the tokenizer
_KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless", "bool", "offset"}


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression reads: identifiers outside label matchers, ranges and strings, not
    followed by "(" (a function or aggregation), not a grouping clause's labels nor a keyword."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', "", expr)
    text = re.sub(r"\{[^}]*\}", "", text)
    text = re.sub(r"\[[^\]]*\]", "", text)
    text = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", text)
    names = set(re.findall(r"\b([A-Za-z_:][A-Za-z0-9_:]*)\b(?!\s*\()", text))
    return {n for n in names if n not in _KEYWORDS and not re.fullmatch(r"\d.*|e\d*|Inf|NaN", n)}


def test_metric_names_reads_what_a_query_names():
    assert metric_names('100 * sum by (node) (DCGM_FI_DEV_FB_USED{node=~"$node"}) / max(up[5m]) > 3') == {
        "DCGM_FI_DEV_FB_USED",
        "up",
    }
    assert metric_names("count(DCGM_X > 0) or vector(0)") == {"DCGM_X"}


def _panel_exprs() -> dict[str, str]:
    out = {}
    for name, board in monitoring.dashboards().items():
        for panel in board["panels"]:
            for target in panel["targets"]:
                out[f"{name} {panel['title']} {target['refId']}"] = target["expr"]
        for var in board["templating"]["list"]:
            out[f"{name} ${var['name']}"] = re.sub(r"^label_values\((.*),\s*\w+\)$", r"\1", var["query"]["query"])
    return out


def _settings(**alerts: Any) -> monitoring.Monitoring:
    spec = spec_of(aws_values(login={}, monitoring={"alerts": alerts}))
    thresholds = monitoring.Thresholds(**spec.monitoring.alerts.model_dump())
    return monitoring.Monitoring("c", aws_monitoring.discovery(spec), 15, thresholds, "gpu")


def test_every_dashboard_query_and_alert_names_only_metrics_the_pinned_exporters_emit():
    known = monitoring.exporter_metrics()
    exprs = _panel_exprs()
    rules = yaml.safe_load(monitoring.alert_rules(_settings(gpuTemperatureCelsius=85)))["groups"][0]["rules"]
    exprs.update({f"rule {r['alert']}": r["expr"] for r in rules})
    unknown = {label: sorted(metric_names(e) - known) for label, e in exprs.items() if metric_names(e) - known}
    assert not unknown, unknown
    used = set().union(*(metric_names(e) for e in exprs.values()))
    # the panels the task names: utilisation, memory, power, temperature, XID, ECC (remapped rows), NVLink, fabric
    for name in (
        "DCGM_FI_DEV_GPU_UTIL",
        "DCGM_FI_DEV_FB_USED",
        "DCGM_FI_DEV_POWER_USAGE",
        "DCGM_FI_DEV_GPU_TEMP",
        "DCGM_FI_DEV_XID_ERRORS",
        "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
        "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL",
        "node_infiniband_port_data_received_bytes_total",
        "node_filesystem_avail_bytes",
    ):
        assert name in used, name
    # a negative control: a counter the default CSV comments out is not "known"
    assert "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL" not in known


def test_the_exporter_metric_list_is_the_default_counters_csv():
    data = yaml.safe_load((Path(monitoring.__file__).parent / "monitoring" / "exporter_metrics.yaml").read_text())
    assert data["dcgmExporter"]["metrics"][:2] == ["DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_MEM_CLOCK"]
    assert "DCGM_FI_DRIVER_VERSION" not in data["dcgmExporter"]["metrics"]  # a label row, not a metric
    assert all(block["source"] for block in data.values())


def test_every_panel_uses_the_provisioned_data_source():
    for name, board in monitoring.dashboards().items():
        assert board["uid"] and board["panels"], name
        for panel in board["panels"]:
            assert panel["datasource"] == {"type": "prometheus", "uid": "prometheus"}, (name, panel["title"])


def test_alert_thresholds_come_from_the_spec():
    rules = {
        r["alert"]: r
        for r in yaml.safe_load(monitoring.alert_rules(_settings(gpuIdlePercent=12, diskFullPercent=80)))["groups"][0][
            "rules"
        ]
    }
    assert rules["GpuIdle"]["expr"].endswith("< 12") and rules["GpuIdle"]["for"] == "60m"
    assert "> 80 and" in rules["DiskNearlyFull"]["expr"]
    assert "GpuTemperatureHigh" not in rules  # no sourced default: no rule unless asked
    assert set(rules) == {
        "GpuIdle",
        "GpuMemoryHigh",
        "GpuXidError",
        "GpuUncorrectableMemoryError",
        "NodeMissing",
        "FabricLinkDown",
        "DiskNearlyFull",
    }


def _gcp_settings() -> monitoring.Monitoring:
    spec = spec_of(gcp_values(login={}))
    thresholds = monitoring.Thresholds(**spec.monitoring.alerts.model_dump())
    return monitoring.Monitoring("c", gcp_monitoring.discovery(spec, "my-gpu-project", "us-central1-a"), 15, thresholds)


def _azure_settings() -> monitoring.Monitoring:
    spec = spec_of(aws_values(login={}))  # the discovery reads the cluster's name only
    thresholds = monitoring.Thresholds(**spec.monitoring.alerts.model_dump())
    return monitoring.Monitoring("c", azure_monitoring.discovery(spec), 15, thresholds)


@pytest.mark.parametrize("cloud", ["aws", "gcp", "azure"])
def test_the_rendered_config_and_rules_pass_promtool(promtool, tmp_path, cloud):
    settings = {"aws": lambda: _settings(gpuTemperatureCelsius=85), "gcp": _gcp_settings, "azure": _azure_settings}
    m = settings[cloud]()
    rules = tmp_path / "rules.yml"
    rules.write_text(monitoring.alert_rules(m))
    config = tmp_path / "prometheus.yml"
    config.write_text(monitoring.prometheus_config(m).replace(monitoring.RULES_YML, str(rules)))
    for args in (["check", "config", str(config)], ["check", "rules", str(rules)]):
        run = subprocess.run([promtool, *args], capture_output=True, text=True)
        assert run.returncode == 0, run.stdout + run.stderr
    # a negative control: promtool does judge the rules
    rules.write_text(monitoring.alert_rules(m).replace("avg_over_time(", "avg_over_time((", 1))
    assert subprocess.run([promtool, "check", "rules", str(rules)], capture_output=True).returncode != 0


def test_the_scrape_config_keeps_to_this_clusters_gpu_nodes():
    config = yaml.safe_load(monitoring.prometheus_config(_settings()))
    jobs = {j["job_name"]: j for j in config["scrape_configs"]}
    assert set(jobs) == {"dcgm-exporter", "node-exporter"}
    sd = jobs["dcgm-exporter"]["ec2_sd_configs"][0]
    assert sd["port"] == 9400 and sd["region"] == "us-east-1"
    filters = {f["name"]: f["values"] for f in sd["filters"]}
    assert filters["tag:gpu-cluster:cluster"] == ["test"] and filters["tag:gpu-cluster:stack"] == ["test"]
    assert filters["tag:Name"] == ["test-node", "test-node-*"]  # not the login node nor the Slurm head
    targets = {r.get("target_label") for r in jobs["node-exporter"]["relabel_configs"]}
    assert {"__address__", "node", "instance_id", "pool", "cluster", "partition"} <= targets


# --- the spec ------------------------------------------------------------------------------------------------------


def test_the_gce_discovery_keeps_to_this_clusters_gpu_nodes():
    job = yaml.safe_load(monitoring.prometheus_config(_gcp_settings()))["scrape_configs"][0]
    sd = job["gce_sd_configs"][0]
    assert (sd["project"], sd["zone"], sd["port"]) == ("my-gpu-project", "us-central1-a", 9400)
    assert '(labels.gpu-cluster_cluster = "test")' in sd["filter"] and '(status = "RUNNING")' in sd["filter"]
    drop = job["relabel_configs"][1]  # the login node and the Slurm head carry gpu-cluster_role; GPU nodes do not
    assert drop == {"source_labels": ["__meta_gce_label_gpu_cluster_role"], "regex": ".+", "action": "drop"}


def test_auto_is_self_hosted_where_there_is_a_login_node_on_aws_and_gcp():
    assert spec_of(aws_values(login={})).prometheus == "selfHosted"
    assert spec_of(aws_values(scheduler="slurm")).prometheus == "selfHosted"  # Slurm always has a login node
    assert spec_of(aws_values()).prometheus == "none"  # nowhere private to run it
    assert spec_of(aws_values(login={}, network={"egress": "none"})).prometheus == "none"
    assert spec_of(gcp_values(login={})).prometheus == "selfHosted"
    assert spec_of(gcp_values(login={}, scheduler="kubernetes")).prometheus == "none"  # not wired for Kubernetes


def test_the_azure_discovery_uses_the_managed_identity_and_drops_the_login_node():
    job = yaml.safe_load(monitoring.prometheus_config(_azure_settings()))["scrape_configs"][0]
    sd = job["azure_sd_configs"][0]
    assert sd["authentication_method"] == "ManagedIdentity" and sd["port"] == 9400
    assert sd["client_id"] == azure_monitoring.CLIENT_ID_PLACEHOLDER  # filled at deploy
    drop = job["relabel_configs"][1]
    assert drop["action"] == "drop" and drop["regex"] == "test-(login|head)"


def test_self_hosted_where_it_cannot_be_built_gets_one_keyed_error_per_reason():
    huaweicloud = {
        "gpu-cluster:cloud": "huaweicloud",
        "huaweicloud:region": "cn-north-4",
        "gpu-cluster:cluster": {
            "instanceType": "pi2.2xlarge.4",
            "nodes": 1,
            "nodeGroup": "instances",
            "zone": "cn-north-4a",
            "monitoring": {"prometheus": "selfHosted", "dcgmExporter": False},
            "network": {"egress": "none"},
        },
    }
    with pytest.raises(ConfigErrors) as caught:
        spec_of(huaweicloud)
    lines = [e for e in str(caught.value).splitlines() if "monitoring.prometheus" in e]
    assert len(lines) == 3, lines  # Huawei builds it (catalog/monitoring.yaml selfHosted): not among the reasons
    assert not any("not built on huaweicloud" in e for e in lines)
    assert any("needs a host: add a login node" in e for e in lines)
    assert any("dcgmExporter false" in e for e in lines) and any("egress nat" in e for e in lines)


def test_bad_thresholds_are_refused_naming_the_key():
    with pytest.raises(ConfigErrors) as caught:
        spec_of(aws_values(login={}, monitoring={"retentionDays": 0, "alerts": {"diskFullPercent": 100}}))
    text = str(caught.value)
    assert "monitoring.retentionDays" in text and "monitoring.alerts.diskFullPercent" in text


# --- AWS ------------------------------------------------------------------------------------------------------------


def _user_data(resource: dict[str, Any]) -> str:
    return gzip.decompress(base64.b64decode(resource["inputs"]["userDataBase64"])).decode()


@pytest.mark.parametrize("cluster", [{"login": {}}, {"scheduler": "slurm"}], ids=["vm-login", "slurm"])
def test_aws_login_node_runs_the_part_and_its_role_may_list_instances(cluster):
    plan = plan_values(aws_values(**cluster))
    login = next(r for r in resources_of(plan, "ec2/instance:Instance") if r["name"].endswith("-login"))
    doc = yaml.safe_load(_user_data(login))
    # EC2 takes at most 16 KB of user data before base64 (EC2 User Guide, instancedata-add-user-data)
    assert len(base64.b64decode(login["inputs"]["userDataBase64"])) < 16 * 1024
    paths = {f["path"] for f in doc["write_files"]}
    assert {monitoring.PROMETHEUS_YML, monitoring.RULES_YML, "/etc/systemd/system/gpu-cluster-prometheus.service"} <= (
        paths
    )
    assert ["systemctl", "enable", "--now", "--no-block", "gpu-cluster-monitoring.service"] in doc["runcmd"]
    assert "grafana-admin-password" not in json.dumps(doc["runcmd"])  # generated on the node, never in user data
    policies = {r["name"]: r for r in resources_of(plan, "iam/rolePolicy:RolePolicy")}
    statement = json.loads(policies["test-aws-node-role-monitoring"]["inputs"]["policy"])["Statement"]
    assert statement == [
        {"Sid": "DiscoverClusterNodes", "Effect": "Allow", "Action": ["ec2:DescribeInstances"], "Resource": "*"}
    ]
    rules = {r["name"]: r["inputs"] for r in resources_of(plan, "SecurityGroupIngressRule")}
    for exporter, port in (("dcgm-exporter", 9400), ("node-exporter", 9100)):
        rule = rules[f"test-aws-sg-{exporter}-from-login"]
        assert rule["fromPort"] == rule["toPort"] == port
    summary = plan.as_json()["summary"]["monitoring"]
    assert summary["prometheus"] == "selfHosted"
    assert "AWS-StartPortForwardingSession" in summary["grafana"]["forward"]


def test_aws_without_self_hosted_monitoring_registers_no_grant_and_no_login_user_data():
    plan = plan_values(aws_values(login={}, monitoring={"prometheus": "none"}))
    assert not [r for r in resources_of(plan, "iam/rolePolicy:RolePolicy") if r["name"].endswith("-monitoring")]
    login = next(r for r in resources_of(plan, "ec2/instance:Instance") if r["name"].endswith("-login"))
    assert login["inputs"].get("userDataBase64") is None
    assert plan.as_json()["summary"]["monitoring"]["prometheus"] == "none"


@pytest.mark.parametrize("cluster", [{"login": {}}, {"scheduler": "slurm"}], ids=["vm-login", "slurm"])
def test_gcp_login_node_runs_the_part_and_its_account_may_list_instances(cluster):
    plan = plan_values(gcp_values(**cluster))
    login = next(r for r in resources_of(plan, "compute/instance:Instance") if r["name"].endswith("-login"))
    script = login["inputs"]["metadata"]["startup-script"]
    assert f"cat > {monitoring.PROMETHEUS_YML} <<" in script
    assert "systemctl enable --now --no-block gpu-cluster-monitoring.service" in script
    roles = {r["inputs"]["role"] for r in resources_of(plan, "projects/iAMMember:IAMMember")}
    assert "roles/compute.viewer" in roles
    forward = plan.as_json()["summary"]["monitoring"]["grafana"]["forward"]
    assert "--tunnel-through-iap -- -N -L 3000:127.0.0.1:3000" in forward


def test_gcp_without_a_login_node_grants_no_compute_viewer():
    plan = plan_values(gcp_values())
    assert "roles/compute.viewer" not in {r["inputs"]["role"] for r in resources_of(plan, "IAMMember")}


def test_nodes_without_the_dcgm_exporter_are_not_scraped_for_it():
    """Non-NVIDIA GPUs run the node exporter only (bootstrap/metrics.py): a DCGM job would page NodeMissing forever."""
    m = _settings()
    other = monitoring.Monitoring(m.cluster, m.discovery, m.retention_days, m.alerts, m.partition, gpu_metrics=False)
    jobs = [j["job_name"] for j in yaml.safe_load(monitoring.prometheus_config(other))["scrape_configs"]]
    assert jobs == ["node-exporter"]


@pytest.mark.parametrize("cluster", [{"login": {}}, {"scheduler": "slurm"}], ids=["vm-login", "slurm"])
def test_azure_login_node_runs_the_part_and_its_identity_may_read_the_group(cluster):
    plan = plan_stack_with("azure-dev", **cluster)
    login = next(r for r in resources_of(plan, "compute:VirtualMachine") if r["name"].endswith("-login"))
    raw = base64.b64decode(login["inputs"]["osProfile"]["customData"])
    text = (gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw).decode()
    doc = yaml.safe_load(text)
    config = next(f["content"] for f in doc["write_files"] if f["path"] == monitoring.PROMETHEUS_YML)
    sd = yaml.safe_load(config)["scrape_configs"][0]["azure_sd_configs"][0]
    # the deploy-time values filled in: the identity's client id, the subscription, the resource group
    assert sd["client_id"] == "<client id of dev-azure-identity>"
    assert sd["resource_group"] == "<autoname:dev-azure-rg>" and "@" not in sd["subscription_id"]
    roles = [r["inputs"]["roleDefinitionId"] for r in resources_of(plan, "RoleAssignment")]
    assert any(r.endswith("/roleDefinitions/acdd72a7-3385-48ef-bd42-f606fba81ae7") for r in roles)  # Reader
    forward = plan.as_json()["summary"]["monitoring"]["grafana"]["forward"]
    assert "az network bastion tunnel" in forward and "-L 3000:127.0.0.1:3000" in forward
