"""GCP monitoring.logs and monitoring.notify as registered with Pulumi's mocks: the Ops Agent's config per node kind
(parsed as YAML), the cluster's log bucket and sink (CMEK under `encryption`), one alerting policy per rule with the
email channels, the refusals; and the elastic fleet's autoscaler receiver kept in the one agent config."""

from __future__ import annotations

import pytest
import yaml

from components.bootstrap.monitoring import Thresholds, rule_list
from components.errors import ConfigError, ConfigErrors
from components.layout.gcp import observe
from components.layout.gcp import plan as gcp_plan

from .conftest import gcp_values, one, plan_stack, plan_values, resources_of, spec_of

CONFIG = "/etc/google-cloud-ops-agent/config.yaml"


def slurm(**monitoring):
    return gcp_values(scheduler="slurm", monitoring=monitoring, slurm={"accounting": True})


@pytest.fixture(scope="module")
def both():
    return plan_values(slurm(logs={"enabled": True, "retentionDays": 90}, notify=["ops@example.com", "b@example.org"]))


def scripts(plan) -> dict[str, str]:
    """Every node kind's startup-script: the GPU template's, the head's and the login node's."""
    out = {"gpu": one(plan, "compute/instanceTemplate:InstanceTemplate")["inputs"]["metadata"]["startup-script"]}
    for inst in resources_of(plan, "compute/instance:Instance"):
        out["head" if inst["name"].endswith("-head") else "login"] = inst["inputs"]["metadata"]["startup-script"]
    return out


def body(values, kind):
    b = observe.agent_body(spec_of(values), kind)
    assert b is not None
    return b


def test_every_node_kind_runs_the_ops_agent_with_its_config(both):
    values = slurm(logs={"enabled": True, "retentionDays": 90}, notify=["ops@example.com", "b@example.org"])
    for kind, script in scripts(both).items():
        assert "/usr/local/sbin/gpu-cluster-ops-agent" in script, kind
        text = observe.config_text(body(values, kind))
        # the rendered config (parsed back: valid YAML) is what the node gets
        assert yaml.safe_load(text) == body(values, kind)
        assert all(line in script for line in text.splitlines()[1:6]), kind


def test_logs_read_cloud_init_the_slurm_daemons_and_our_journal_units_labelled_with_the_cluster():
    values = slurm(logs={"enabled": True})
    head = body(values, "head")["logging"]
    assert head["receivers"]["gpu_cluster_files"] == {
        "type": "files",
        "include_paths": [
            "/var/log/cloud-init.log",
            "/var/log/cloud-init-output.log",
            "/var/log/slurm/slurmctld.log",
            "/var/log/slurm/slurmdbd.log",  # slurm.accounting: slurmdbd runs on the head
        ],
    }
    assert body(values, "gpu")["logging"]["receivers"]["gpu_cluster_files"]["include_paths"][-1] == (
        "/var/log/slurm/slurmd.log"
    )
    assert body(values, "login")["logging"]["receivers"]["gpu_cluster_files"]["include_paths"] == [
        "/var/log/cloud-init.log",
        "/var/log/cloud-init-output.log",
    ]
    assert head["receivers"]["gpu_cluster_journal"] == {"type": "systemd_journald"}
    (keep,) = head["processors"]["gpu_cluster_units"]["match_any"]
    assert head["processors"]["gpu_cluster_units"]["type"] == "exclude_logs"
    assert keep.startswith("NOT (jsonPayload._SYSTEMD_UNIT =~ ") and 'jsonPayload._TRANSPORT = "kernel"' in keep
    assert "gpu-cluster-" in keep and "slurmctld" in keep and "google-startup-scripts" in keep
    labels = head["processors"]["gpu_cluster_labels"]
    assert labels == {
        "type": "modify_fields",
        "fields": {
            'labels."gpu-cluster_cluster"': {"static_value": "test"},
            'labels."gpu-cluster_stack"': {"static_value": "test"},
            'labels."gpu-cluster_node"': {"static_value": "head"},
        },
    }
    assert head["service"]["pipelines"] == {
        "gpu_cluster_files": {"receivers": ["gpu_cluster_files"], "processors": ["gpu_cluster_labels"]},
        "gpu_cluster_journal": {
            "receivers": ["gpu_cluster_journal"],
            "processors": ["gpu_cluster_units", "gpu_cluster_labels"],
        },
    }
    assert "metrics" not in head  # no notify: no metrics receiver


