"""GCP elastic fleets: the MIG autoscaler's registered inputs per metric kind and for schedules, the cluster's queue,
the spot mix's standard floor group, the Ops Agent part and its script (against stubs), the refusals by key."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import yaml

from components.errors import ConfigError
from components.layout.gcp import scaling as gcp_scaling

from .conftest import one, plan_values, resources_of
from .test_layout_gcp import gcp_values

SCRIPT = Path(__file__).resolve().parent.parent / "components" / "bootstrap" / "gcp_ops_agent.sh"
GPU_METRIC = "prometheus.googleapis.com/DCGM_FI_DEV_GPU_UTIL/gauge"


def fleet(**cluster):
    # g2-standard-24: 2 x L4, sold on demand and as Spot; no compact placement (its vmCount is fixed)
    base = {"gpu": "L4:2", "instanceType": "g2-standard-24", "nodes": 2, "minNodes": 1, "maxNodes": 12}
    base["placement"] = "none"
    base.update(cluster)
    return gcp_values(**base)


def policy(plan):
    return one(plan, "compute/autoscaler:Autoscaler")["inputs"]["autoscalingPolicy"]


def startup(plan, name="test-gcp-template"):
    templates = {r["name"]: r["inputs"] for r in resources_of(plan, "compute/instanceTemplate:InstanceTemplate")}
    return templates[name]["metadata"]["startup-script"]


@pytest.fixture(scope="module")
def gpu_util():
    return plan_values(fleet(scaling={"metric": "gpuUtilization", "target": 70, "scaleInCooldownSeconds": 900}))


def test_gpu_utilisation_is_a_per_group_metric_of_the_ops_agent_summed_over_the_gpus(gpu_util):
    auto = one(gpu_util, "compute/autoscaler:Autoscaler")["inputs"]
    assert auto["target"] == "<id of test-gcp-mig>"
    assert auto["zone"] == "us-central1-a"
    pol = auto["autoscalingPolicy"]
    assert (pol["minReplicas"], pol["maxReplicas"], pol["mode"]) == (1, 12, "ON")
    # one node takes 70 % on each of its 2 GPUs: the summed percent over 140 is the number of nodes wanted
    assert pol["metrics"] == [
        {
            "name": GPU_METRIC,
            "filter": f'metric.type = "{GPU_METRIC}" AND resource.type = "prometheus_target" '
            'AND resource.labels.job = "gpu-cluster-test"',
            "singleInstanceAssignment": 140,
        }
    ]
    assert pol["scaleInControl"] == {"maxScaledInReplicas": {"fixed": 1}, "timeWindowSec": 900}
    assert "scalingSchedules" not in pol
    # the group starts at `nodes`; the autoscaler owns its size afterwards
    assert one(gpu_util, "compute/instanceGroupManager:InstanceGroupManager")["inputs"]["targetSize"] == 2


def test_the_ops_agent_part_scrapes_the_dcgm_exporter_for_the_autoscalers_job(gpu_util):
    script = startup(gpu_util)
    assert "/usr/local/sbin/gpu-cluster-ops-agent" in script
    assert "OPS_AGENT_VERSION=" in script and "2.*.*" in script
    config = gcp_scaling.ops_agent_config("gpu-cluster-test", 9400)
    assert config.splitlines()[1] in script  # the rendered config is what the node gets
    body = yaml.safe_load(config)
    receiver = body["metrics"]["receivers"]["gpu_cluster_dcgm"]
    assert receiver["type"] == "prometheus"
    job = receiver["config"]["scrape_configs"][0]
    assert job["job_name"] == "gpu-cluster-test"
    assert job["static_configs"] == [{"targets": ["localhost:9400"]}]
    assert job["metric_relabel_configs"] == [
        {"source_labels": ["__name__"], "regex": "DCGM_FI_DEV_GPU_UTIL", "action": "keep"}
    ]
    assert body["metrics"]["service"]["pipelines"] == {"gpu_cluster_dcgm": {"receivers": ["gpu_cluster_dcgm"]}}


def test_the_node_identity_writes_metrics_with_metric_writer_and_nothing_more(gpu_util):
    roles = {r["inputs"]["role"] for r in resources_of(gpu_util, "projects/iAMMember:IAMMember")}
    assert "roles/monitoring.metricWriter" in roles
    # no new grant for the metric: the role the nodes already hold is Cloud Monitoring's narrowest writer
    assert not any(r in roles for r in ("roles/monitoring.editor", "roles/monitoring.admin", "roles/editor"))
    assert not resources_of(gpu_util, "pubsub/subscriptionIAMMember:SubscriptionIAMMember")


def test_queue_auto_creates_topic_and_subscription_and_scales_on_its_backlog_to_zero():
    plan = plan_values(fleet(minNodes=0, nodes=0, scaling={"metric": "queueDepth", "target": 4, "queue": "auto"}))
    topic = one(plan, "pubsub/topic:Topic")["inputs"]
    sub = one(plan, "pubsub/subscription:Subscription")["inputs"]
    assert topic["name"] == sub["name"] == "test-work"
    assert sub["topic"] == "<id of test-gcp-queue>"
    assert sub["ackDeadlineSeconds"] == 600
    grant = one(plan, "pubsub/subscriptionIAMMember:SubscriptionIAMMember")["inputs"]
    assert grant == {
        "subscription": "test-work",
        "role": "roles/pubsub.subscriber",
        "member": "serviceAccount:<email of test-gcp-sa>",
        "project": "my-project",
    }
    pol = policy(plan)
    assert pol["minReplicas"] == 0
    name = "pubsub.googleapis.com/subscription/num_undelivered_messages"
    assert pol["metrics"] == [
        {
            "name": name,
            "filter": f'metric.type = "{name}" AND resource.type = "pubsub_subscription" '
            'AND resource.labels.subscription_id = "test-work"',
            "singleInstanceAssignment": 4,
        }
    ]


def test_an_existing_subscription_is_read_not_created():
    sub = "projects/other-project/subscriptions/render-jobs"
    plan = plan_values(fleet(scaling={"metric": "queueDepth", "target": 2, "queue": sub}))
    assert not resources_of(plan, "pubsub/topic:Topic")
    assert not resources_of(plan, "pubsub/subscription:Subscription")
    assert 'resource.labels.subscription_id = "render-jobs"' in policy(plan)["metrics"][0]["filter"]


def test_a_queue_not_in_pubsubs_form_is_refused_by_key():
    with pytest.raises(ConfigError, match=r"gpu-cluster:cluster\.scaling\.queue: got 'arn:aws:sqs"):
        plan_values(fleet(scaling={"metric": "queueDepth", "target": 2, "queue": "arn:aws:sqs:us-east-1:1:q"}))


def test_schedules_are_floors_until_the_next_entry_in_the_time_zone():
    plan = plan_values(
        fleet(
            minNodes=0,
            nodes=1,
            scaling={
                "metric": "schedule",
                "timeZone": "Europe/Berlin",
                "schedule": [{"cron": "0 8 * * 1-5", "nodes": 6}, {"cron": "30 19 * * 1-5", "nodes": 0}],
            },
        )
    )
    pol = policy(plan)
    assert "metrics" not in pol
    assert (pol["minReplicas"], pol["maxReplicas"]) == (0, 12)
    # the night entry (0 nodes) is the absence of a floor: no schedule of its own
    assert pol["scalingSchedules"] == [
        {
            "name": "test-0",
            "schedule": "0 8 * * 1-5",
            "durationSec": 11 * 3600 + 1800,
            "minRequiredReplicas": 6,
            "timeZone": "Europe/Berlin",
            "description": "gpu-cluster: at least 6 nodes from '0 8 * * 1-5'",
        }
    ]


def test_a_schedule_entry_shorter_than_gcps_minimum_is_refused():
    sched = [{"cron": "0 8 * * *", "nodes": 3}, {"cron": "2 8 * * *", "nodes": 1}]
    with pytest.raises(ConfigError, match=r"scaling\.schedule\[0\]\.cron: '0 8 \* \* \*' lasts 120 s"):
        plan_values(fleet(scaling={"metric": "schedule", "schedule": sched}))


def test_spot_with_an_on_demand_base_is_a_second_group_of_standard_vms():
    plan = plan_values(
        fleet(
            nodes=3,
            minNodes=1,
            spot={"enabled": True, "onDemandBase": 1},
            scaling={"metric": "gpuUtilization", "target": 60},
        )
    )
    templates = {r["name"]: r["inputs"] for r in resources_of(plan, "compute/instanceTemplate:InstanceTemplate")}
    assert templates["test-gcp-template"]["scheduling"]["provisioningModel"] == "SPOT"
    floor = templates["test-gcp-ondemand-template"]["scheduling"]
    assert floor["provisioningModel"] == "STANDARD" and floor["preemptible"] is False
    assert floor["automaticRestart"] is True and "instanceTerminationAction" not in floor
    groups = {r["name"]: r["inputs"] for r in resources_of(plan, "compute/instanceGroupManager:InstanceGroupManager")}
    assert groups["test-gcp-ondemand-mig"]["targetSize"] == 1
    assert groups["test-gcp-ondemand-mig"]["versions"][0]["instanceTemplate"] == (
        "<self link (unique id) of test-gcp-ondemand-template>"
    )
    assert groups["test-gcp-mig"]["targetSize"] == 2  # spot above the base
    pol = policy(plan)
    assert (pol["minReplicas"], pol["maxReplicas"]) == (0, 11)
    assert one(plan, "compute/autoscaler:Autoscaler")["inputs"]["target"] == "<id of test-gcp-mig>"


def test_spot_base_without_scaling_still_builds_the_floor_and_no_autoscaler():
    plan = plan_values(fleet(nodes=2, minNodes=2, maxNodes=2, spot={"enabled": True, "onDemandBase": 1}))
    assert not resources_of(plan, "compute/autoscaler:Autoscaler")
    groups = {r["name"]: r["inputs"] for r in resources_of(plan, "compute/instanceGroupManager:InstanceGroupManager")}
    assert (groups["test-gcp-mig"]["targetSize"], groups["test-gcp-ondemand-mig"]["targetSize"]) == (1, 1)


@pytest.mark.parametrize(
    ("cluster", "key"),
    [
        ({"spot": {"enabled": True, "fallback": "onDemand"}}, r"spot\.fallback: onDemand is not built on GCP"),
        ({"spot": {"enabled": True, "onDemandBase": 2}, "minNodes": 1}, r"spot\.onDemandBase: 2 is more than minNodes"),
        ({"minNodes": 0, "scaling": {"metric": "gpuUtilization", "target": 70}}, r"minNodes: 0 with metric"),
        (
            {"monitoring": {"dcgmExporter": False}, "scaling": {"metric": "gpuUtilization", "target": 70}},
            r"scaling\.metric: gpuUtilization reads the DCGM exporter",
        ),
        (
            {"network": {"egress": "none"}, "scaling": {"metric": "gpuUtilization", "target": 70}},
            r"network\.egress: none with metric gpuUtilization: the Ops Agent is downloaded",
        ),
    ],
)
def test_what_gcp_cannot_build_is_refused_by_key(cluster, key):
    with pytest.raises(ConfigError, match=key):
        plan_values(fleet(**cluster))


def test_existing_stacks_get_no_autoscaler_and_no_ops_agent(stack_plan):
    for stack in ("gcp-dev", "gcp-a3mega"):
        plan = stack_plan(stack)
        assert not resources_of(plan, "compute/autoscaler:Autoscaler")
        assert not resources_of(plan, "pubsub/topic:Topic")
        assert "ops-agent" not in startup(plan, f"{stack.removeprefix('gcp-')}-gcp-template")


# --- the Ops Agent script, run against stubbed dpkg, curl and systemctl ------------------------------------------


def run_agent(tmp_path: Path, installed: bool, download_ok: bool = True) -> tuple[subprocess.CompletedProcess, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "calls.log"
    stubs = {
        "dpkg": f'echo "dpkg $*" >> "{log}"; exit {0 if installed else 1}',
        # curl -o FILE URL: the stub writes an installer that logs how it was called
        "curl": (
            f'echo "curl $*" >> "{log}"; {"" if download_ok else "exit 22;"} '
            'while [ $# -gt 0 ]; do if [ "$1" = -o ]; then out="$2"; fi; shift; done; '
            f'printf \'#!/bin/bash\\necho "installer $*" >> "{log}"\\n\' > "$out"'
        ),
        "systemctl": f'echo "systemctl $*" >> "{log}"',
    }
    for name, body in stubs.items():
        path = bin_dir / name
        path.write_text(f"#!/bin/bash\n{body}\n")
        path.chmod(0o755)
    env = {
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "OPS_AGENT_INSTALLER": "https://dl.google.com/cloudagents/add-google-cloud-ops-agent-repo.sh",
        "OPS_AGENT_VERSION": "2.*.*",
    }
    proc = subprocess.run(["bash", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=30)
    return proc, log.read_text() if log.exists() else ""


def test_ops_agent_script_installs_the_pinned_major_then_restarts(tmp_path):
    proc, calls = run_agent(tmp_path, installed=False)
    assert proc.returncode == 0, proc.stderr
    lines = calls.splitlines()
    assert lines[0] == "dpkg -s google-cloud-ops-agent"
    assert lines[1].startswith("curl -fsS") and lines[1].endswith(
        "https://dl.google.com/cloudagents/add-google-cloud-ops-agent-repo.sh"
    )
    assert lines[2] == "installer --also-install --version=2.*.*"
    assert lines[3] == "systemctl restart google-cloud-ops-agent"


def test_ops_agent_script_only_restarts_when_installed(tmp_path):
    proc, calls = run_agent(tmp_path, installed=True)
    assert proc.returncode == 0, proc.stderr
    assert calls.splitlines() == ["dpkg -s google-cloud-ops-agent", "systemctl restart google-cloud-ops-agent"]


def test_ops_agent_script_a_failed_download_does_not_fail_the_boot(tmp_path):
    proc, calls = run_agent(tmp_path, installed=False, download_ok=False)
    assert proc.returncode == 0
    assert "could not download" in proc.stderr
    assert "installer" not in calls and "systemctl" not in calls


def test_ops_agent_script_is_shellcheck_clean():
    subprocess.run(["shellcheck", str(SCRIPT)], check=True)


def test_minnodes_zero_with_gpu_utilisation_is_allowed_when_a_schedule_brings_nodes_back():
    sched = [{"cron": "0 8 * * 1-5", "nodes": 1}, {"cron": "0 20 * * 1-5", "nodes": 0}]
    plan = plan_values(
        fleet(minNodes=0, nodes=0, scaling={"metric": "gpuUtilization", "target": 70, "schedule": sched})
    )
    pol = policy(plan)
    assert pol["minReplicas"] == 0
    assert [s["minRequiredReplicas"] for s in pol["scalingSchedules"]] == [1]
    assert pol["metrics"][0]["name"] == GPU_METRIC


def test_an_existing_service_account_gets_the_subscriber_role_on_the_clusters_subscription_only():
    email = "nodes-sa@my-project.iam.gserviceaccount.com"
    plan = plan_values(
        fleet(identity={"existing": email}, scaling={"metric": "queueDepth", "target": 4, "queue": "auto"})
    )
    grant = one(plan, "pubsub/subscriptionIAMMember:SubscriptionIAMMember")["inputs"]
    assert (grant["member"], grant["subscription"]) == (f"serviceAccount:{email}", "test-work")
    assert not resources_of(plan, "projects/iAMMember:IAMMember")  # nothing on the project for an existing account


def test_an_existing_service_account_is_told_the_role_the_ops_agent_needs():
    email = "nodes-sa@my-project.iam.gserviceaccount.com"
    plan = plan_values(fleet(identity={"existing": email}, scaling={"metric": "gpuUtilization", "target": 70}))
    assert any(
        w.startswith("gpu-cluster:cluster.identity.existing: the Ops Agent") and "roles/monitoring.metricWriter" in w
        for w in plan.warnings()
    )
