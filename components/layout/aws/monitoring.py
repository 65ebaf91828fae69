"""The self-hosted Prometheus and Grafana on AWS (monitoring.prometheus: selfHosted), pure: on the login node, finding
the GPU nodes with ec2_sd_configs (catalog/monitoring.yaml selfHosted.aws).

Prometheus' EC2 discovery lists the instances carrying this cluster's and this stack's tags whose Name is a GPU
node's (`<cluster>-node`, `<cluster>-node-<i>`: the login node and the Slurm head are not scraped), running. It needs
ec2:DescribeInstances on the login node's role (the node role: the login node carries the node instance profile), an
action with no resource type (Resource "*"): the only grant added.

monitoring.notify: an Alertmanager beside Prometheus publishes the firing alerts to the cluster's SNS topic (one email
subscription per address), signing with the login node's instance role (sigv4); the topic's ARN is known at deploy
(`TOPIC_PLACEHOLDER` in the login node's user data), and the role may sns:Publish to that topic only.

monitoring.prometheus managed (`AwsManaged`; catalog/monitoring.yaml managed.aws): an Amazon Managed Service for
Prometheus workspace stores the samples and evaluates the same alert rules (a rule groups namespace from
bootstrap/monitoring.py rule_list); with notify its alert manager publishes to the SNS topic (the topic's policy
lets aps.amazonaws.com publish for this workspace only), so the login node runs no Alertmanager. The login node's
Prometheus runs in agent mode, discovering the nodes as above and remote-writing with sigv4 (the instance role) to
the workspace, whose endpoint is known at deploy (`WORKSPACE_PLACEHOLDER`); its Grafana reads the workspace with
sigv4 too. The role gets aps:RemoteWrite and the four query actions on this workspace's ARN only. With
monitoring.grafanaAdmins, Amazon Managed Grafana beside it shows the same dashboards (managed_grafana.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from ... import bootstrap
from ...bootstrap import Part
from ...bootstrap.alertmanager import Receiver, alertmanager_config
from ...bootstrap.monitoring import PASSWORD_FILE, Discovery, RemoteWrite, Thresholds, alert_rules_text, versions
from ...catalog import monitoring as catalog_monitoring
from ...spec import ClusterSpec
from ...text import one_line
from ..monitoring import login_part
from .managed_grafana import AwsGrafana
from .managed_grafana import plan as grafana_plan

TOPIC_PLACEHOLDER = "@@GPU_CLUSTER_ALERT_TOPIC@@"  # the SNS topic's ARN, known at deploy
PUBLISH_ACTION = "sns:Publish"
# the workspace's Prometheus endpoint (https://aps-workspaces.<region>.amazonaws.com/workspaces/<id>/), known at deploy
WORKSPACE_PLACEHOLDER = "@@GPU_CLUSTER_AMP_ENDPOINT@@"
# AMP-alertmanager-receiver: the topic's access policy lets the service publish and read the topic's attributes
AMP_TOPIC_ACTIONS = ("sns:Publish", "sns:GetTopicAttributes")
AMP_PRINCIPAL = "aps.amazonaws.com"
RULES_NAMESPACE = "gpu-cluster"


@dataclass(frozen=True)
class AwsManaged:
    """monitoring.prometheus managed: the workspace, its rules and alert manager, and the login node's grants."""

    alias: str  # the workspace's alias (not unique in AMP: the id is; the alias says whose it is)
    rules: str  # the rule groups namespace's data: Prometheus' rule file format, bootstrap/monitoring.py rule_list
    alert_manager: str | None  # the alert manager definition (monitoring.notify), TOPIC_PLACEHOLDER for the topic
    role_actions: tuple[str, ...]  # the login node's role on this workspace's ARN: remote write and the queries
    service: str  # catalog/monitoring.yaml managed.aws service
    grafana_note: str  # where the dashboards live (the login node; Amazon Managed Grafana with grafanaAdmins)
    grafana: AwsGrafana | None = None  # Amazon Managed Grafana (monitoring.grafanaAdmins), None without admins


@dataclass(frozen=True)
class AwsMonitoring:
    part: Part  # the login node's part (bootstrap/monitoring.py)
    vm_user_data: str  # VM mode: the login node's whole user data (Slurm mode appends `part` to the Slurm login's)
    actions: tuple[str, ...]  # what the login node's role needs for ec2_sd (catalog/monitoring.yaml)
    grafana_port: int
    prometheus_listen: str
    password_file: str
    notify: tuple[str, ...] = ()  # monitoring.notify: the SNS topic's email subscriptions
    managed: AwsManaged | None = None  # monitoring.prometheus managed: AMP stores, evaluates and alerts


