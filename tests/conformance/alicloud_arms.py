"""Alibaba Cloud requests, part 6: ARMS (`monitoring.prometheus: managed`, components/alicloud/arms.py): the
Prometheus instance for ECS, its custom job, the alert rules, and with monitoring.notify the contacts, the contact
group and the dispatch rule, as the provider sends them (see alicloud_requests), judged by the ARMS Tea models
(alibabacloud_arms20190808, API 2019-08-08; all RPC).

Sources: aliyun/terraform-provider-alicloud alicloud/resource_alicloud_arms_prometheus.go
(resourceAliCloudArmsPrometheusCreate: CreatePrometheusInstance with AllSubClustersSuccess true, the optional
members by d.GetOk; tags after it through SetResourceTags, resource type PROMETHEUS), the stored copies predate
payment_type, which pulumi-alicloud 4.0.0 has and CreatePrometheusInstanceRequest names PaymentType;
resource_alicloud_arms_prometheus_monitoring.go (CreatePrometheusMonitoring: ClusterId, Type, ConfigYaml, Status);
resource_alicloud_arms_prometheus_alert_rule.go (CreatePrometheusAlertRule: Labels and Annotations as JSON arrays of
{name, value}, AlertName from prometheus_alert_rule_name); resource_alicloud_arms_alert_contact.go
(CreateAlertContact: ContactName, Email, SystemNoc by GetOkExists); resource_alicloud_arms_alert_contact_group.go
(CreateAlertContactGroup: ContactIds joined by spaces); resource_alicloud_arms_dispatch_rule.go
(CreateDispatchRule: one JSON document DispatchRule with name, isRecover, groupRules, dispatchType,
labelMatchExpressionGrid (the first grid), notifyRules).
"""

from __future__ import annotations

import json
from typing import Any

from alibabacloud_arms20190808 import models as arms

from .alicloud_requests import Call, Inputs, drop_none, tag_resources, tags_of

SRC = "alicloud/resource_alicloud_arms_"


def prometheus(i: Inputs, region: str) -> list[Call]:
    request = drop_none(
        {
            "RegionId": region,
            "ClusterType": i.get("clusterType"),
            "GrafanaInstanceId": i.get("grafanaInstanceId"),
            "AllSubClustersSuccess": True,
            "VpcId": i.ok("vpcId"),
            "VSwitchId": i.ok("vswitchId"),
            "SecurityGroupId": i.ok("securityGroupId"),
            "ClusterId": i.ok("clusterId"),
            "ClusterName": i.ok("clusterName"),
            "SubClustersJson": i.ok("subClustersJson"),
            "ResourceGroupId": i.ok("resourceGroupId"),
            "PaymentType": i.ok("paymentType"),
            "Duration": i.ok("duration"),
            "ArchiveDuration": i.ok("archiveDuration"),
        }
    )
    src = f"{SRC}prometheus.go resourceAliCloudArmsPrometheusCreate"
    calls = [Call("arms:CreatePrometheusInstance", arms.CreatePrometheusInstanceRequest, request, src)]
    if tags := tags_of(i):
        calls.append(tag_resources("arms", arms.TagResourcesRequest, "PROMETHEUS", "<new instance>", tags, src))
    return calls


def prometheus_monitoring(i: Inputs, region: str) -> list[Call]:
    request = drop_none(
        {
            "RegionId": region,
            "ClusterId": i.get("clusterId"),
            "Type": i.get("type"),
            "ConfigYaml": i.get("configYaml"),
            "Status": i.ok("status"),
        }
    )
    src = f"{SRC}prometheus_monitoring.go resourceAliCloudArmsPrometheusMonitoringCreate"
    return [Call("arms:CreatePrometheusMonitoring", arms.CreatePrometheusMonitoringRequest, request, src)]


def _pairs(items: Any) -> str | None:
    """The provider's convertArrayObjectToJsonString of a {name, value} set (snake_case keys, as the schema's)."""
    return json.dumps([{"name": x.get("name"), "value": x.get("value")} for x in items]) if items else None


def prometheus_alert_rule(i: Inputs, region: str) -> list[Call]:
    request = drop_none(
        {
            "RegionId": region,
            "ClusterId": i.get("clusterId"),
            "AlertName": i.get("prometheusAlertRuleName"),
            "Expression": i.get("expression"),
            "Duration": i.get("duration"),
            "Message": i.get("message"),
            "Annotations": _pairs(i.ok("annotations")),
            "Labels": _pairs(i.ok("labels")),
            "DispatchRuleId": i.ok("dispatchRuleId"),
            "NotifyType": i.ok("notifyType"),
            "Type": i.ok("type"),
        }
    )
    src = f"{SRC}prometheus_alert_rule.go resourceAlicloudArmsPrometheusAlertRuleCreate"
    return [Call("arms:CreatePrometheusAlertRule", arms.CreatePrometheusAlertRuleRequest, request, src)]


def alert_contact(i: Inputs, region: str) -> list[Call]:
    request = drop_none(
        {
            "RegionId": region,
            "ContactName": i.ok("alertContactName"),
            "DingRobotWebhookUrl": i.ok("dingRobotWebhookUrl"),
            "Email": i.ok("email"),
            "PhoneNum": i.ok("phoneNum"),
            "SystemNoc": i.get("systemNoc"),
        }
    )
    src = f"{SRC}alert_contact.go resourceAlicloudArmsAlertContactCreate"
    return [Call("arms:CreateAlertContact", arms.CreateAlertContactRequest, request, src)]


def alert_contact_group(i: Inputs, region: str) -> list[Call]:
    ids = i.ok("contactIds")
    request = drop_none(
        {
            "RegionId": region,
            "ContactGroupName": i.get("alertContactGroupName"),
            "ContactIds": " ".join(ids) if ids else None,
        }
    )
    src = f"{SRC}alert_contact_group.go resourceAlicloudArmsAlertContactGroupCreate"
    return [Call("arms:CreateAlertContactGroup", arms.CreateAlertContactGroupRequest, request, src)]


def dispatch_rule(i: Inputs, region: str) -> list[Call]:
    """The rule is one JSON string (DispatchRule): the model judges that it is there; its members are the
    provider's, checked in tests/test_alicloud_arms.py on the registered inputs."""
    grid = (i.ok("labelMatchExpressionGrids") or [{}])[0]
    rule = drop_none(
        {
            "name": i.ok("dispatchRuleName"),
            "isRecover": i.ok("isRecover"),
            "dispatchType": i.ok("dispatchType"),
            "groupRules": [
                {
                    "groupWait": g.get("groupWaitTime"),
                    "groupInterval": g.get("groupInterval"),
                    "groupingFields": g.get("groupingFields"),
                    "repeatInterval": g.get("repeatInterval"),
                }
                for g in i.ok("groupRules") or []
            ],
            "labelMatchExpressionGrid": {"labelMatchExpressionGroups": grid.get("labelMatchExpressionGroups", [])},
            "notifyRules": i.ok("notifyRules"),
            "notifyTemplate": i.ok("notifyTemplates"),
        }
    )
    request = {"RegionId": region, "DispatchRule": json.dumps(rule)}
    src = f"{SRC}dispatch_rule.go resourceAlicloudArmsDispatchRuleCreate"
    return [Call("arms:CreateDispatchRule", arms.CreateDispatchRuleRequest, request, src)]
