"""The self-hosted Prometheus and Grafana on Huawei Cloud (layout/huaweicloud/monitoring.py decides them): the
exporters' ingress rules from the login node's group and the `monitoring` stack output. The agency's role for the
target list is granted with the agency's other roles (identity.py); the login node's user data is set in access.py.
"""

from __future__ import annotations

from typing import Any

import pulumi

from ..layout.huaweicloud import HuaweiLayout
from ..layout.monitoring import NO_PATH, login_summary, ssh_forward
from .access import Login
from .network import Network, secgroup_rule


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
    return {**login_summary(forward, port, plan.password_file, plan.prometheus_listen), "targets": targets}
