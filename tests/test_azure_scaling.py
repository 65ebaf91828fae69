"""Azure elastic fleets: the scale set's autoscale setting as registered (per metric kind and for schedules), the
Service Bus queue, the nodes' scoped roles, the GPU metric publisher part and its script (against stubs), the
refusals by key."""

from __future__ import annotations

import base64
import os
import subprocess
from pathlib import Path

import pytest

from components.errors import ConfigError

from .conftest import one, plan_values, resources_of
from .test_azure_resources import azure_values

SCRIPT = Path(__file__).resolve().parent.parent / "components" / "bootstrap" / "azure_gpu_metric.sh"
PUBLISHER = "/providers/Microsoft.Authorization/roleDefinitions/3913510d-42f4-4e42-8a64-420c390055eb"
RECEIVER = "/providers/Microsoft.Authorization/roleDefinitions/4f6d3b9b-027b-4f4c-9142-0e5a2a2247e0"
SUB = "/subscriptions/<resolved at deploy: subscription id>"
VMSS = "<id of test-azure-vmss>"


def fleet(**cluster):
    # NC64as_T4_v3: 4 x T4, no InfiniBand: an inference-class scale set
    base = {"gpu": "T4:4", "instanceType": "Standard_NC64as_T4_v3", "nodes": 2, "minNodes": 1, "maxNodes": 10}
    base["placement"] = "none"
    base.update(cluster)
    return azure_values(**base)


def setting(plan):
    return one(plan, "monitor:AutoscaleSetting")["inputs"]


def roles(plan):
    return {r["name"]: r["inputs"] for r in resources_of(plan, "authorization:RoleAssignment")}


def trigger(**kw):
    base = {
        "metricName": "GpuUtilization",
        "metricNamespace": "gpu-cluster",
        "metricResourceUri": VMSS,
        "statistic": "Average",
        "timeAggregation": "Average",
        "timeGrain": "PT1M",
        "timeWindow": "PT5M",
        "dividePerInstance": False,
    }
    base.update(kw)
    return base


@pytest.fixture(scope="module")
def gpu_util():
    return plan_values(fleet(scaling={"metric": "gpuUtilization", "target": 70}))


def test_gpu_utilisation_scales_the_set_on_its_custom_metric(gpu_util):
    s = setting(gpu_util)
    assert s["targetResourceUri"] == VMSS and s["enabled"] is True
    assert s["location"] == "eastus"
    [default] = s["profiles"]
    assert default["name"] == "default" and "recurrence" not in default
    assert default["capacity"] == {"minimum": "1", "maximum": "10", "default": "2"}
    out, scale_in = default["rules"]
    assert out == {
        "metricTrigger": trigger(operator="GreaterThan", threshold=70),
        "scaleAction": {"direction": "Increase", "type": "ChangeCount", "value": "1", "cooldown": "PT5M"},
    }
    assert scale_in == {
        "metricTrigger": trigger(operator="LessThan", threshold=70),
        "scaleAction": {"direction": "Decrease", "type": "ChangeCount", "value": "1", "cooldown": "PT10M"},
    }
    # the scale set starts at `nodes`; the autoscale setting owns the capacity afterwards
    assert one(gpu_util, "compute:VirtualMachineScaleSet")["inputs"]["sku"]["capacity"] == 2


def test_the_nodes_may_publish_metrics_on_their_scale_set_only(gpu_util):
    grant = roles(gpu_util)["test-azure-metrics-publisher"]
    assert grant["roleDefinitionId"] == SUB + PUBLISHER
    assert grant["scope"] == VMSS
    assert grant["principalId"] == "<principal id of test-azure-identity>"
    assert grant["principalType"] == "ServicePrincipal"
    assert "test-azure-sb-receiver" not in roles(gpu_util)


def test_the_publisher_part_is_in_the_custom_data(gpu_util):
    vmss = one(gpu_util, "compute:VirtualMachineScaleSet")["inputs"]
    text = base64.b64decode(vmss["virtualMachineProfile"]["osProfile"]["customData"]).decode()
    assert "/usr/local/sbin/gpu-cluster-gpu-metric" in text
    assert 'DCGM_URL="http://localhost:9400/metrics"' in text
    assert 'METRIC_NAMESPACE="gpu-cluster"' in text and 'METRIC_NAME="GpuUtilization"' in text
    assert 'TOKEN_RESOURCE="https://monitoring.azure.com/"' in text
    assert "Restart=always" in text
    assert "gpu-cluster-gpu-metric.service" in text