def test_the_bucket_keeps_the_retention_and_the_sink_routes_the_labelled_entries(both):
    bucket = one(both, "logging/projectBucketConfig:ProjectBucketConfig")["inputs"]
    assert bucket == {
        **bucket,
        "project": "my-gpu-project",
        "location": "us-central1",
        "bucketId": "gpu-cluster-test-test-logs",
        "retentionDays": 90,
    }
    assert "cmekSettings" not in bucket
    sink = one(both, "logging/projectSink:ProjectSink")
    assert sink["inputs"] == {
        **sink["inputs"],
        "name": "gpu-cluster-test-test-logs",
        "destination": "logging.googleapis.com/projects/my-gpu-project/locations/us-central1/buckets/"
        "gpu-cluster-test-test-logs",
        "filter": 'labels."gpu-cluster_cluster"="test" AND labels."gpu-cluster_stack"="test"',
    }


def test_with_encryption_the_bucket_takes_the_key_after_loggings_cmek_account_is_granted():
    plan = plan_values(slurm(logs={"enabled": True}) | {})
    assert not resources_of(plan, "kms/cryptoKeyIAMMember:CryptoKeyIAMMember")
    values = slurm(logs={"enabled": True})
    values["gpu-cluster:cluster"]["encryption"] = {"key": "auto"}
    plan = plan_values(values)
    grant = {g["name"]: g for g in resources_of(plan, "kms/cryptoKeyIAMMember:CryptoKeyIAMMember")}[
        "test-gcp-key-logging"
    ]
    assert grant["inputs"] == {
        "cryptoKeyId": "<id of test-gcp-key>",
        "role": "roles/cloudkms.cryptoKeyEncrypterDecrypter",
        "member": "serviceAccount:<Cloud Logging CMEK service account of my-gpu-project: known at deploy>",
    }
    bucket = one(plan, "logging/projectBucketConfig:ProjectBucketConfig")
    assert bucket["inputs"]["cmekSettings"] == {"kmsKeyName": "<id of test-gcp-key>"}
    assert bucket["inputs"]["location"] == "us-central1"  # the key's location


def test_one_alert_policy_per_rule_with_its_promql_scoped_to_the_cluster_and_every_channel(both):
    channels = {
        c["name"]: c["inputs"] for c in resources_of(both, "monitoring/notificationChannel:NotificationChannel")
    }
    assert {c["labels"]["email_address"] for c in channels.values()} == {"ops@example.com", "b@example.org"}
    assert all(c["type"] == "email" for c in channels.values())
    policies = {p["name"]: p["inputs"] for p in resources_of(both, "monitoring/alertPolicy:AlertPolicy")}
    rules = rule_list(Thresholds(**spec_of(slurm(notify=["a@b.co"])).monitoring.alerts.model_dump()))
    assert set(policies) == {f"test-gcp-alert-{r['alert']}" for r in rules}
    idle = policies["test-gcp-alert-GpuIdle"]
    (cond,) = idle["conditions"]
    promql = cond["conditionPrometheusQueryLanguage"]
    assert promql == {
        "query": 'avg_over_time(DCGM_FI_DEV_GPU_UTIL{job="gpu-cluster-test-test-alerts"}[5m]) < 5',
        "duration": "3600s",  # gpuIdleMinutes 60
        "evaluationInterval": "60s",
        "labels": {"severity": "warning"},
        "ruleGroup": "gpu-cluster-test-test-alerts",
        "alertRule": "GpuIdle",
    }
    assert idle["severity"] == "WARNING" and idle["combiner"] == "OR"
    assert len(idle["notificationChannels"]) == 2
    assert "${metric.label.gpu}" in idle["documentation"]["content"]
    disk = policies["test-gcp-alert-DiskNearlyFull"]["conditions"][0]["conditionPrometheusQueryLanguage"]["query"]
    assert 'node_filesystem_avail_bytes{job="gpu-cluster-test-test-alerts",' in disk
    assert policies["test-gcp-alert-GpuXidError"]["severity"] == "CRITICAL"


def test_notify_scrapes_the_gpu_nodes_exporters_into_managed_prometheus_only_the_rules_series():
    values = slurm(notify=["ops@example.com"])
    gpu = body(values, "gpu")
    receiver = gpu["metrics"]["receivers"]["gpu_cluster_alerts"]
    job = receiver["config"]["scrape_configs"][0]
    assert receiver["type"] == "prometheus"
    assert job["job_name"] == "gpu-cluster-test-test-alerts"
    assert job["static_configs"] == [{"targets": ["localhost:9400", "localhost:9100"]}]
    kept = job["metric_relabel_configs"][0]["regex"].split("|")
    for rule in rule_list(Thresholds(**spec_of(values).monitoring.alerts.model_dump())):
        for name in observe._METRIC.findall(rule["expr"]):
            assert name[0] in kept, name
    assert "logging" not in gpu
    assert observe.part_kinds(spec_of(values)) == ("gpu",)  # no logs: the head and login node keep their scripts


