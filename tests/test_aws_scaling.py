"""Elastic fleets on AWS: the Auto Scaling group's bounds and Spot mix, the target-tracking policy per metric kind,
the scheduled actions, the node role's scoped PutMetricData grant and the CloudWatch agent part, as registered
with the mocks (camelCase inputs); the agent script run against stubs."""

import base64
import gzip
import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from components.errors import ConfigError
from components.layout import aws as aws_layout

from .conftest import aws_values, one, plan_values, resources_of, spec_of

SCRIPT = Path(__file__).resolve().parent.parent / "components" / "bootstrap" / "aws_cloudwatch_agent.sh"
FLEET = {"instanceType": "g6e.xlarge", "gpu": None, "nodes": 1, "minNodes": 0, "maxNodes": 20, "placement": "none"}


def fleet(**cluster):
    return aws_values(**{**FLEET, **cluster})


def user_data(plan) -> dict:
    lt = one(plan, "launchTemplate:LaunchTemplate")["inputs"]
    return yaml.safe_load(gzip.decompress(base64.b64decode(lt["userData"])).decode())


def written(plan, path: str) -> str:
    return next(f["content"] for f in user_data(plan)["write_files"] if f["path"] == path)


@pytest.fixture(scope="module")
def shipped(stack_plan):
    return stack_plan("aws-inference-fleet")


def test_shipped_fleet_group_scales_to_zero_with_one_on_demand_node_under_spot(shipped):
    asg = one(shipped, "autoscaling/group:Group")["inputs"]
    assert (asg["minSize"], asg["desiredCapacity"], asg["maxSize"]) == (0, 1, 20)
    assert "launchTemplate" not in asg  # the template sits in the mixed-instances policy
    dist = asg["mixedInstancesPolicy"]["instancesDistribution"]
    assert dist == {
        "onDemandBaseCapacity": 1,
        "onDemandPercentageAboveBaseCapacity": 0,
        "spotAllocationStrategy": "price-capacity-optimized",
    }
    assert asg["capacityRebalance"] is True
    assert "enabledMetrics" not in asg  # only queueDepth needs group metrics
    # after deploy the policy and the schedules own the count: a later `pulumi up` leaves it alone
    assert one(shipped, "autoscaling/group:Group")["ignoreChanges"] == ["desiredCapacity"]


def test_shipped_fleet_tracks_gpu_utilisation_of_its_own_cluster(shipped):
    policy = one(shipped, "autoscaling/policy:Policy")["inputs"]
    assert policy["policyType"] == "TargetTrackingScaling"
    assert policy["autoscalingGroupName"] == "<autoname:inference-aws-asg>"
    assert policy["estimatedInstanceWarmup"] == 600  # scaleInCooldownSeconds (catalog scaleIn)
    tracking = policy["targetTrackingConfiguration"]
    assert tracking["targetValue"] == 70
    assert tracking["customizedMetricSpecification"] == {
        "namespace": "GpuCluster",
        "metricName": "nvidia_smi_utilization_gpu",
        "statistic": "Average",
        "metricDimensions": [{"name": "Cluster", "value": "inference"}],
    }


def test_shipped_fleet_night_schedule_moves_only_the_desired_count(shipped):
    schedules = sorted(
        (r["inputs"] for r in resources_of(shipped, "autoscaling/schedule:Schedule")), key=lambda s: s["recurrence"]
    )
    assert [(s["recurrence"], s["desiredCapacity"]) for s in schedules] == [("0 22 * * *", 0), ("0 7 * * 1-5", 1)]
    for s in schedules:
        assert s["timeZone"] == "America/New_York"
        assert (s["minSize"], s["maxSize"]) == (s["desiredCapacity"], -1)  # the entry's count is the floor
        assert s["autoscalingGroupName"] == "<autoname:inference-aws-asg>"
    assert len({s["scheduledActionName"] for s in schedules}) == 2