def test_queue_auto_creates_a_service_bus_queue_and_scales_on_messages_per_node_to_zero():
    plan = plan_values(fleet(nodes=0, minNodes=0, scaling={"metric": "queueDepth", "target": 5, "queue": "auto"}))
    ns = one(plan, "servicebus:Namespace")["inputs"]
    assert ns["sku"] == {"name": "Standard", "tier": "Standard"}
    queue = one(plan, "servicebus:Queue")["inputs"]
    assert queue["queueName"] == "work" and queue["namespaceName"] == "<autoname:test-azure-sb>"
    grant = roles(plan)["test-azure-sb-receiver"]
    assert grant["roleDefinitionId"] == SUB + RECEIVER
    assert grant["scope"] == "<id of test-azure-sb-queue>"
    assert "test-azure-metrics-publisher" not in roles(plan)
    [default] = setting(plan)["profiles"]
    assert default["capacity"] == {"minimum": "0", "maximum": "10", "default": "0"}
    rule = default["rules"][0]["metricTrigger"]
    assert rule == trigger(
        metricName="ActiveMessages",
        metricNamespace="Microsoft.ServiceBus/namespaces",
        metricResourceUri="<id of test-azure-sb>",
        operator="GreaterThan",
        threshold=5,
        dividePerInstance=True,
        dimensions=[{"dimensionName": "EntityName", "operator": "Equals", "values": ["work"]}],
    )
    # no custom metric to publish for a queue
    vmss = one(plan, "compute:VirtualMachineScaleSet")["inputs"]
    assert (
        "gpu-cluster-gpu-metric"
        not in base64.b64decode(vmss["virtualMachineProfile"]["osProfile"]["customData"]).decode()
    )


def test_an_existing_queue_is_read_by_its_namespace_and_name():
    ns = (
        "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/jobs"
        "/providers/Microsoft.ServiceBus/namespaces/render-bus"
    )
    plan = plan_values(fleet(scaling={"metric": "queueDepth", "target": 3, "queue": f"{ns}/queues/frames"}))
    assert not resources_of(plan, "servicebus:Namespace")
    rule = setting(plan)["profiles"][0]["rules"][0]["metricTrigger"]
    assert rule["metricResourceUri"] == ns
    assert rule["dimensions"] == [{"dimensionName": "EntityName", "operator": "Equals", "values": ["frames"]}]


def test_schedules_are_recurring_profiles_in_the_windows_time_zone():
    plan = plan_values(
        fleet(
            nodes=1,
            minNodes=0,
            scaling={
                "metric": "schedule",
                "timeZone": "America/New_York",
                "schedule": [{"cron": "30 7 * * MON-FRI", "nodes": 6}, {"cron": "0 19,23 * * 1-5", "nodes": 0}],
            },
        )
    )
    default, day, night = setting(plan)["profiles"]
    assert default["capacity"] == {"minimum": "0", "maximum": "10", "default": "1"} and default["rules"] == []
    weekdays = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"]
    assert day == {
        "name": "schedule-0",
        "capacity": {"minimum": "6", "maximum": "6", "default": "6"},
        "rules": [],
        "recurrence": {
            "frequency": "Week",
            "schedule": {"days": weekdays, "hours": [7], "minutes": [30], "timeZone": "Eastern Standard Time"},
        },
    }
    assert night["capacity"] == {"minimum": "0", "maximum": "0", "default": "0"}
    assert night["recurrence"]["schedule"]["hours"] == [19, 23]


def test_a_schedule_with_a_metric_keeps_the_rules_with_the_entry_as_floor():
    plan = plan_values(
        fleet(scaling={"metric": "gpuUtilization", "target": 60, "schedule": [{"cron": "0 8 * * *", "nodes": 4}]})
    )
    _, day = setting(plan)["profiles"]
    assert day["capacity"] == {"minimum": "4", "maximum": "10", "default": "4"}
    assert len(day["rules"]) == 2
    assert day["recurrence"]["schedule"]["days"] == [
        "Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"
    ]  # fmt: skip
    assert day["recurrence"]["schedule"]["timeZone"] == "UTC"


