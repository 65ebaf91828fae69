"""Tencent Auto Scaling (nodeGroup: managed): the launch configuration and the group, translated into the AS API 3.0
requests the Terraform provider sends (tencentcloud-sdk-python-autoscaling models judge them).

Translation source: tencentcloudstack/terraform-provider-tencentcloud@f06792c8
tencentcloud/services/as/resource_tc_as_scaling_config.go resourceTencentCloudAsScalingConfigCreate and @2f241606
resource_tc_as_scaling_group.go resourceTencentCloudAsScalingGroupCreate. That scaling-config commit has no
disaster_recover_group_ids and no tags; tencentcloud-iac-pulumi 0.2.3 (a later provider) has both, read here as the
request members of the same meaning (DisasterRecoverGroupIds, Tags: "标签描述列表 ... 绑定标签到启动配置").
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tencentcloud.autoscaling.v20180419 import models as autoscaling

from .alicloud_requests import Inputs, drop_none

CONFIG = "tencentcloud/services/as/resource_tc_as_scaling_config.go resourceTencentCloudAsScalingConfigCreate"
GROUP = "tencentcloud/services/as/resource_tc_as_scaling_group.go resourceTencentCloudAsScalingGroupCreate"


def _tags(i: Inputs, key: str) -> list[dict[str, str]]:
    return [{"Key": k, "Value": str(v)} for k, v in (i.ok(key) or {}).items()]


def _settings(i: Inputs, key: str, name: str, style: str) -> dict[str, Any] | None:
    block = i.ok(key)
    return (
        drop_none({name: block.get(name[0].lower() + name[1:]), style: block.get(style[0].lower() + style[1:])})
        if block
        else None
    )


def scaling_config(i: Inputs) -> list[tuple[str, type, dict[str, Any], str]]:
    charge = i.ok("instanceChargeType") or "POSTPAID_BY_HOUR"  # INSTANCE_CHARGE_TYPE_POSTPAID when unset
    req: dict[str, Any] = drop_none(
        {
            "LaunchConfigurationName": i.get("configurationName"),
            "ImageId": i.get("imageId"),
            "ProjectId": i.ok("projectId"),
            "InstanceTypes": i.get("instanceTypes"),
            "SystemDisk": drop_none({"DiskType": i.ok("systemDiskType"), "DiskSize": i.ok("systemDiskSize")}),
            "DataDisks": [
                drop_none(
                    {
                        "DiskType": d.get("diskType"),
                        "DiskSize": d.get("diskSize") or 0,
                        "DeleteWithInstance": bool(d.get("deleteWithInstance")),
                        "SnapshotId": d.get("snapshotId") or None,
                    }
                )
                for d in i.ok("dataDisks") or []
            ]
            or None,
            "InternetAccessible": drop_none(
                {
                    # schema Default TRAFFIC_POSTPAID_BY_HOUR, sent as GetOk finds it
                    "InternetChargeType": i.ok("internetChargeType") or "TRAFFIC_POSTPAID_BY_HOUR",
                    "InternetMaxBandwidthOut": i.ok("internetMaxBandwidthOut"),
                    "PublicIpAssigned": i.get("publicIpAssigned"),  # GetOkExists
                }
            ),
            "LoginSettings": drop_none({"KeyIds": i.ok("keyIds")}),
            "SecurityGroupIds": i.ok("securityGroupIds"),
            # schema Default true for both services: sent enabled unless set false
            "EnhancedService": {
                "SecurityService": {"Enabled": i.get("enhancedSecurityService") is not False},
                "MonitorService": {"Enabled": i.get("enhancedMonitorService") is not False},
            },
            "UserData": i.ok("userData"),
            "InstanceChargeType": charge,
            "InstanceTags": _tags(i, "instanceTags") or None,
            "Tags": _tags(i, "tags") or None,
            "DiskTypePolicy": i.ok("diskTypePolicy") or "ORIGINAL",  # schema Default ORIGINAL
            "CamRoleName": i.ok("camRoleName"),
            "HostNameSettings": _settings(i, "hostNameSettings", "HostName", "HostNameStyle"),
            "InstanceNameSettings": _settings(i, "instanceNameSettings", "InstanceName", "InstanceNameStyle"),
            "DisasterRecoverGroupIds": i.ok("disasterRecoverGroupIds"),
        }
    )
    if charge == "SPOTPAID":
        req["InstanceMarketOptions"] = {
            "MarketType": "spot",
            "SpotOptions": {
                "MaxPrice": i.get("spotMaxPrice") or "",
                "SpotInstanceType": i.get("spotInstanceType") or "",
            },
        }
    return [("as:CreateLaunchConfiguration", autoscaling.CreateLaunchConfigurationRequest, req, CONFIG)]


def scaling_group(i: Inputs) -> list[tuple[str, type, dict[str, Any], str]]:
    req = drop_none(
        {
            "AutoScalingGroupName": i.get("scalingGroupName"),
            "LaunchConfigurationId": i.get("configurationId"),
            "MaxSize": i.get("maxSize"),
            "MinSize": i.get("minSize"),
            "VpcId": i.get("vpcId"),
            "DefaultCooldown": i.ok("defaultCooldown") or 300,  # schema Default 300
            "DesiredCapacity": i.ok("desiredCapacity"),
            "RetryPolicy": i.ok("retryPolicy") or "IMMEDIATE_RETRY",  # schema Default
            "SubnetIds": i.ok("subnetIds"),
            "Zones": i.ok("zones"),
            "TerminationPolicies": i.ok("terminationPolicies"),
            "MultiZoneSubnetPolicy": i.ok("multiZoneSubnetPolicy"),
            "Tags": [{"ResourceType": "auto-scaling-group", **t} for t in _tags(i, "tags")] or None,
        }
    )
    return [("as:CreateAutoScalingGroup", autoscaling.CreateAutoScalingGroupRequest, req, GROUP)]


REQUESTS: dict[str, tuple[str, Callable[[Inputs], list[tuple[str, type, dict[str, Any], str]]]]] = {
    "tencentcloud:As/scalingConfig:ScalingConfig": ("tencentcloud_as_scaling_config", scaling_config),
    "tencentcloud:As/scalingGroup:ScalingGroup": ("tencentcloud_as_scaling_group", scaling_group),
}