def test_node_role_may_put_metric_data_only_into_the_cluster_namespace(shipped):
    policies = {r["name"]: r["inputs"] for r in resources_of(shipped, "iam/rolePolicy:RolePolicy")}
    document = json.loads(policies["inference-aws-node-role-scaling"]["policy"])
    assert document["Statement"] == [
        {
            "Sid": "PutGpuMetricIntoClusterNamespace",
            "Effect": "Allow",
            "Action": "cloudwatch:PutMetricData",
            "Resource": "*",
            "Condition": {"StringEquals": {"cloudwatch:namespace": "GpuCluster"}},
        }
    ]
    # the broad managed CloudWatch policy (every namespace, logs) is not attached to a gpuUtilization fleet
    attached = [
        r["inputs"]["policyArn"] for r in resources_of(shipped, "iam/rolePolicyAttachment:RolePolicyAttachment")
    ]
    assert not any("CloudWatchAgentServerPolicy" in arn for arn in attached)
    assert any("AmazonSSMManagedInstanceCore" in arn for arn in attached)


def test_cloudwatch_agent_config_publishes_nvidia_gpu_utilisation_per_cluster(shipped):
    config = json.loads(written(shipped, "/etc/gpu-cluster/cloudwatch-agent.json"))
    metrics = config["metrics"]
    assert metrics["namespace"] == "GpuCluster"
    assert metrics["aggregation_dimensions"] == [["Cluster"]]
    assert metrics["metrics_collected"] == {
        "nvidia_gpu": {"measurement": ["utilization_gpu"], "append_dimensions": {"Cluster": "inference"}}
    }
    assert config["agent"]["omit_hostname"] is True
    env = written(shipped, "/etc/gpu-cluster/cloudwatch-agent.env")
    assert 'AGENT_URL="https://amazoncloudwatch-agent.s3.amazonaws.com/ubuntu/{arch}/latest/' in env
    runcmd = user_data(shipped)["runcmd"]
    assert ["systemctl", "enable", "--now", "--no-block", "gpu-cluster-cloudwatch-agent.service"] in runcmd


def test_queue_depth_auto_creates_the_queue_and_tracks_backlog_per_instance():
    plan = plan_values(fleet(scaling={"metric": "queueDepth", "target": 5, "queue": "auto"}))
    queue = one(plan, "sqs/queue:Queue")["inputs"]
    assert queue["sqsManagedSseEnabled"] is True
    asg = one(plan, "autoscaling/group:Group")["inputs"]
    assert asg["enabledMetrics"] == ["GroupInServiceInstances"] and asg["metricsGranularity"] == "1Minute"
    assert "mixedInstancesPolicy" not in asg  # on demand: no Spot mix
    tracking = one(plan, "autoscaling/policy:Policy")["inputs"]["targetTrackingConfiguration"]
    assert tracking["targetValue"] == 5
    m1, m2, e1 = tracking["customizedMetricSpecification"]["metrics"]
    assert m1["metricStat"] == {
        "metric": {
            "namespace": "AWS/SQS",
            "metricName": "ApproximateNumberOfMessagesVisible",
            "dimensions": [{"name": "QueueName", "value": "<autoname:test-aws-queue>"}],
        },
        "stat": "Sum",
    }
    assert m2["metricStat"]["metric"]["metricName"] == "GroupInServiceInstances"
    assert m2["metricStat"]["metric"]["dimensions"] == [
        {"name": "AutoScalingGroupName", "value": "<autoname:test-aws-asg>"}
    ]
    assert (m1["returnData"], m2["returnData"]) == (False, False)
    assert e1 == {
        "id": "e1",
        "label": "backlog per instance",
        "expression": "IF(m2 > 0, m1 / m2, m1)",
        "returnData": True,
    }
    # the workers may consume that queue only; no metric grant without gpuUtilization
    role_policy = next(
        r for r in resources_of(plan, "iam/rolePolicy:RolePolicy") if r["name"] == "test-aws-node-role-scaling"
    )
    (statement,) = json.loads(role_policy["inputs"]["policy"])["Statement"]
    assert statement["Sid"] == "ConsumeOwnQueue" and statement["Resource"].endswith("test-aws-queue>")
    assert "cloudwatch:PutMetricData" not in role_policy["inputs"]["policy"]