@pytest.mark.parametrize(
    ("cluster", "key"),
    [
        ({"spot": {"enabled": True, "onDemandBase": 1}}, r"spot\.onDemandBase: not built on Azure: Spot Priority Mix"),
        ({"spot": {"enabled": True, "fallback": "onDemand"}}, r"spot\.fallback: onDemand is not built on Azure"),
        ({"minNodes": 0, "scaling": {"metric": "gpuUtilization", "target": 70}}, r"cluster\.minNodes: 0 with metric"),
        (
            {"scaling": {"metric": "gpuUtilization", "target": 70, "scaleInCooldownSeconds": 30}},
            r"scaling\.scaleInCooldownSeconds: 30 on Azure",
        ),
        (
            {"scaling": {"metric": "schedule", "schedule": [{"cron": "*/15 8 * * *", "nodes": 2}]}},
            r"scaling\.schedule\[0\]\.cron: '\*/15 8 \* \* \*' has no Azure recurrence form",
        ),
        (
            {"scaling": {"metric": "schedule", "schedule": [{"cron": "0 8 1 * *", "nodes": 2}]}},
            r"scaling\.schedule\[0\]\.cron: .*day of month and month must be \*",
        ),
        (
            {
                "scaling": {
                    "metric": "schedule",
                    "timeZone": "Pacific/Chatham",
                    "schedule": [{"cron": "0 8 * * *", "nodes": 2}],
                }
            },
            r"scaling\.timeZone: Pacific/Chatham has no Windows time zone name",
        ),
        (
            {"scaling": {"metric": "queueDepth", "target": 3, "queue": "projects/p/subscriptions/s"}},
            r"scaling\.queue: got 'projects/p/subscriptions/s'",
        ),
        (
            {"network": {"egress": "none"}, "scaling": {"metric": "gpuUtilization", "target": 70}},
            r"network\.egress: none with metric gpuUtilization",
        ),
    ],
)
def test_what_azure_cannot_build_is_refused_by_key(cluster, key):
    with pytest.raises(ConfigError, match=key):
        plan_values(fleet(**cluster))


def test_existing_stacks_get_no_autoscale_setting(stack_plan):
    for stack in ("azure-dev", "azure-h100"):
        plan = stack_plan(stack)
        assert not resources_of(plan, "monitor:AutoscaleSetting")
        assert not resources_of(plan, "servicebus:Namespace")


# --- the publisher script, run against a stubbed curl (DCGM exporter, IMDS, Azure Monitor) ----------------------

METRICS = """# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).
# TYPE DCGM_FI_DEV_GPU_UTIL gauge
DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-a",modelName="Tesla T4"} 80
DCGM_FI_DEV_GPU_UTIL{gpu="1",UUID="GPU-b",modelName="Tesla T4"} 40
DCGM_FI_DEV_GPU_UTIL_X{gpu="0"} 999
DCGM_FI_DEV_FB_USED{gpu="0"} 1234
"""
RESOURCE = (
    "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/virtualMachineScaleSets/fleet/virtualMachines/3"
)


def run_publisher(tmp_path: Path, metrics: str = METRICS, post_ok: bool = True, token: str = "eyJtoken"):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (tmp_path / "metrics.txt").write_text(metrics)
    log = tmp_path / "curl.log"
    body = f"""
echo "ARGV $*" >> "{log}"
url="${{*: -1}}"
case "$url" in
  http://localhost:9400/metrics) cat "{tmp_path}/metrics.txt" ;;
  */compute/resourceId*) printf '%s' "{RESOURCE}" ;;
  */compute/location*) printf 'eastus' ;;
  */compute/name*) printf 'fleet_3' ;;
  */identity/oauth2/token*) printf '{{"access_token":"{token}","expires_in":"3599"}}' ;;
  https://*.monitoring.azure.com/*)
    echo "STDIN $(cat)" >> "{log}"
    while [ $# -gt 0 ]; do [ "$1" = --data ] && echo "BODY $2" >> "{log}"; shift; done
    {"exit 0" if post_ok else "exit 22"} ;;
  *) exit 7 ;;
esac
"""
    path = bin_dir / "curl"
    path.write_text(f"#!/bin/bash\n{body}\n")
    path.chmod(0o755)
    env = {
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "ENV_FILE": str(tmp_path / "missing.env"),
        "DCGM_URL": "http://localhost:9400/metrics",
        "METRIC_NAMESPACE": "gpu-cluster",
        "METRIC_NAME": "GpuUtilization",
        "INTERVAL_SECONDS": "60",
        "IMDS_TOKEN_URL": "http://169.254.169.254/metadata/identity/oauth2/token",
        "IMDS_API_VERSION": "2018-02-01",
        "TOKEN_RESOURCE": "https://monitoring.azure.com/",
    }
    proc = subprocess.run(["bash", str(SCRIPT), "--once"], env=env, capture_output=True, text=True, timeout=30)
    return proc, log.read_text() if log.exists() else ""


