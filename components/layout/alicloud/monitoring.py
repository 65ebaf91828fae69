"""The self-hosted Prometheus and Grafana on Alibaba Cloud (monitoring.prometheus: selfHosted), pure: on the login node,
finding the GPU nodes through a file_sd list the login node writes itself (catalog/monitoring.yaml selfHosted.alicloud).

Prometheus 2.53 has no Alibaba Cloud discovery, so a systemd timer on the login node runs
bootstrap/alicloud_prometheus_targets.sh every minute: ECS DescribeInstances through ECS's VPC endpoint (the one the
Slurm power hook calls), signed with the login node's RAM role, lists this cluster's running instances by its tag and
writes them, without the login node and the Slurm head, as one target group per node; Prometheus rereads the file when
it changes. The role needs ecs:DescribeInstances, an action with no resource scope (Resource "*"): the only grant
added. The login node carries the nodes' role (cpu_node.py), so the grant is on that role, as on AWS.

monitoring.prometheus managed (`AlicloudManaged`; catalog/monitoring.yaml managed.alicloud): an ARMS ECS
environment bound to the cluster's VPC stores the samples in its Prometheus instance and evaluates the alert rules
(one ARMS alert rule per bootstrap/monitoring.py rule_list entry). Its collector federates the login node's
Prometheus, which keeps discovering and scraping the nodes as above and listens on the VPC for it (the login node's
group admits that port from the VPC's CIDR only): ARMS remote write and ARMS' ECS discovery both take a long-lived
AccessKey pair, which no node is given, so the login node writes nothing and its role gains nothing. With
monitoring.notify the rules name a dispatch rule that mails a contact group of one ARMS contact per address.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml

from ... import bootstrap
from ...bootstrap import Part
from ...bootstrap.metrics import endpoints
from ...bootstrap.monitoring import PASSWORD_FILE, Discovery, Thresholds, rule_list, versions
from ...catalog import monitoring as catalog_monitoring
from ...catalog.slurm import cloud_data
from ...spec import ClusterSpec
from ...text import one_line
from .. import file_sd
from ..file_sd import targets_file
from ..monitoring import login_hosted, login_part

TARGETS_FILE = targets_file("alicloud")
# the login node's private address, known at deploy: the collector's one federation target
LOGIN_PLACEHOLDER = "@@GPU_CLUSTER_LOGIN_IP@@"
FEDERATE_JOB = "gpu-cluster-federate"
MIN_RULE_MINUTES = 1  # CreatePrometheusAlertRule Duration: "1m~1440m"; a rule firing at once takes the least


@dataclass(frozen=True)
class ArmsRule:
    """One alert rule as arms.PrometheusAlertRule takes it (bootstrap/monitoring.py rule_list, field by field)."""

    alert: str
    name: str  # prometheus_alert_rule_name: the cluster's name first, so one account's rules say whose they are
    expression: str
    duration: str  # "<minutes>m", at least MIN_RULE_MINUTES
    message: str  # the rule's summary annotation ({{ $labels.x }} as ARMS' Message takes it)
    labels: tuple[tuple[str, str], ...]
    annotations: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class ArmsNotify:
    """monitoring.notify: one email contact per address in one contact group, and the dispatch rule that mails it."""

    emails: tuple[str, ...]
    group_name: str
    rule_name: str
    alert_name_regex: str  # the dispatch rule's match: _aliyun_arms_alert_name re this cluster's rule names
    group_wait_seconds: int
    group_interval_seconds: int
    repeat_interval_seconds: int
    window: tuple[str, str]  # notify_start_time, notify_end_time


@dataclass(frozen=True)
class AlicloudManaged:
    """monitoring.prometheus managed: the ARMS environment, its federation job and rules, and the notify path."""

    environment_name: str  # arms.Environment environment_name
    environment_type: str  # catalog: ECS
    environment_sub_type: str  # catalog: ECS
    federate_job_name: str  # arms.EnvCustomJob env_custom_job_name
    federate_job: str  # its config_yaml, LOGIN_PLACEHOLDER for the login node
    federate_listen: str  # where the login node's Prometheus listens for the collector (catalog federateListen)
    federate_port: int  # its port, the one the VPC's CIDR is admitted to on the login node's group
    vpc_cidr: str  # where the collector runs (the API names no narrower address)
    rules: tuple[ArmsRule, ...]
    notify: ArmsNotify | None
    service: str
    grafana_note: str


@dataclass(frozen=True)
class AlicloudMonitoring:
    parts: tuple[Part, ...]  # the login node's parts: Prometheus and Grafana, then the target list's timer
    vm_user_data: str  # VM mode: the login node's whole user data (Slurm mode appends `parts` to the Slurm login's)
    actions: tuple[str, ...]  # what the login node's role needs for the list (catalog/monitoring.yaml)
    scrape_ports: tuple[tuple[str, int], ...]  # (exporter, port) the nodes' group admits from the login node's group
    grafana_port: int
    prometheus_listen: str
    password_file: str
    managed: AlicloudManaged | None = None  # monitoring.prometheus managed: ARMS stores, evaluates and alerts


def discovery() -> Discovery:
    """file_sd on the list the timer writes; its __meta_alicloud_* labels become what the other clouds' relabelling
    yields: node (the hostname, Slurm's NodeName of an elastic node), instance_id, instance_type, pool (the ESS group,
    absent on instances and elastic Slurm nodes)."""
    relabel = (
        {"source_labels": ["__meta_alicloud_hostname"], "target_label": "node"},
        {"source_labels": ["__meta_alicloud_instance_id"], "target_label": "instance_id"},
        {"source_labels": ["__meta_alicloud_instance_type"], "target_label": "instance_type"},
        {"source_labels": ["__meta_alicloud_scaling_group_id"], "regex": "(.+)", "target_label": "pool"},
    )
    return Discovery("file", {"files": [TARGETS_FILE]}, "__meta_alicloud_private_ip", relabel)


def targets_env(spec: ClusterSpec) -> dict[str, str]:
    """The target list script's settings: ECS's VPC endpoint and API version as the Slurm power hook has them
    (catalog/slurm.yaml clouds.alicloud.powerSave), the cluster's tags, the instances that are not GPU nodes."""
    power = cloud_data("alicloud")["powerSave"]
    return {
        "ECS_ENDPOINT": str(power["endpoint"]).format(region=spec.region),
        "ECS_API_VERSION": str(power["apiVersion"]),
        "REGION": spec.region,
        "CLUSTER": spec.name,
        "CLUSTER_TAG": "gpu-cluster:cluster",
        "STACK": spec.stack,
        "STACK_TAG": "gpu-cluster:stack",
        # the CPU nodes' instance names (components/alicloud/cpu_node.py): not scraped
        "SKIP_NAMES": f"{spec.name}-login {spec.name}-head",
        "TARGETS_FILE": TARGETS_FILE,
    }


