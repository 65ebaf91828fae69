"""The self-hosted Prometheus and Grafana on Tencent Cloud (layout/tencentcloud/monitoring.py decides them): the CAM
grant the login node's target list needs, the exporters' ingress rules from the login node, and the `monitoring`
stack output.

The login node carries the nodes' CAM role (access.py), so the grant is a custom policy attached to that role by name
(an existing role with identity.existing, as the asked policies are: identity.py): name/cvm:DescribeInstances on
"*", which reads instance attributes and nothing else.
"""

from __future__ import annotations

from typing import Any

import pulumi
import tencentcloud_iac_pulumi as tencentcloud

from ..catalog import monitoring as catalog_monitoring
from ..layout.monitoring import NO_PATH, login_summary, ssh_forward
from ..layout.tencentcloud import TencentLayout
from ..text import one_line
from .access import Login
from .identity import custom_grant
from .tmp import Tmp


def build(
    parent: pulumi.Resource, name: str, layout: TencentLayout, role_name: pulumi.Output[str]
) -> tencentcloud.cam.RolePolicyAttachmentByName | None:
    plan = layout.monitoring
    if plan is None:
        return None
    return custom_grant(
        parent,
        (f"{name}-monitoring-policy", f"{name}-role-monitoring"),
        plan.policy_name,
        f"gpu-cluster {layout.spec.name}: the login node's Prometheus lists the cluster's instances",
        plan.policy_document,
        role_name,
    )


def scrape_ingress(layout: TencentLayout, login: Login | None) -> list[tencentcloud.security.GroupRuleSetIngressArgs]:
    """The nodes' group admits the exporters' ports from the login node's group only (after its other rules)."""
    plan = layout.monitoring
    if plan is None or login is None:
        return []
    return [
        tencentcloud.security.GroupRuleSetIngressArgs(
            action="ACCEPT",
            source_security_id=login.security_group.id,
            protocol="TCP",
            port=str(port),
            description=f"{exporter} metrics to the login node's Prometheus",
        )
        for exporter, port in plan.scrape_ports
    ]


def output(layout: TencentLayout, login: Login | None, tmp: Tmp | None = None) -> dict[str, Any]:
    """`monitoring`: where Prometheus and Grafana run and the command that forwards Grafana to this machine (SSH is
    Tencent's only way in: access.py); with `tmp` (managed) the TMP instance the login node's agent writes to."""
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
    targets = "the login node lists the GPU nodes every minute (CVM DescribeInstances, file_sd)"
    summary = {**login_summary(forward, port, plan.password_file, plan.prometheus_listen), "targets": targets}
    if plan.tmp is None or tmp is None:
        return summary
    entry = catalog_monitoring.managed("tencentcloud")
    assert entry is not None
    return {
        **summary,
        "prometheus": "managed",
        "service": plan.tmp.service,
        "workspace": tmp.instance.id,
        "retentionDays": plan.tmp.data_retention_time,
        "rules": [r.rule_name for r in plan.tmp.rules],
        "grafanaNote": one_line(str(entry["grafanaPlan"])),
    }
