"""Tencent Cloud requests, part 2: `monitoring.logs` (components/tencentcloud/logs.py): the CLS logset, topic, machine
group, collection configs and their attachments, LogListener's CAM sub-user, its policies and attachments, and the
SSM secret holding its key, as the Terraform provider sends them, judged by tencentcloud-sdk-python-cls (API
2020-10-16), -ssm (2019-09-23) and -cam (2019-01-16) models (see tencentcloud.py for how).

Sources: tencentcloudstack/terraform-provider-tencentcloud @4b0a358d tencentcloud/services/cls/:
resource_tc_cls_topic.go (resourceTencentCloudClsTopicCreate: CreateTopic with logset_id, topic_name,
partition_count, tags, auto_split, max_split_partitions, storage_type, period), resource_tc_cls_machine_group.go
(resourceTencentCloudClsMachineGroupCreate: CreateMachineGroup with group_name, machine_group_type {Type, Values},
tags, auto_update, update_*_time, service_logging), resource_tc_cls_config.go (resourceTencentCloudClsConfigCreate:
CreateConfig with name, output, path, log_type, extract_rule, exclude_paths, user_define_rule). The others by their
SDK request's members and the provider's argument of the same meaning (read from the Pulumi SDK 0.2.3 docstrings,
not line by line in the Go source: "by meaning" in their source).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tencentcloud.cam.v20190116 import models as cam
from tencentcloud.cls.v20201016 import models as cls
from tencentcloud.ssm.v20190923 import models as ssm

from .alicloud_requests import Inputs, drop_none

SRC = "tencentcloud/services/"
Request = tuple[str, type, dict[str, Any], str]  # api, model, request, source


def _tags(i: Inputs) -> list[dict[str, str]] | None:
    return [{"Key": k, "Value": str(v)} for k, v in (i.ok("tags") or {}).items()] or None


def _logset(i: Inputs) -> list[Request]:
    req = drop_none({"LogsetName": i.get("logsetName"), "Tags": _tags(i)})
    return [("cls:CreateLogset", cls.CreateLogsetRequest, req, f"{SRC}cls/resource_tc_cls_logset.go (by meaning)")]


def _topic(i: Inputs) -> list[Request]:
    req = drop_none(
        {
            "LogsetId": i.get("logsetId"),
            "TopicName": i.get("topicName"),
            "PartitionCount": i.ok("partitionCount"),
            "Tags": _tags(i),
            "AutoSplit": i.ok("autoSplit"),
            "MaxSplitPartitions": i.ok("maxSplitPartitions"),
            "StorageType": i.ok("storageType"),
            "Period": i.ok("period"),
            "Describes": i.ok("describes"),  # argument of the newer provider the 0.2.3 SDK bridges
        }
    )
    src = f"{SRC}cls/resource_tc_cls_topic.go resourceTencentCloudClsTopicCreate"
    return [("cls:CreateTopic", cls.CreateTopicRequest, req, src)]


def _machine_group(i: Inputs) -> list[Request]:
    kind = i.get("machineGroupType") or {}
    req = drop_none(
        {
            "GroupName": i.get("groupName"),
            "MachineGroupType": {"Type": kind.get("type"), "Values": list(kind.get("values") or [])},
            "Tags": _tags(i),
            "AutoUpdate": i.ok("autoUpdate"),
            "UpdateStartTime": i.ok("updateStartTime"),
            "UpdateEndTime": i.ok("updateEndTime"),
            "ServiceLogging": i.ok("serviceLogging"),
        }
    )
    src = f"{SRC}cls/resource_tc_cls_machine_group.go resourceTencentCloudClsMachineGroupCreate"
    return [("cls:CreateMachineGroup", cls.CreateMachineGroupRequest, req, src)]


def _config(i: Inputs) -> list[Request]:
    rule = i.get("extractRule") or {}
    extract = drop_none(
        {
            "TimeKey": rule.get("timeKey"),
            "TimeFormat": rule.get("timeFormat"),
            "Delimiter": rule.get("delimiter"),
            "LogRegex": rule.get("logRegex"),
            "BeginRegex": rule.get("beginRegex"),
            "UnMatchUpLoadSwitch": rule.get("unMatchUpLoadSwitch"),
            "UnMatchLogKey": rule.get("unMatchLogKey"),
            "Backtracking": rule.get("backtracking"),
            "IsGBK": rule.get("isGbk"),
            "JsonStandard": rule.get("jsonStandard"),
            "MetadataType": rule.get("metadataType"),
        }
    )
    req = drop_none(
        {
            "Name": i.get("name"),
            "Output": i.get("output"),
            "Path": i.get("path"),
            "LogType": i.get("logType"),
            "ExtractRule": extract,
            "ExcludePaths": i.ok("excludePaths"),
            "UserDefineRule": i.ok("userDefineRule"),
        }
    )
    src = f"{SRC}cls/resource_tc_cls_config.go resourceTencentCloudClsConfigCreate"
    return [("cls:CreateConfig", cls.CreateConfigRequest, req, src)]


def _config_attachment(i: Inputs) -> list[Request]:
    req = {"ConfigId": i.get("configId"), "GroupId": i.get("groupId")}
    src = f"{SRC}cls/resource_tc_cls_config_attachment.go (by meaning)"
    return [("cls:ApplyConfigToMachineGroup", cls.ApplyConfigToMachineGroupRequest, req, src)]


def _user(i: Inputs) -> list[Request]:
    login = i.get("consoleLogin")
    req = drop_none(
        {
            "Name": i.get("name"),
            "Remark": i.ok("remark"),
            "ConsoleLogin": None if login is None else int(bool(login)),
            "UseApi": None if i.get("useApi") is None else int(bool(i.get("useApi"))),
        }
    )
    i.get("forceDelete")  # the provider's own: deletes the user's API keys first
    i.get("tags")  # the Tag API after create (not judged: tencentcloud.py)
    return [("cam:AddUser", cam.AddUserRequest, req, f"{SRC}cam/resource_tc_cam_user.go (by meaning)")]


def _policy(i: Inputs) -> list[Request]:
    req = drop_none(
        {"PolicyName": i.get("name"), "PolicyDocument": i.get("document"), "Description": i.ok("description")}
    )
    return [("cam:CreatePolicy", cam.CreatePolicyRequest, req, f"{SRC}cam/resource_tc_cam_policy.go (by meaning)")]


def _user_attachment(i: Inputs) -> list[Request]:
    # AttachUserPolicy takes the user's uin; the provider looks it up by user_name first
    req = {"PolicyId": i.get("policyId"), "AttachUin": f"<uin of {i.get('userName')}>"}
    src = f"{SRC}cam/resource_tc_cam_user_policy_attachment.go (by meaning)"
    return [("cam:AttachUserPolicy", cam.AttachUserPolicyRequest, req, src)]


def _secret(i: Inputs) -> list[Request]:
    req = drop_none(
        {
            "SecretName": i.get("secretName"),
            "Description": i.ok("description"),
            "KmsKeyId": i.ok("kmsKeyId"),
            "SecretType": i.ok("secretType"),
            "AdditionalConfig": i.ok("additionalConfig"),
            # SSM's Tag is {TagKey, TagValue} (ssm models.Tag), not CLS's {Key, Value}
            "Tags": [{"TagKey": t["Key"], "TagValue": t["Value"]} for t in _tags(i) or []] or None,
        }
    )
    i.get("recoveryWindowInDays")  # DeleteSecret's, at delete
    i.ok("isEnabled")
    return [("ssm:CreateSecret", ssm.CreateSecretRequest, req, f"{SRC}ssm/resource_tc_ssm_secret.go (by meaning)")]


def _secret_version(i: Inputs) -> list[Request]:
    req = drop_none(
        {
            "SecretName": i.get("secretName"),
            "VersionId": i.get("versionId"),
            "SecretString": i.ok("secretString"),
            "SecretBinary": i.ok("secretBinary"),
        }
    )
    src = f"{SRC}ssm/resource_tc_ssm_secret_version.go (by meaning)"
    return [("ssm:PutSecretValue", ssm.PutSecretValueRequest, req, src)]


REQUESTS: dict[str, tuple[str, Callable[[Inputs], list[Request]]]] = {
    "tencentcloud:Cls/logset:Logset": ("tencentcloud_cls_logset", _logset),
    "tencentcloud:Cls/topic:Topic": ("tencentcloud_cls_topic", _topic),
    "tencentcloud:Cls/machineGroup:MachineGroup": ("tencentcloud_cls_machine_group", _machine_group),
    "tencentcloud:Cls/config:Config": ("tencentcloud_cls_config", _config),
    "tencentcloud:Cls/configAttachment:ConfigAttachment": ("tencentcloud_cls_config_attachment", _config_attachment),
    "tencentcloud:Cam/user:User": ("tencentcloud_cam_user", _user),
    "tencentcloud:Cam/policy:Policy": ("tencentcloud_cam_policy", _policy),
    "tencentcloud:Cam/userPolicyAttachment:UserPolicyAttachment": (
        "tencentcloud_cam_user_policy_attachment",
        _user_attachment,
    ),
    "tencentcloud:Ssm/secret:Secret": ("tencentcloud_ssm_secret", _secret),
    "tencentcloud:Ssm/secretVersion:SecretVersion": ("tencentcloud_ssm_secret_version", _secret_version),
}
