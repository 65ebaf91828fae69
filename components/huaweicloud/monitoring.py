"""The self-hosted Prometheus and Grafana on Huawei Cloud (layout/huaweicloud/monitoring.py decides them): the
exporters' ingress rules from the login node's group and the `monitoring` stack output. The agency's role for the
target list is granted with the agency's other roles (identity.py); the login node's user data is set in access.py.

monitoring.notify (layout/huaweicloud/alerts.py): the SMN topic, one email subscription per address (each confirms
SMN's mail first), and the custom policy publishing to the topic, created before the agency that is granted it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_huaweicloud as huaweicloud

from ..bootstrap import gzip_b64
from ..bootstrap.huaweicloud_smn import TOPIC_PLACEHOLDER
from ..layout.huaweicloud import HuaweiLayout
from ..layout.monitoring import NO_PATH, login_summary, ssh_forward
from ..resources import email_suffixes, fill
from .access import Login
from .network import Network, secgroup_rule


@dataclass(frozen=True)
class Alerts:
    topic: huaweicloud.smn.Topic
    subscriptions: list[huaweicloud.smn.Subscription]
    role: huaweicloud.iam.Role  # the agency's policy on the topic (granted by name: identity.py)


def build_alerts(parent: pulumi.Resource, name: str, layout: HuaweiLayout, tags: Mapping[str, str]) -> Alerts | None:
    plan = layout.monitoring.alerts if layout.monitoring else None
    if plan is None:
        return None
    child = pulumi.ResourceOptions(parent=parent)
    topic = huaweicloud.smn.Topic(
        f"{name}-alerts", name=plan.topic_name, display_name=plan.display_name, tags=dict(tags), opts=child
    )
    subscriptions = [
        huaweicloud.smn.Subscription(
            f"{name}-alerts-{suffix}", topic_urn=topic.topic_urn, protocol="email", endpoint=email, opts=child
        )
        for email, suffix in zip(plan.emails, email_suffixes(plan.emails), strict=True)
    ]
    role = huaweicloud.iam.Role(
        f"{name}-alerts-publish-role",
        name=plan.role_name,
        type=plan.role_type,
        policy=plan.role_policy,
        description=f"gpu-cluster {layout.spec.name}: the login node publishes the alerts to {plan.topic_name}",
        opts=child,
    )
    return Alerts(topic, subscriptions, role)


def login_user_data(layout: HuaweiLayout, topic_urn: pulumi.Input[str] | None) -> pulumi.Input[str] | None:
    """The login node's user data without Slurm: with monitoring.notify the topic's URN filled in and gzip-compressed
    as Slurm's is (the webhook and the signing do not fit Huawei's 32 KB plain); None: as planned (plain)."""
    text = layout.login_user_data
    return fill(text, {TOPIC_PLACEHOLDER: topic_urn}, gzip_b64) if text is not None and topic_urn is not None else None


def build(parent: pulumi.Resource, name: str, layout: HuaweiLayout, network: Network, login: Login | None) -> None:
    """The nodes' group admits each exporter's port from the login node's group only (new rules by name: the
    existing ones keep their identity)."""
    plan = layout.monitoring
    if plan is None or login is None:
        return
    for exporter, port in plan.scrape_ports:
        secgroup_rule(
            parent,
            f"{name}-sg-{exporter}-from-login",
            network.security_group,
            f"{exporter} metrics to the login node's Prometheus",
            ports=str(port),
            remote_group=login.security_group.id,
        )


def output(layout: HuaweiLayout, login: Login | None) -> dict[str, Any]:
    """`monitoring`: where Prometheus and Grafana run and the command that forwards Grafana to this machine (SSH is
    Huawei's only way in: access.py)."""
    plan = layout.monitoring
    if plan is None or login is None or layout.login is None:
        return {"prometheus": "none", "grafana": None}
    port = plan.grafana_port
    forward: pulumi.Input[str]
    if layout.access.method == "ssh":
        host: pulumi.Input[str] = login.instance.public_ip if layout.login.public_ip else "<login node private ip>"
        forward = pulumi.Output.concat(ssh_forward(port, layout.access.login_user), host)
    else:
        forward = NO_PATH
    targets = "the login node lists the GPU nodes every minute (ECS ListServersDetails, file_sd)"
    out = {**login_summary(forward, port, plan.password_file, plan.prometheus_listen), "targets": targets}
    if plan.alerts is not None:  # the plan's monitoring row names who the alerts reach
        out["alerts"] = (
            f"Alertmanager on the login node to SMN topic {plan.alerts.topic_name} (a webhook publishing with the "
            f"agency), email to {', '.join(plan.alerts.emails)} (each address confirms SMN's subscription mail first)"
        )
    return out


def alerts_output(layout: HuaweiLayout, alerts: Alerts | None) -> dict[str, Any] | None:
    """The `alerts` stack output: the topic, its addresses, and that each confirms first."""
    if alerts is None or layout.monitoring is None or layout.monitoring.alerts is None:
        return None
    return {
        "topic": alerts.topic.topic_urn,
        "emails": list(layout.monitoring.alerts.emails),
        "confirm": "each address gets a confirmation mail from SMN and receives alerts once it confirms",
    }