def targets_part(spec: ClusterSpec) -> Part:
    return file_sd.targets_part("alicloud", "ECS DescribeInstances", targets_env(spec))


def federate_job(spec: ClusterSpec, entry: dict[str, Any]) -> str:
    """The collector's one scrape job: every series of this cluster from the login node's /federate, the nodes'
    own labels kept (honor_labels), at the login node's scrape interval."""
    interval = f"{int(versions()['scrapeIntervalSeconds'])}s"
    port = int(str(entry["federateListen"]).rpartition(":")[2])
    job = {
        "job_name": FEDERATE_JOB,
        "honor_labels": True,
        "scrape_interval": interval,
        "metrics_path": str(entry["federatePath"]),
        "params": {"match[]": [str(entry["federateMatch"])]},
        "static_configs": [{"targets": [f"{LOGIN_PLACEHOLDER}:{port}"], "labels": {"cluster": spec.name}}],
    }
    return yaml.safe_dump({"scrape_configs": [job]}, sort_keys=False, width=1000)


def arms_rules(spec: ClusterSpec) -> tuple[ArmsRule, ...]:
    """bootstrap/monitoring.py rule_list as ARMS alert rules: `for` in whole minutes, at least one."""
    rules = []
    for r in rule_list(Thresholds(**spec.monitoring.alerts.model_dump())):
        minutes = max(MIN_RULE_MINUTES, int(str(r["for"]).removesuffix("m")))
        rules.append(
            ArmsRule(
                alert=str(r["alert"]),
                name=f"{spec.name}-{r['alert']}",
                expression=str(r["expr"]),
                duration=f"{minutes}m",
                message=str(r["annotations"]["summary"]),
                labels=tuple(sorted((str(k), str(v)) for k, v in {**r["labels"], "cluster": spec.name}.items())),
                annotations=tuple(sorted((str(k), str(v)) for k, v in r["annotations"].items())),
            )
        )
    return tuple(rules)