def test_an_elastic_fleet_keeps_the_autoscalers_receiver_in_the_same_config():
    values = gcp_values(
        gpu="L4:2", instanceType="g2-standard-24", nodes=2, minNodes=1, maxNodes=4, placement="none",
        scaling={"metric": "gpuUtilization", "target": 70}, monitoring={"logs": {"enabled": True}},
    )  # fmt: skip
    layout = gcp_plan(spec_of(values))
    script = layout.startup_script or ""
    # one agent, one config: the autoscaler's DCGM receiver and the logs' receivers together
    assert script.count("cat > /etc/systemd/system/gpu-cluster-ops-agent.service") == 1
    assert "gpu_cluster_dcgm" in script and "gpu_cluster_journal" in script
    assert "it sends DCGM_FI_DEV_GPU_UTIL" in script  # the summary still names the autoscaler's metric


def test_off_by_default_nothing_registered_and_the_boot_data_unchanged():
    plan = plan_values(slurm())
    for t in ("ProjectBucketConfig", "ProjectSink", "AlertPolicy"):
        assert not resources_of(plan, t)
    assert all("gpu-cluster-ops-agent" not in s for s in scripts(plan).values())


def test_notify_without_the_dcgm_exporter_is_refused_with_its_key():
    values = slurm(notify=["ops@example.com"])
    values["gpu-cluster:cluster"]["monitoring"]["dcgmExporter"] = False
    with pytest.raises((ConfigError, ConfigErrors)) as err:
        gcp_plan(spec_of(values))
    assert "monitoring.notify" in str(err.value) and "dcgmExporter" in str(err.value)


def test_retention_beyond_cloud_loggings_3650_days_is_refused():
    with pytest.raises((ConfigError, ConfigErrors)) as err:
        spec_of(slurm(logs={"enabled": True, "retentionDays": 3651}))
    assert "monitoring.logs.retentionDays" in str(err.value) and "1 to 3650" in str(err.value)


def test_the_shipped_elastic_slurm_stack_ships_logs_and_alerts():
    plan = plan_stack("gcp-slurm-elastic")
    assert one(plan, "logging/projectSink:ProjectSink")["inputs"]["filter"].startswith(
        'labels."gpu-cluster_cluster"="slurm-elastic"'
    )
    assert len(resources_of(plan, "monitoring/alertPolicy:AlertPolicy")) == 7
    templates = resources_of(plan, "compute/instanceTemplate:InstanceTemplate")
    assert len(templates) == 2  # the two elastic partitions
    assert all("gpu_cluster_journal" in t["inputs"]["metadata"]["startup-script"] for t in templates)


def test_gke_ships_its_own_logs_into_the_clusters_bucket_by_the_clusters_name():
    plan = plan_values(gcp_values(scheduler="kubernetes", monitoring={"logs": {"enabled": True}}))
    sink = one(plan, "logging/projectSink:ProjectSink")["inputs"]
    name = one(plan, "container/cluster:Cluster")["inputs"]["name"]
    assert sink["filter"] == f'resource.labels.cluster_name="{name}" AND resource.labels.location="us-central1"'
    assert one(plan, "logging/projectBucketConfig:ProjectBucketConfig")["inputs"]["retentionDays"] == 30
    assert not resources_of(plan, "monitoring/alertPolicy:AlertPolicy")


def test_notify_with_gke_is_refused_with_its_key():
    values = gcp_values(scheduler="kubernetes", monitoring={"notify": ["ops@example.com"]})
    with pytest.raises((ConfigError, ConfigErrors)) as err:
        gcp_plan(spec_of(values))
    assert "monitoring.notify" in str(err.value) and "scheduler kubernetes" in str(err.value)


def test_the_bootstrap_summary_says_what_the_agent_sends_from_each_node_kind(both):
    got = scripts(both)
    assert "Managed Service for Prometheus" in got["gpu"].split("set -euo pipefail")[0]
    for kind in ("head", "login"):  # no exporter of ours to scrape there: logs only
        header = got[kind].split("set -euo pipefail")[0]
        assert "the node's logs to Cloud Logging" in header and "Managed Service for Prometheus" not in header
