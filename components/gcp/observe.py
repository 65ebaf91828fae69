"""`monitoring.logs` and `monitoring.notify` on GCP: the cluster's log bucket and the sink routing its nodes' labelled
entries there (the bucket under the cluster's key with `encryption`), and one alerting policy per rule with one email
notification channel per address; monitoring.prometheus managed: the same policies (channels only with notify) and
the Grafana boards as Cloud Monitoring dashboards (decisions in `components.layout.gcp.observe`:
`GcpLayout.observe`)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pulumi
import pulumi_gcp as gcp

from ..layout.gcp import GcpLayout
from ..resources import invoke_options
from .channels import email_channels
from .encryption import Key


@dataclass
class Observe:
    bucket: gcp.logging.ProjectBucketConfig | None = None
    sink: gcp.logging.ProjectSink | None = None
    channels: list[gcp.monitoring.NotificationChannel] = field(default_factory=list)
    policies: list[gcp.monitoring.AlertPolicy] = field(default_factory=list)
    dashboards: list[gcp.monitoring.Dashboard] = field(default_factory=list)


def _logs(name: str, layout: GcpLayout, key: Key | None, parent: pulumi.Resource, out: Observe) -> None:
    plan = layout.observe.logs if layout.observe is not None else None
    if plan is None:
        return
    project = layout.project
    child = pulumi.ResourceOptions(parent=parent)
    cmek = None
    opts = child
    if plan.cmek and key is not None and layout.encryption is not None:
        # Logging encrypts with its own CMEK service account (v2.getCmekSettings), granted on the key first
        settings = gcp.logging.get_project_cmek_settings_output(project=project, opts=invoke_options(parent))
        grant = gcp.kms.CryptoKeyIAMMember(
            f"{name}-key-logging",
            crypto_key_id=key.id,
            role=layout.encryption.role,
            member=settings.service_account_id.apply(lambda sa: f"serviceAccount:{sa}"),
            opts=child,
        )
        cmek = gcp.logging.ProjectBucketConfigCmekSettingsArgs(kms_key_name=key.id)
        opts = pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[grant]))
    out.bucket = gcp.logging.ProjectBucketConfig(
        f"{name}-logs",
        project=project,
        location=plan.location,
        bucket_id=plan.bucket_id,
        retention_days=plan.retention_days,
        description=f"gpu-cluster {layout.spec.stack}/{layout.spec.name}: the nodes' logs (Ops Agent)",
        cmek_settings=cmek,
        opts=opts,
    )
    out.sink = gcp.logging.ProjectSink(
        f"{name}-logs",
        name=plan.sink,
        project=project,
        destination=f"logging.googleapis.com/projects/{project}/locations/{plan.location}/buckets/{plan.bucket_id}",
        filter=plan.filter,
        description=f"gpu-cluster {layout.spec.stack}/{layout.spec.name}: the nodes' logs into their bucket",
        opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[out.bucket])),
    )


def _alerts(name: str, layout: GcpLayout, child: pulumi.ResourceOptions, out: Observe) -> None:
    plan = layout.observe
    if plan is None or not plan.policies:
        return
    project = layout.project or None
    spec = layout.spec
    what = f"gpu-cluster {spec.stack}/{spec.name} alerts"
    out.channels = email_channels(f"{name}-alert-email", plan.emails, what, layout, child)
    for policy in plan.policies:
        out.policies.append(
            gcp.monitoring.AlertPolicy(
                f"{name}-alert-{policy.alert}",
                display_name=policy.display_name,
                combiner="OR",
                severity=policy.severity,
                conditions=[
                    gcp.monitoring.AlertPolicyConditionArgs(
                        display_name=policy.alert,
                        condition_prometheus_query_language=(
                            gcp.monitoring.AlertPolicyConditionConditionPrometheusQueryLanguageArgs(
                                query=policy.query,
                                duration=policy.duration,
                                evaluation_interval=policy.evaluation_interval,
                                labels=policy.labels,
                                rule_group=plan.rule_group,
                                alert_rule=policy.alert,
                            )
                        ),
                    )
                ],
                documentation=gcp.monitoring.AlertPolicyDocumentationArgs(
                    content=policy.summary, mime_type="text/markdown"
                ),
                notification_channels=[c.name for c in out.channels],
                user_labels=dict(layout.labels),
                project=project,
                opts=child,
            )
        )


def _dashboards(name: str, layout: GcpLayout, child: pulumi.ResourceOptions, out: Observe) -> None:
    plan = layout.observe
    if plan is None:
        return
    for board in plan.dashboards:
        out.dashboards.append(
            gcp.monitoring.Dashboard(
                f"{name}-dashboard-{board.key}",
                dashboard_json=board.dashboard_json,
                project=layout.project or None,
                opts=child,
            )
        )


def build_observe(name: str, layout: GcpLayout, key: Key | None, parent: pulumi.Resource) -> Observe | None:
    if layout.observe is None:
        return None
    child = pulumi.ResourceOptions(parent=parent)
    out = Observe()
    _logs(name, layout, key, parent, out)
    _alerts(name, layout, child, out)
    _dashboards(name, layout, child, out)
    return out