def test_queue_depth_on_an_existing_queue_uses_its_name_and_creates_none():
    arn = "arn:aws:sqs:us-east-1:123456789012:render-jobs"
    plan = plan_values(fleet(scaling={"metric": "queueDepth", "target": 3, "queue": arn}))
    assert resources_of(plan, "sqs/queue:Queue") == []
    m1 = one(plan, "autoscaling/policy:Policy")["inputs"]["targetTrackingConfiguration"][
        "customizedMetricSpecification"
    ]["metrics"][0]
    assert m1["metricStat"]["metric"]["dimensions"] == [{"name": "QueueName", "value": "render-jobs"}]
    assert not [r for r in resources_of(plan, "iam/rolePolicy:RolePolicy") if r["name"].endswith("-scaling")]


@pytest.mark.parametrize(
    "queue", ["render-jobs", "https://sqs.us-east-1.amazonaws.com/123456789012/q", "arn:aws:sns:x"]
)
def test_queue_not_in_the_sqs_arn_form_is_refused_with_its_key(queue):
    with pytest.raises(ConfigError) as info:
        aws_layout.plan(spec_of(fleet(scaling={"metric": "queueDepth", "target": 3, "queue": queue})))
    assert info.value.key == "gpu-cluster:cluster.scaling.queue"
    assert "arn:aws:sqs:" in info.value.message


def test_schedule_only_builds_scheduled_actions_and_no_policy():
    plan = plan_values(fleet(scaling={"metric": "schedule", "schedule": [{"cron": "30 18 * * 5", "nodes": 0}]}))
    assert resources_of(plan, "autoscaling/policy:Policy") == []
    (schedule,) = [r["inputs"] for r in resources_of(plan, "autoscaling/schedule:Schedule")]
    assert (schedule["recurrence"], schedule["timeZone"], schedule["desiredCapacity"]) == ("30 18 * * 5", "UTC", 0)
    assert "cloudwatch-agent" not in json.dumps(user_data(plan))  # no agent without gpuUtilization


def test_spot_fallback_on_demand_is_refused_on_aws_with_its_key():
    with pytest.raises(ConfigError) as info:
        aws_layout.plan(spec_of(fleet(spot={"enabled": True, "onDemandBase": 1, "fallback": "onDemand"})))
    assert info.value.key == "gpu-cluster:cluster.spot.fallback"


@pytest.mark.parametrize("schedule", [[], [{"cron": "0 22 * * *", "nodes": 0}]])
def test_gpu_utilisation_from_zero_with_nothing_to_bring_nodes_back_is_refused(schedule):
    values = fleet(scaling={"metric": "gpuUtilization", "target": 60, "schedule": schedule})
    with pytest.raises(ConfigError) as info:
        aws_layout.plan(spec_of(values))
    assert info.value.key == "gpu-cluster:cluster.minNodes"
    assert "no GPU metric" in info.value.message


def test_gpu_utilisation_with_a_floor_of_one_needs_no_schedule():
    layout = aws_layout.plan(spec_of(fleet(minNodes=1, scaling={"metric": "gpuUtilization", "target": 60})))
    assert layout.scaling is not None and layout.scaling.min_size == 1 and layout.scaling.schedule == ()


def test_gpu_utilisation_without_egress_is_refused_with_its_key():
    values = fleet(minNodes=1, scaling={"metric": "gpuUtilization", "target": 60}, network={"egress": "none"})
    with pytest.raises(ConfigError) as info:
        aws_layout.plan(spec_of(values))
    assert info.value.key == "gpu-cluster:cluster.network.egress"


def test_spot_true_keeps_the_old_distribution_and_no_fleet_resources(stack_plan):
    dev = stack_plan("aws-dev")
    asg = one(dev, "autoscaling/group:Group")["inputs"]
    assert asg["mixedInstancesPolicy"]["instancesDistribution"]["spotAllocationStrategy"] == "capacity-optimized"
    assert "capacityRebalance" not in asg
    assert resources_of(dev, "autoscaling/policy:Policy") == resources_of(dev, "autoscaling/schedule:Schedule") == []
    assert one(dev, "autoscaling/group:Group")["ignoreChanges"] == []
    assert aws_layout.plan(spec_of(aws_values(spot=True, nodes=1))).scaling is None