def test_publisher_posts_the_mean_over_the_gpus_to_the_scale_set(tmp_path):
    proc, log = run_publisher(tmp_path)
    assert proc.returncode == 0, proc.stderr
    post = [line for line in log.splitlines() if ".monitoring.azure.com" in line and line.startswith("ARGV")]
    scale_set = RESOURCE.rsplit("/virtualMachines/", 1)[0]
    assert post and post[0].endswith(f"https://eastus.monitoring.azure.com{scale_set}/metrics")
    body = next(line for line in log.splitlines() if line.startswith("BODY "))
    assert '"metric":"GpuUtilization","namespace":"gpu-cluster","dimNames":["Instance"]' in body
    assert '"dimValues":["fleet_3"],"min":60.0,"max":60.0,"sum":60.0,"count":1' in body  # (80 + 40) / 2


def test_the_token_goes_on_stdin_never_in_argv_or_logs(tmp_path):
    proc, log = run_publisher(tmp_path, token="eyJsecret")
    assert proc.returncode == 0, proc.stderr
    assert "STDIN Authorization: Bearer eyJsecret" in log
    assert not any("eyJsecret" in line for line in log.splitlines() if line.startswith("ARGV"))
    assert "eyJsecret" not in proc.stderr + proc.stdout


def test_no_sample_yet_is_a_logged_failure_without_a_post(tmp_path):
    proc, log = run_publisher(tmp_path, metrics='DCGM_FI_DEV_FB_USED{gpu="0"} 1\n')
    assert proc.returncode == 1
    assert "no DCGM_FI_DEV_GPU_UTIL sample" in proc.stderr
    assert "monitoring.azure.com" not in log


def test_a_refused_post_is_reported(tmp_path):
    proc, _ = run_publisher(tmp_path, post_ok=False)
    assert proc.returncode == 1
    assert "Monitoring Metrics Publisher" in proc.stderr


def test_publisher_is_shellcheck_clean():
    subprocess.run(["shellcheck", str(SCRIPT)], check=True)


def test_minnodes_zero_with_gpu_utilisation_is_allowed_when_a_schedule_brings_nodes_back():
    sched = [{"cron": "0 8 * * 1-5", "nodes": 1}, {"cron": "0 20 * * 1-5", "nodes": 0}]
    plan = plan_values(
        fleet(minNodes=0, nodes=0, scaling={"metric": "gpuUtilization", "target": 70, "schedule": sched})
    )
    default, morning, night = setting(plan)["profiles"]
    assert default["capacity"]["minimum"] == "0"
    assert morning["capacity"] == {"minimum": "1", "maximum": "10", "default": "1"}
    assert night["capacity"] == {"minimum": "0", "maximum": "10", "default": "0"}
    assert len(morning["rules"]) == 2


def test_an_existing_identity_is_looked_up_for_the_scoped_grant():
    ident = (
        "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/ids"
        "/providers/Microsoft.ManagedIdentity/userAssignedIdentities/nodes"
    )
    plan = plan_values(fleet(identity={"existing": ident}, scaling={"metric": "gpuUtilization", "target": 70}))
    grant = roles(plan)["test-azure-metrics-publisher"]
    assert grant["principalId"] == "<resolved at deploy: principal id of nodes>"
    assert grant["scope"] == VMSS
