"""Huawei Auto Scaling (nodeGroup: managed without a scheduler): the AS configuration and the group, translated into
the AS v1 request bodies the Terraform provider sends (huaweicloudsdkas 3.1.219 models judge them).

Translation source: huaweicloud/terraform-provider-huaweicloud huaweicloud/services/as/
resource_huaweicloud_as_configuration.go @03bf4b13 (buildInstanceConfig, buildDiskOpts: a disk's kms_id becomes its
metadata __system__cmkid with __system__encrypted "1"; validateDiskSize drops a disk outside 40-32768 GB (SYS) or
10-32768 GB (DATA) from the request without an error) and resource_huaweicloud_as_group.go @10adefe3
(resourceASGroupCreate: the group body, then its tags through the tag API; the schema defaults it sends:
cool_down_time 300, health_periodic_audit_method NOVA_AUDIT, health_periodic_audit_time 5, instance_terminate_policy
OLD_CONFIG_OLD_INSTANCE; networks' source_dest_check true sends an empty allowed_address_pairs; force_delete and
delete_instances are read only at delete), with chnsz/golangsdk openstack/autoscaling/v1/configurations (user data:
sent as given when it is already base64, else base64-encoded). These are the provider's sources read here, not its
v1.73.3 tag (the index holds these commits); pulumi-huaweicloud 0.0.12's `delete_volume` is sent as the body's
`delete_volume` member of the same name.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from typing import Any

from huaweicloudsdkas.v1 import model as as_

from .alicloud_requests import Inputs, drop_none

TF = "terraform-provider-huaweicloud huaweicloud/services/as"
CONFIG = f"{TF}/resource_huaweicloud_as_configuration.go@03bf4b13 resourceASConfigurationCreate (configurations.Create)"
GROUP = f"{TF}/resource_huaweicloud_as_group.go@10adefe3 resourceASGroupCreate (groups.Create, tags.Create)"
# validateDiskSize: a disk outside these sizes is left out of the request (buildDiskOpts returns the list so far)
DISK_SIZES = {"SYS": (40, 32768), "DATA": (10, 32768)}

Request = tuple[str, type, dict[str, Any], str]


def _user_data(text: Any) -> str | None:
    # configurations.ToConfigurationCreateMap: base64 text is sent as it is, anything else is encoded first
    if not text:
        return None
    try:
        base64.b64decode(str(text), validate=True)
        return str(text)
    except (binascii.Error, ValueError):
        return base64.b64encode(str(text).encode()).decode()


def _disk(d: dict[str, Any]) -> dict[str, Any]:
    kms = d.get("kmsId")
    return drop_none(
        {
            "size": d.get("size"),
            "volume_type": d.get("volumeType"),
            "disk_type": d.get("diskType"),
            "metadata": {"__system__cmkid": kms, "__system__encrypted": "1"} if kms else None,
        }
    )


def _public_ip(block: dict[str, Any] | None) -> dict[str, Any] | None:
    if not block:
        return None
    eip = block.get("eip") or {}
    bandwidth = eip.get("bandwidth") or {}
    return {
        "eip": {
            "ip_type": eip.get("ipType"),
            "bandwidth": drop_none(
                {
                    "size": bandwidth.get("size"),
                    "share_type": bandwidth.get("shareType"),
                    "charging_mode": bandwidth.get("chargingMode"),
                }
            ),
        }
    }


def configuration(i: Inputs) -> list[Request]:
    cfg = i.get("instanceConfig")
    config = drop_none(
        {
            "flavorRef": cfg.get("flavor"),
            "imageRef": cfg.get("image"),
            "key_name": cfg.get("keyName"),
            "server_group_id": cfg.get("ecsGroupId"),
            "user_data": _user_data(cfg.get("userData")),
            "security_groups": [{"id": sg} for sg in cfg.get("securityGroupIds") or []] or None,
            "disk": [_disk(d) for d in cfg.get("disks") or []] or None,
            "public_ip": _public_ip(cfg.get("publicIp")),
        }
    )
    body = {"scaling_configuration_name": i.get("scalingConfigurationName"), "instance_config": config}
    return [("as:CreateScalingConfig", as_.CreateScalingConfigOption, body, CONFIG)]


def group(i: Inputs) -> list[Request]:
    body = drop_none(
        {
            "scaling_group_name": i.get("scalingGroupName"),
            "scaling_configuration_id": i.get("scalingConfigurationId"),
            "desire_instance_number": i.get("desireInstanceNumber"),
            "min_instance_number": i.get("minInstanceNumber"),
            "max_instance_number": i.get("maxInstanceNumber"),
            "cool_down_time": i.get("coolDownTime", 300),
            "available_zones": i.ok("availabilityZones"),
            "networks": [{"id": n.get("id"), "allowed_address_pairs": []} for n in i.get("networks") or []],
            "vpc_id": i.get("vpcId"),
            "health_periodic_audit_method": i.get("healthPeriodicAuditMethod", "NOVA_AUDIT"),
            "health_periodic_audit_time": i.get("healthPeriodicAuditTime", 5),
            "instance_terminate_policy": i.get("instanceTerminatePolicy", "OLD_CONFIG_OLD_INSTANCE"),
            "iam_agency_name": i.ok("agencyName"),
            "delete_publicip": bool(i.get("deletePublicip", False)),
            "delete_volume": i.ok("deleteVolume"),
        }
    )
    # read only when the group is deleted (resourceASGroupDelete: ForceDelete, or BatchDelete with delete_instances)
    i.get("forceDelete")
    i.get("deleteInstances")
    calls: list[Request] = [("as:CreateScalingGroup", as_.CreateScalingGroupOption, body, GROUP)]
    tags = [{"key": k, "value": str(v)} for k, v in (i.ok("tags") or {}).items()]
    if tags:
        calls.append(("as:CreateScalingTagInfo", as_.CreateTagsOption, {"tags": tags, "action": "create"}, GROUP))
    return calls


def dropped_disks(inputs: dict[str, Any]) -> list[str]:
    """The disks the provider leaves out of the request without an error (validateDiskSize)."""
    out = []
    for d in (inputs.get("instanceConfig") or {}).get("disks") or []:
        low, high = DISK_SIZES.get(str(d.get("diskType")), (0, 0))
        size = d.get("size")
        if isinstance(size, int) and not low <= size <= high:
            out.append(
                f"provider: the {d.get('diskType')} disk of {size} GB is dropped from the request: "
                f"{low} to {high} GB (resource_huaweicloud_as_configuration.go validateDiskSize)"
            )
    return out


REQUESTS: dict[str, Callable[[Inputs], list[Request]]] = {
    "huaweicloud:As/configuration:Configuration": configuration,
    "huaweicloud:As/group:Group": group,
}
