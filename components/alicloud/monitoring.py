"""The self-hosted Prometheus and Grafana on Alibaba Cloud (layout/alicloud/monitoring.py decides them): the RAM grant
the login node's target list needs, the exporters' ports from the login node, and the `monitoring` stack output.

The login node carries the nodes' RAM role (cpu_node.py), so the grant is a custom policy on that role:
ecs:DescribeInstances on Resource "*" (the action takes no instance scope: catalog/monitoring.yaml selfHosted.alicloud),
which reads instance attributes and nothing else. With identity.existing the policy is attached to that role, as this
stack's other custom grants are (identity.py).
"""

from __future__ import annotations

from typing import Any

import pulumi

from ..layout.alicloud import AlicloudLayout
from ..layout.alicloud.data import alicloud_data
from ..layout.monitoring import NO_PATH, login_summary, ssh_forward
from .arms import Arms
from .arms import ack_output as arms_ack_output
from .arms import output as arms_output
from .context import Context
from .cpu_node import CpuNode
from .identity import CustomGrant, allow_document, custom_grant, ram_policy_name
from .network import ingress_rule


def build(ctx: Context, login: CpuNode | None) -> CustomGrant | None:
    """The grant, and the exporters' ports on the nodes' group from the login node's group (nothing else may: the
    nodes' group admits only itself otherwise)."""
    plan, spec = ctx.layout.monitoring, ctx.layout.spec
    if plan is None or login is None:
        return None
    for exporter, port in plan.scrape_ports:
        ingress_rule(
            f"{ctx.name}-sg-{exporter}-from-login",
            ctx.network.security_group.id,
            f"{port}/{port}",
            f"{exporter} metrics to the login node's Prometheus",
            ctx.child,
            source_group_id=login.security_group.id,
        )
    return custom_grant(
        ctx.parent,
        (f"{ctx.name}-monitoring-policy", f"{ctx.name}-role-monitoring"),
        ram_policy_name(spec, "prometheus-targets"),
        f"gpu-cluster {spec.name}: the login node's Prometheus lists the cluster's instances (file_sd)",
        allow_document(list(plan.actions), ["*"]),
        ctx.role_name,
        ctx.tags,
    )


def output(layout: AlicloudLayout, login: CpuNode | None, managed: Arms | None = None) -> dict[str, Any]:
    """`monitoring`: where Prometheus and Grafana run and the command that forwards Grafana to this machine."""
    plan = layout.monitoring
    if layout.kubernetes is not None and layout.kubernetes.arms is not None:  # ACK: ARMS' agent in the cluster
        return arms_ack_output(layout.kubernetes.arms, managed)
    if plan is None or login is None:
        return {"prometheus": "none", "grafana": None}
    port, method = plan.grafana_port, layout.access.method
    forward: pulumi.Input[str]
    if method == "session-manager":
        head, _, tail = (
            str(alicloud_data()["sessionManager"]["portForward"]).replace("{port}", str(port)).partition("{instance}")
        )
        forward = pulumi.Output.concat(head, login.instance.id, tail)
    elif method == "ssh":
        public = layout.login is not None and layout.login.public_bandwidth_mbps > 0
        host: pulumi.Input[str] = login.instance.public_ip if public else "<login node private ip>"
        forward = pulumi.Output.concat(ssh_forward(port, layout.access.login_user), host)
    else:
        forward = NO_PATH
    targets = "the login node lists the GPU nodes every minute (ECS DescribeInstances, file_sd)"
    hosted = {**login_summary(forward, port, plan.password_file, plan.prometheus_listen), "targets": targets}
    if plan.managed is None:
        return hosted
    # managed: the login node's Prometheus and Grafana stay (the dashboards), ARMS stores and alerts
    return {
        **hosted,
        **arms_output(plan.managed, managed),
        "host": "login node (federated by ARMS)",
        "prometheusListen": plan.managed.federate_listen,
    }