def test_plan_summary_costs_the_fleet_at_min_target_and_max(shipped):
    summary = shipped.summary()
    per_node = summary["hourlyUsdPerNode"]
    assert (summary["minNodes"], summary["nodes"], summary["maxNodes"]) == (0, 1, 20)
    assert summary["hourlyUsdAtMinNodes"] == 0
    assert summary["hourlyUsd"] == round(per_node, 2)
    assert summary["hourlyUsdAtMaxNodes"] == round(per_node * 20, 2)
    assert summary["scaling"]["metric"] == "gpuUtilization"
    assert summary["scaling"]["cloudwatch"] == {"namespace": "GpuCluster", "metric": "nvidia_smi_utilization_gpu"}


# --- the agent script, run for real against stubbed dpkg, curl and amazon-cloudwatch-agent-ctl ------------------

STUBS = {
    "dpkg": r"""case "$1" in
  -s) [ -n "${INSTALLED:-}" ] ;;
  --print-architecture) echo arm64 ;;
  -i) [ -s "$3" ] ;;
esac""",
    "curl": r"""[ -n "${CURL_FAIL:-}" ] && exit 22
out=""; while [ $# -gt 0 ]; do [ "$1" = -o ] && out="$2"; shift; done; echo deb > "$out" """,
    "ctl": "exit 0",
}


def run_agent(tmp_path: Path, **env: str) -> tuple[subprocess.CompletedProcess, list[str]]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    log = tmp_path / "calls.log"
    for tool in ("mktemp", "rm"):
        found = shutil.which(tool)
        assert found, tool
        (bin_dir / tool).symlink_to(found)
    for name, body in STUBS.items():
        path = bin_dir / name
        path.write_text(f'#!/bin/bash\necho "{name} $*" >> "{log}"\n{body}\n')
        path.chmod(0o755)
    full_env = {
        "PATH": str(bin_dir),
        "TMPDIR": str(tmp_path),
        "AGENT_URL": "https://amazoncloudwatch-agent.s3.amazonaws.com/ubuntu/{arch}/latest/amazon-cloudwatch-agent.deb",
        "AGENT_CTL": str(bin_dir / "ctl"),
        "AGENT_CONFIG": "/etc/gpu-cluster/cloudwatch-agent.json",
        "AGENT_PACKAGE": "amazon-cloudwatch-agent",
        **env,
    }
    bash = shutil.which("bash")
    assert bash
    proc = subprocess.run([bash, str(SCRIPT)], env=full_env, capture_output=True, text=True, timeout=30)
    return proc, log.read_text().splitlines() if log.exists() else []


def test_agent_script_installs_the_package_for_the_node_arch_then_starts_the_config(tmp_path):
    proc, calls = run_agent(tmp_path)
    assert proc.returncode == 0, proc.stderr
    curl = next(c for c in calls if c.startswith("curl "))
    assert curl.endswith(
        "https://amazoncloudwatch-agent.s3.amazonaws.com/ubuntu/arm64/latest/amazon-cloudwatch-agent.deb"
    )
    assert any(c.startswith("dpkg -i -E ") for c in calls)
    assert calls[-1] == "ctl -a fetch-config -m ec2 -s -c file:/etc/gpu-cluster/cloudwatch-agent.json"
    assert not list(tmp_path.glob("*.deb"))  # the download is removed


def test_agent_script_on_a_node_that_has_the_agent_only_restarts_it(tmp_path):
    proc, calls = run_agent(tmp_path, INSTALLED="1")
    assert proc.returncode == 0, proc.stderr
    assert not any(c.startswith(("curl ", "dpkg -i")) for c in calls)
    assert calls[-1].startswith("ctl -a fetch-config -m ec2 -s -c file:")


def test_agent_script_fails_when_the_download_fails(tmp_path):
    proc, calls = run_agent(tmp_path, CURL_FAIL="1")
    assert proc.returncode != 0
    assert not any(c.startswith(("dpkg -i", "ctl ")) for c in calls)
