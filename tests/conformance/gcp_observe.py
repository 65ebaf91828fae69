"""Registered `gcp:` inputs -> requests for the nodes' logs and the alerts (monitoring.logs, monitoring.notify): the
log bucket, the sink and the alerting policies; monitoring.prometheus managed: the Cloud Monitoring dashboards.
File names are google-beta's `google-beta/services/<service>/...`."""

from __future__ import annotations

import json
from typing import Any

from .gcp_requests import Context, Src, Translator
from .gcp_schema import Request

__all__ = ["OBSERVE_TRANSLATORS"]


def bucket(i: dict[str, Any], ctx: Context) -> list[Request]:
    """logging/resource_logging_project_bucket_config.go: resourceLoggingProjectBucketConfigAcquireOrCreate: a bucket
    other than _Default is created, POST v2/projects/{project}/locations/{location}/buckets?bucketId=..."""
    s = Src(i, ctx)
    params = {"parent": f"projects/{s.pop('project')}/locations/{s.pop('location')}", "bucketId": s.pop("bucketId")}
    body: dict[str, Any] = s.same({}, "description", "retentionDays", "locked", "enableAnalytics")
    if "enableAnalytics" in body:
        body["analyticsEnabled"] = body.pop("enableAnalytics")
    cmek = s.sub("cmekSettings")
    if cmek is not None:
        body["cmekSettings"] = cmek.same({}, "kmsKeyName")
        cmek.done()
    s.done()
    method = "logging.projects.locations.buckets.create"
    return [Request("logging.v2", method, params, body, "resource_logging_project_bucket_config.go")]


def sink(i: dict[str, Any], ctx: Context) -> list[Request]:
    """logging/resource_logging_project_sink.go: resourceLoggingProjectSinkCreate: POST v2/projects/{project}/sinks
    with uniqueWriterIdentity (its default true)."""
    s = Src(i, ctx)
    body: dict[str, Any] = s.same({}, "name", "destination", "filter", "description", "disabled")
    unique = s.pop("uniqueWriterIdentity")
    params = {"parent": f"projects/{s.pop('project') or ctx.project}", "uniqueWriterIdentity": unique is not False}
    s.done()
    return [Request("logging.v2", "logging.projects.sinks.create", params, body, "resource_logging_project_sink.go")]


def _condition(c: Src) -> dict[str, Any]:
    out: dict[str, Any] = c.same({}, "displayName")
    promql = c.sub("conditionPrometheusQueryLanguage")
    if promql is not None:
        out["conditionPrometheusQueryLanguage"] = promql.same(
            {}, "query", "duration", "evaluationInterval", "labels", "ruleGroup", "alertRule", "disableMetricValidation"
        )
        promql.done()
    c.done()
    return out


def alert_policy(i: dict[str, Any], ctx: Context) -> list[Request]:
    """monitoring/resource_monitoring_alert_policy.go: resourceMonitoringAlertPolicyCreate: POST
    v3/projects/{project}/alertPolicies (enabled is sent, its default true)."""
    s = Src(i, ctx)
    body: dict[str, Any] = s.same({}, "displayName", "combiner", "severity", "notificationChannels", "userLabels")
    enabled = s.pop("enabled")
    body["enabled"] = True if enabled is None else enabled
    body["conditions"] = [_condition(c) for c in s.subs("conditions")]
    doc = s.sub("documentation")
    if doc is not None:
        body["documentation"] = doc.same({}, "content", "mimeType", "subject")
        doc.done()
    params = {"name": f"projects/{s.pop('project') or ctx.project}"}
    s.done()
    method = "monitoring.projects.alertPolicies.create"
    return [Request("monitoring.v3", method, params, body, "resource_monitoring_alert_policy.go")]


def dashboard(i: dict[str, Any], ctx: Context) -> list[Request]:
    """monitoring/resource_monitoring_dashboard.go: resourceMonitoringDashboardCreate: POST
    v1/projects/{project}/dashboards with dashboard_json, parsed, as the body (the whole Dashboard: its every field
    is judged by the v1 document)."""
    s = Src(i, ctx)
    body: dict[str, Any] = json.loads(s.pop("dashboardJson"))
    params = {"parent": f"projects/{s.pop('project') or ctx.project}"}
    s.drop("deletionPolicy")
    s.done()
    method = "monitoring.projects.dashboards.create"
    return [Request("monitoring.v1", method, params, body, "resource_monitoring_dashboard.go")]


OBSERVE_TRANSLATORS: dict[str, Translator] = {
    "gcp:logging/projectBucketConfig:ProjectBucketConfig": bucket,
    "gcp:logging/projectSink:ProjectSink": sink,
    "gcp:monitoring/alertPolicy:AlertPolicy": alert_policy,
    "gcp:monitoring/dashboard:Dashboard": dashboard,
}
