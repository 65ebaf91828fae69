"""Alibaba Cloud requests, part 5: Simple Log Service (`monitoring.logs`, components/alicloud/logs.py; and the audit
project of compliance mlps3): the project, the logstore, the machine group, the Logtail configurations and their
attachments to the group, as the provider sends them (see alicloud_requests), judged by the SLS Tea models
(alibabacloud_sls20201230, API 2020-12-30; all ROA: JSON bodies).

Sources: aliyun/terraform-provider-alicloud @81c43b67: alicloud/resource_alicloud_log_project.go
(resourceAliCloudSlsProjectCreate: CreateProject; tags after it through service_alicloud_sls_v2.go SetResourceTags:
TagResources, resourceType PROJECT), alicloud/resource_alicloud_log_store.go (resourceAliCloudSlsLogStoreCreate:
CreateLogStore, shardCount 2 and ttl 30 unless set), alicloud/resource_alicloud_log_machine_group.go (Create: the log
Go SDK's CreateMachineGroup with sls.MachineGroup), alicloud/resource_alicloud_logtail_config.go (Create: the log Go
SDK's CreateConfig with sls.LogConfig; its OutputDetail also carries projectName, which the API takes from the host:
here the project is the path), alicloud/resource_alicloud_logtail_attachment.go (ApplyConfigToMachineGroup: path
parameters only, no request model in the Tea SDK: nothing to judge but the names).
"""

from __future__ import annotations

import json

from alibabacloud_sls20201230 import models as sls

from .alicloud_requests import Call, Inputs, drop_none, tags_of

SRC = "alicloud/"


def project(i: Inputs, region: str) -> list[Call]:
    name = i.ok("projectName") or i.ok("name")
    body = drop_none(
        {"projectName": name, "description": i.ok("description"), "resourceGroupId": i.ok("resourceGroupId")}
    )
    calls = [Call("sls:CreateProject", sls.CreateProjectRequest, body, f"{SRC}resource_alicloud_log_project.go "
                  "resourceAliCloudSlsProjectCreate", roa=True)]  # fmt: skip
    i.get("policy")  # UpdateProjectPolicy (the log Go SDK) only when set; none of ours sets it
    tags = tags_of(i)
    if tags:
        request = {"resourceType": "PROJECT", "resourceId": [name], "tags": [{"key": k, "value": v} for k, v in tags]}
        src = "alicloud/service_alicloud_sls_v2.go SetResourceTags"
        calls.append(Call("sls:TagResources", sls.TagResourcesRequest, request, src, roa=True, tags=tags))
    return calls


def store(i: Inputs, region: str) -> list[Call]:
    encrypt = i.ok("encryptConf")
    conf = None
    if encrypt:
        cmk = encrypt.get("userCmkInfo")
        conf = drop_none(
            {
                "enable": encrypt.get("enable"),
                "encrypt_type": encrypt.get("encryptType"),
                "user_cmk_info": drop_none(
                    {"cmk_key_id": cmk.get("cmkKeyId"), "arn": cmk.get("arn"), "region_id": cmk.get("regionId")}
                )
                if cmk
                else None,
            }
        )
    body = drop_none(
        {
            "logstoreName": i.ok("name") or i.get("logstoreName"),
            "shardCount": i.get("shardCount") if i.get("shardCount") is not None else 2,
            "autoSplit": i.ok("autoSplit"),
            "appendMeta": i.ok("appendMeta"),
            "telemetryType": i.ok("telemetryType"),
            "hot_ttl": i.ok("hotTtl"),
            "mode": i.ok("mode"),
            "encrypt_conf": conf,
            "ttl": i.ok("retentionPeriod") or 30,
            "maxSplitShard": i.ok("maxSplitShardCount"),
            "enable_tracking": i.ok("enableWebTracking"),
            "infrequentAccessTTL": i.ok("infrequentAccessTtl"),
        }
    )
    path = (("project", i.ok("project") or i.get("projectName")),)
    src = f"{SRC}resource_alicloud_log_store.go resourceAliCloudSlsLogStoreCreate"
    return [Call("sls:CreateLogStore", sls.CreateLogStoreRequest, body, src, roa=True, path=path)]


def machine_group(i: Inputs, region: str) -> list[Call]:
    body = drop_none(
        {
            "groupName": i.get("name"),
            "machineIdentifyType": i.get("identifyType") or "ip",  # the schema's Default (sls.MachineIDTypeIP)
            "machineList": list(i.get("identifyLists") or []),
            "groupAttribute": {"groupTopic": i.get("topic") or ""},
        }
    )
    path = (("project", i.get("project")),)
    src = f"{SRC}resource_alicloud_log_machine_group.go resourceAlicloudLogMachineGroupCreate"
    return [Call("sls:CreateMachineGroup", sls.CreateMachineGroupRequest, body, src, roa=True, path=path)]


def logtail_config(i: Inputs, region: str) -> list[Call]:
    config = drop_none(
        {
            "configName": i.get("name"),
            "logSample": i.ok("logSample"),
            "inputType": i.get("inputType"),
            "inputDetail": json.loads(i.get("inputDetail")),
            "outputType": i.get("outputType"),
            "outputDetail": {"logstoreName": i.get("logstore")},
        }
    )
    path = (("project", i.get("project")),)
    src = f"{SRC}resource_alicloud_logtail_config.go resourceAlicloudLogtailConfigCreate"
    return [Call("sls:CreateConfig", sls.CreateConfigRequest, {"body": config}, src, roa=True, path=path)]


def logtail_attachment(i: Inputs, region: str) -> list[Call]:
    """Path parameters only (project, machineGroup, configName): the Tea SDK has no request model to judge."""
    for key in ("project", "logtailConfigName", "machineGroupName"):
        i.get(key)
    return []