def arms_notify(spec: ClusterSpec, rules: tuple[ArmsRule, ...]) -> ArmsNotify | None:
    """monitoring.notify as ARMS takes it, for this cluster's rules (VM, Slurm and ACK alike)."""
    entry = catalog_monitoring.notify("alicloud")
    if not spec.monitoring.notify or entry is None:
        return None
    start, end = (str(t) for t in entry["notifyWindow"])
    return ArmsNotify(
        emails=tuple(spec.monitoring.notify),
        group_name=f"gpu-cluster-{spec.name}-{spec.stack}",
        rule_name=f"gpu-cluster-{spec.name}-{spec.stack}",
        alert_name_regex="|".join(r.name for r in rules),
        group_wait_seconds=int(entry["groupWaitSeconds"]),
        group_interval_seconds=int(entry["groupIntervalSeconds"]),
        repeat_interval_seconds=int(entry["repeatIntervalSeconds"]),
        window=(start, end),
    )


def _managed(spec: ClusterSpec) -> AlicloudManaged:
    entry = catalog_monitoring.managed("alicloud")
    assert entry is not None  # the spec refuses managed where catalog/monitoring.yaml does not build it
    rules = arms_rules(spec)
    return AlicloudManaged(
        environment_name=f"gpu-cluster-{spec.name}-{spec.stack}",
        environment_type=str(entry["environmentType"]),
        environment_sub_type=str(entry["environmentSubType"]),
        federate_job_name=FEDERATE_JOB,
        federate_job=federate_job(spec, entry),
        federate_listen=str(entry["federateListen"]),
        federate_port=int(str(entry["federateListen"]).rpartition(":")[2]),
        vpc_cidr=spec.network.cidr,
        rules=rules,
        notify=arms_notify(spec, rules),
        service=str(entry["service"]),
        grafana_note=one_line(str(entry["grafanaPlan"])),
    )


def hosted(spec: ClusterSpec) -> bool:
    """The login node runs Prometheus: selfHosted, or managed (ARMS federates it); not with scheduler kubernetes."""
    return (login_hosted(spec) or spec.prometheus == "managed") and spec.kubernetes is None


def plan(spec: ClusterSpec) -> AlicloudMonitoring | None:
    if not hosted(spec):
        return None
    grant = catalog_monitoring.self_hosted("alicloud")
    assert grant is not None  # the spec refuses selfHosted where catalog/monitoring.yaml does not build it
    managed = _managed(spec) if spec.prometheus == "managed" else None
    entry = catalog_monitoring.managed("alicloud") if managed else None
    listen = str(entry["federateListen"]) if entry else None
    parts = (login_part(spec, discovery(), listen=listen), targets_part(spec))
    return AlicloudMonitoring(
        parts,
        bootstrap.cloud_init(parts),
        tuple(grant["grant"]),
        # the jobs prometheus.yml has (bootstrap/monitoring.py: no DCGM job on other vendors' GPUs)
        tuple(
            (e.name, e.port) for e in endpoints() if e.name != "dcgm-exporter" or spec.instance.gpu_vendor == "nvidia"
        ),
        grafana_port=int(versions()["grafana"]["port"]),
        prometheus_listen=str(versions()["prometheus"]["listen"]),
        password_file=PASSWORD_FILE,
        managed=managed,
    )
