"""Tencent Cloud requests, part 3: `monitoring.prometheus: managed` (components/tencentcloud/tmp.py): the TMP instance
and its alert rules, as the Terraform provider sends them, judged by tencentcloud-sdk-python-monitor (API 2018-07-24)
models (see tencentcloud.py for how).

Sources: the SDK's request models and the provider's argument of the same meaning (tencentcloud-iac-pulumi 0.2.3
monitor/tmp_instance.py and tmp_alert_rule.py docstrings; "by meaning": not read line by line in the Go source,
tencentcloud/services/tmp/resource_tc_monitor_tmp_instance.go and resource_tc_monitor_tmp_alert_rule.go).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tencentcloud.monitor.v20180724 import models as monitor

from .alicloud_requests import Inputs, drop_none

SRC = "tencentcloud/services/tmp/"
Request = tuple[str, type, dict[str, Any], str]  # api, model, request, source


def _kv(items: list[dict[str, str]] | None) -> list[dict[str, str]] | None:
    return [{"Key": kv["key"], "Value": kv["value"]} for kv in items] if items else None


def _instance(i: Inputs) -> list[Request]:
    req = drop_none(
        {
            "InstanceName": i.get("instanceName"),
            "VpcId": i.get("vpcId"),
            "SubnetId": i.get("subnetId"),
            "DataRetentionTime": i.get("dataRetentionTime"),
            "Zone": i.get("zone"),
            "TagSpecification": [{"Key": k, "Value": str(v)} for k, v in (i.ok("tags") or {}).items()] or None,
        }
    )
    src = f"{SRC}resource_tc_monitor_tmp_instance.go (by meaning)"
    return [
        (
            "monitor:CreatePrometheusMultiTenantInstancePostPayMode",
            monitor.CreatePrometheusMultiTenantInstancePostPayModeRequest,
            req,
            src,
        )
    ]


def _alert_rule(i: Inputs) -> list[Request]:
    req = drop_none(
        {
            "InstanceId": i.get("instanceId"),
            "RuleName": i.get("ruleName"),
            "Expr": i.get("expr"),
            "Receivers": i.get("receivers"),
            "RuleState": i.ok("ruleState"),
            "Duration": i.ok("duration"),
            "Labels": _kv(i.ok("labels")),
            "Annotations": _kv(i.ok("annotations")),
            "Type": i.ok("type"),
        }
    )
    src = f"{SRC}resource_tc_monitor_tmp_alert_rule.go (by meaning)"
    return [("monitor:CreateAlertRule", monitor.CreateAlertRuleRequest, req, src)]


REQUESTS: dict[str, tuple[str, Callable[[Inputs], list[Request]]]] = {
    "tencentcloud:Monitor/tmpInstance:TmpInstance": ("tencentcloud_monitor_tmp_instance", _instance),
    "tencentcloud:Monitor/tmpAlertRule:TmpAlertRule": ("tencentcloud_monitor_tmp_alert_rule", _alert_rule),
}
