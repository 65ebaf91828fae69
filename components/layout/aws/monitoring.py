"""The self-hosted Prometheus and Grafana on AWS (monitoring.prometheus: selfHosted), pure: on the login node, finding
the GPU nodes with ec2_sd_configs (catalog/monitoring.yaml selfHosted.aws).

Prometheus' EC2 discovery lists the instances carrying this cluster's and this stack's tags whose Name is a GPU
node's (`<cluster>-node`, `<cluster>-node-<i>`: the login node and the Slurm head are not scraped), running. It needs
ec2:DescribeInstances on the login node's role (the node role: the login node carries the node instance profile), an
action with no resource type (Resource "*"): the only grant added.

monitoring.notify: an Alertmanager beside Prometheus publishes the firing alerts to the cluster's SNS topic (one email
subscription per address), signing with the login node's instance role (sigv4); the topic's ARN is known at deploy
(`TOPIC_PLACEHOLDER` in the login node's user data), and the role may sns:Publish to that topic only.
"""

from __future__ import annotations

from dataclasses import dataclass

from ... import bootstrap
from ...bootstrap import Part
from ...bootstrap.alertmanager import Receiver
from ...bootstrap.monitoring import PASSWORD_FILE, Discovery, versions
from ...catalog import monitoring as catalog_monitoring
from ...spec import ClusterSpec
from ..monitoring import login_hosted, login_part

TOPIC_PLACEHOLDER = "@@GPU_CLUSTER_ALERT_TOPIC@@"  # the SNS topic's ARN, known at deploy
PUBLISH_ACTION = "sns:Publish"


@dataclass(frozen=True)
class AwsMonitoring:
    part: Part  # the login node's part (bootstrap/monitoring.py)
    vm_user_data: str  # VM mode: the login node's whole user data (Slurm mode appends `part` to the Slurm login's)
    actions: tuple[str, ...]  # what the login node's role needs for ec2_sd (catalog/monitoring.yaml)
    grafana_port: int
    prometheus_listen: str
    password_file: str
    notify: tuple[str, ...] = ()  # monitoring.notify: the SNS topic's email subscriptions


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


def plan(spec: ClusterSpec) -> AwsMonitoring | None:
    if not login_hosted(spec):
        return None
    grant = catalog_monitoring.self_hosted("aws")
    assert grant is not None  # the spec refuses selfHosted where catalog/monitoring.yaml does not build it
    notify = tuple(spec.monitoring.notify)
    receiver = Receiver("sns", {"topic_arn": TOPIC_PLACEHOLDER, "sigv4": {"region": spec.region}}) if notify else None
    part = login_part(spec, discovery(spec), receiver)
    return AwsMonitoring(
        part,
        bootstrap.cloud_init((part,)),
        tuple(grant["grant"]),
        grafana_port=int(versions()["grafana"]["port"]),
        prometheus_listen=str(versions()["prometheus"]["listen"]),
        password_file=PASSWORD_FILE,
        notify=notify,
    )