def discovery(spec: ClusterSpec) -> Discovery:
    filters = [
        {"name": "tag:gpu-cluster:cluster", "values": [spec.name]},
        {"name": "tag:gpu-cluster:stack", "values": [spec.stack]},
        {"name": "tag:Name", "values": [f"{spec.name}-node", f"{spec.name}-node-*"]},
        {"name": "instance-state-name", "values": ["running"]},
    ]
    relabel = (
        # the short private DNS name is the node's hostname: Slurm's NodeName of a dynamic node
        {"source_labels": ["__meta_ec2_private_dns_name"], "regex": "([^.]+)\\..*", "target_label": "node"},
        {"source_labels": ["__meta_ec2_instance_id"], "target_label": "instance_id"},
        {"source_labels": ["__meta_ec2_instance_type"], "target_label": "instance_type"},
        # the Auto Scaling group (a managed group's pool); absent for instances mode
        {"source_labels": ["__meta_ec2_tag_aws_autoscaling_groupName"], "regex": "(.+)", "target_label": "pool"},
    )
    return Discovery("ec2", {"region": spec.region, "filters": filters}, "__meta_ec2_private_ip", relabel)


def _remote(spec: ClusterSpec) -> RemoteWrite:
    """The agent's remote write and Grafana's data source: the workspace's endpoint, sigv4 with the instance role."""
    return RemoteWrite(
        url=f"{WORKSPACE_PLACEHOLDER}api/v1/remote_write",
        auth={"sigv4": {"region": spec.region}},
        query_url=WORKSPACE_PLACEHOLDER,
        # Grafana's "AWS SDK Default" provider: the instance role through the default credentials chain
        datasource_auth={"sigV4Auth": True, "sigV4AuthType": "default", "sigV4Region": spec.region},
        grafana_env={"GF_AUTH_SIGV4_AUTH_ENABLED": "true"},
    )


def _managed(spec: ClusterSpec) -> AwsManaged:
    entry = catalog_monitoring.managed("aws")
    assert entry is not None  # the spec refuses managed where catalog/monitoring.yaml does not build it
    receiver = Receiver("sns", {"topic_arn": TOPIC_PLACEHOLDER, "sigv4": {"region": spec.region}})
    return AwsManaged(
        alias=f"gpu-cluster-{spec.name}-{spec.stack}"[:100],
        rules=alert_rules_text(Thresholds(**spec.monitoring.alerts.model_dump())),
        alert_manager=alertmanager_config(spec.name, receiver) if spec.monitoring.notify else None,
        role_actions=(*entry["writeActions"], *entry["queryActions"]),
        service=str(entry["service"]),
        grafana_note=one_line(str(entry["grafanaPlan"])),
        grafana=grafana_plan(spec, entry),
    )


def hosted(spec: ClusterSpec) -> bool:
    """The login node runs Prometheus (selfHosted) or its agent (managed): not with scheduler kubernetes."""
    return spec.prometheus in ("selfHosted", "managed") and spec.kubernetes is None


def plan(spec: ClusterSpec) -> AwsMonitoring | None:
    if not hosted(spec):
        return None
    grant = catalog_monitoring.self_hosted("aws")
    assert grant is not None  # the spec refuses selfHosted where catalog/monitoring.yaml does not build it
    notify = tuple(spec.monitoring.notify)
    managed = _managed(spec) if spec.prometheus == "managed" else None
    if managed is not None:  # the workspace's alert manager sends to the topic: no Alertmanager on the login node
        part = login_part(spec, discovery(spec), remote=_remote(spec))
    else:
        receiver = (
            Receiver("sns", {"topic_arn": TOPIC_PLACEHOLDER, "sigv4": {"region": spec.region}}) if notify else None
        )
        part = login_part(spec, discovery(spec), receiver)
    return AwsMonitoring(
        part,
        bootstrap.cloud_init((part,)),
        tuple(grant["grant"]),
        grafana_port=int(versions()["grafana"]["port"]),
        prometheus_listen=str(versions()["prometheus"]["listen"]),
        password_file=PASSWORD_FILE,
        notify=notify,
        managed=managed,
    )


def workspace_plan(spec: ClusterSpec) -> AwsManaged:
    """The workspace, its rules and alert manager as VM mode builds them: EKS's too (layout/aws/eks_amp.py)."""
    return _managed(spec)
