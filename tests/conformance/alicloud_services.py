"""Alibaba Cloud requests, part 2: the ESS, RAM, KMS, NAS and ACK translations (see alicloud_requests)."""

from __future__ import annotations

import json
from typing import Any

from alibabacloud_cs20151215 import models as cs
from alibabacloud_ess20220222 import models as ess
from alibabacloud_kms20160120 import models as kms
from alibabacloud_nas20170626 import models as nas
from alibabacloud_ram20150501 import models as ram

from .alicloud_requests import Call, Inputs, drop_none, tag_list, tag_resources, tags_of

# --- ESS (the provider calls API 2014-08-28; the installed model is 2022-02-22) -------------------------------------
# Where 2014-08-28 names a parameter otherwise, the request is renamed before the 2022-02-22 model judges it. The
# provider sends DataDisk.N.* (resourceAliyunEssScalingConfigurationCreate); aliyun/alibaba-cloud-sdk-go
# services/ess/create_scaling_configuration.go (API 2014-08-28) names it "DataDisk.1.Size" etc.; 2022-02-22 calls
# the list DataDisks. SystemDisk.*, ImageOptions.* and ResourcePoolOptions.* are flat names of one nested object.
ESS_RENAMES = {"DataDisk": "DataDisks", "SpotPriceLimit": "SpotPriceLimits"}


def ess_group(i: Inputs, region: str) -> list[Call]:
    src = "alicloud/resource_alicloud_ess_scaling_group.go buildAlicloudEssScalingGroupArgs"
    req: dict[str, Any] = {
        "RegionId": region,
        "MinSize": i.get("minSize"),
        "MaxSize": i.get("maxSize"),
        # d.Get with schema defaults: default_cooldown 300, multi_az_policy PRIORITY
        "DefaultCooldown": i.get("defaultCooldown") or 300,
        "MultiAZPolicy": i.get("multiAzPolicy") or "PRIORITY",
        # Computed, d.Get: 0 on create when unset
        "OnDemandBaseCapacity": i.get("onDemandBaseCapacity") or 0,
        "OnDemandPercentageAboveBaseCapacity": i.get("onDemandPercentageAboveBaseCapacity") or 0,
    }
    req |= drop_none(
        {
            "ScalingGroupName": i.ok("scalingGroupName"),
            "VSwitchIds": i.ok("vswitchIds"),
            "DesiredCapacity": i.ok("desiredCapacity"),
            "SpotInstanceRemedy": i.ok("spotInstanceRemedy"),
            "CompensateWithOnDemand": i.get("compensateWithOnDemand"),
        }
    )
    calls = [Call("ess:CreateScalingGroup", ess.CreateScalingGroupRequest, req, src)]
    if tags := tags_of(i):
        calls.append(
            tag_resources(
                "ess",
                ess.TagResourcesRequest,
                "scalinggroup",
                "<new group>",
                tags,
                "alicloud/service_alicloud_ess.go SetResourceTags",
            )
        )
    return calls


def ess_configuration(i: Inputs, region: str) -> list[Call]:
    system_disk = drop_none(
        {
            "Encrypted": bool(i.get("systemDiskEncrypted")),
            "KMSKeyId": i.get("systemDiskKmsKeyId") or "",  # d.Get: sent, empty when unset
            "Category": i.ok("systemDiskCategory"),
            "Size": i.ok("systemDiskSize"),
            "PerformanceLevel": i.ok("systemDiskPerformanceLevel"),
            # request["SystemDisk.EncryptAlgorithm"] (resourceAliyunEssScalingConfigurationCreate)
            "EncryptAlgorithm": i.ok("systemDiskEncryptAlgorithm"),
        }
    )
    tags = tags_of(i)
    req: dict[str, Any] = {
        "RegionId": region,
        "ImageId": i.get("imageId"),
        "ScalingGroupId": i.get("scalingGroupId"),
        "PasswordInherit": bool(i.get("passwordInherit")),
        "ImageOptions": {"LoginAsNonRoot": bool(i.get("imageOptionsLoginAsNonRoot"))},
        "DeletionProtection": bool(i.get("deletionProtection")),
        "SystemDisk": system_disk,
        "InstanceTypes": [*(i.ok("instanceTypes") or []), *([i.get("instanceType")] if i.ok("instanceType") else [])],
        "InternetMaxBandwidthOut": i.get("internetMaxBandwidthOut") or 0,
        "IoOptimized": "optimized",
    }
    req |= drop_none(
        {
            "SecurityGroupId": i.ok("securityGroupId"),
            "SecurityGroupIds": i.ok("securityGroupIds"),
            "ScalingConfigurationName": i.ok("scalingConfigurationName"),
            "InternetChargeType": i.ok("internetChargeType"),
            "RamRoleName": i.ok("roleName"),
            "KeyPairName": i.ok("keyName"),
            "InstanceName": i.ok("instanceName"),
            "HostName": i.ok("hostName"),
            "SpotStrategy": i.ok("spotStrategy"),
            "UserData": i.ok("userData"),
            # convertMaptoJsonString: a JSON object
            "Tags": json.dumps(dict(tags)) if tags else None,
        }
    )
    pool = drop_none(
        {"Strategy": i.ok("resourcePoolOptionsStrategy"), "PrivatePoolIds": i.ok("resourcePoolOptionsPrivatePoolIds")}
    )
    if pool:
        req["ResourcePoolOptions"] = pool
    disks = []
    for d in i.ok("dataDisks") or []:
        disk = {
            "Size": d.get("size"),
            "ProvisionedIops": d.get("provisionedIops") or 0,
            "DeleteWithInstance": bool(d.get("deleteWithInstance")),
            "Encrypted": bool(d.get("encrypted")),
        }
        disk |= drop_none(
            {
                "Category": d.get("category"),
                "KMSKeyId": d.get("kmsKeyId"),
                "DiskName": d.get("name"),
                "Description": d.get("description"),
                "PerformanceLevel": d.get("performanceLevel"),
            }
        )
        disks.append(disk)
    if disks:
        req["DataDisk"] = disks
    nics = [
        drop_none(
            {
                "InstanceType": n.get("instanceType"),
                "NetworkInterfaceTrafficMode": n.get("networkInterfaceTrafficMode"),
                "Ipv6AddressCount": n.get("ipv6AddressCount") or 0,
                "SecurityGroupIds": n.get("securityGroupIds"),
            }
        )
        for n in i.ok("networkInterfaces") or []
    ]
    if nics:
        req["NetworkInterfaces"] = nics
    for old, new in ESS_RENAMES.items():
        if old in req:
            req[new] = req.pop(old)
    src = "alicloud/resource_alicloud_ess_scaling_configuration.go resourceAliyunEssScalingConfigurationCreate"
    return [Call("ess:CreateScalingConfiguration", ess.CreateScalingConfigurationRequest, req, src, tags=tags)]


def ess_scheduled_task(i: Inputs, region: str) -> list[Call]:
    req = drop_none(
        {
            "RegionId": region,
            "ScheduledAction": i.ok("scheduledAction"),
            "LaunchTime": i.ok("launchTime"),
            "TaskEnabled": i.ok("taskEnabled"),
            "ScheduledTaskName": i.ok("scheduledTaskName"),
            "Description": i.ok("description"),
            "RecurrenceType": i.ok("recurrenceType"),
            "RecurrenceValue": i.ok("recurrenceValue"),
            "RecurrenceEndTime": i.ok("recurrenceEndTime"),
            "ScalingGroupId": i.ok("scalingGroupId"),
            "LaunchExpirationTime": i.ok("launchExpirationTime") or 600,  # schema default 600
            "MinValue": i.get("minValue"),
            "MaxValue": i.get("maxValue"),
            "DesiredCapacity": i.get("desiredCapacity"),
        }
    )
    src = "alicloud/resource_alicloud_ess_scheduled_task.go buildAlicloudEssScheduledTaskArgs"
    return [Call("ess:CreateScheduledTask", ess.CreateScheduledTaskRequest, req, src)]


def ess_lifecycle_hook(i: Inputs, region: str) -> list[Call]:
    req = drop_none(
        {
            "RegionId": region,
            "ScalingGroupId": i.ok("scalingGroupId"),
            "LifecycleHookName": i.ok("name"),
            "LifecycleTransition": i.ok("lifecycleTransition"),
            "DefaultResult": i.ok("defaultResult"),
            "HeartbeatTimeout": i.ok("heartbeatTimeout"),
            "NotificationArn": i.ok("notificationArn"),
            "NotificationMetadata": i.ok("notificationMetadata"),
        }
    )
    src = "alicloud/resource_alicloud_ess_lifecyclehook.go resourceAliyunEssLifeCycleHookCreate"
    return [Call("ess:CreateLifecycleHook", ess.CreateLifecycleHookRequest, req, src)]


# --- RAM, KMS ----------------------------------------------------------------------------------------------------


def ram_role(i: Inputs, region: str) -> list[Call]:
    tags = tags_of(i)
    req = drop_none(
        {
            "RoleName": i.ok("roleName"),
            "Description": i.ok("description"),
            "MaxSessionDuration": i.ok("maxSessionDuration"),
            # convertListMapToJsonString: the JSON text the SDK's own client sends for Tag (ram20150501 client.py
            # create_role_with_options: array_to_string_with_specified_style(tag, 'Tag', 'json')); judged as the list
            "Tag": tag_list(tags) or None,
            "AssumeRolePolicyDocument": i.ok("assumeRolePolicyDocument"),
        }
    )
    src = "alicloud/resource_alicloud_ram_role.go resourceAliCloudRamRoleCreate"
    return [Call("ram:CreateRole", ram.CreateRoleRequest, req, src, tags=tags)]


def ram_policy(i: Inputs, region: str) -> list[Call]:
    tags = tags_of(i)
    req = drop_none(
        {
            "PolicyName": i.ok("policyName"),
            "Description": i.ok("description"),
            "PolicyDocument": i.ok("policyDocument"),
            "Tag": tag_list(tags) or None,  # JSON text on the wire, as for CreateRole
        }
    )
    src = "alicloud/resource_alicloud_ram_policy.go resourceAliCloudRamPolicyCreate"
    return [Call("ram:CreatePolicy", ram.CreatePolicyRequest, req, src, tags=tags)]


def ram_attachment(i: Inputs, region: str) -> list[Call]:
    req = {"PolicyType": i.get("policyType"), "PolicyName": i.get("policyName"), "RoleName": i.get("roleName")}
    src = "alicloud/resource_alicloud_ram_role_policy_attachment.go resourceAliCloudRamRolePolicyAttachmentCreate"
    return [Call("ram:AttachPolicyToRole", ram.AttachPolicyToRoleRequest, req, src)]


def kms_key(i: Inputs, region: str) -> list[Call]:
    src = "alicloud/resource_alicloud_kms_key.go resourceAliCloudKmsKeyCreate"
    tags = tags_of(i)
    rotation = i.ok("automaticRotation")
    req = drop_none(
        {
            "Description": i.ok("description"),
            "KeyUsage": i.ok("keyUsage"),
            "Origin": i.ok("origin"),
            "ProtectionLevel": i.ok("protectionLevel") or "SOFTWARE",  # schema default
            "RotationInterval": i.ok("rotationInterval"),
            "KeySpec": i.ok("keySpec"),
            "DKMSInstanceId": i.ok("dkmsInstanceId"),  # request["DKMSInstanceId"] (resourceAliCloudKmsKeyCreate)
            "EnableAutomaticRotation": (rotation == "Enabled") if rotation else None,
            "Tags": json.dumps(tag_list(tags, "TagKey", "TagValue")) if tags else None,  # ConvertTagsForKms
        }
    )
    calls = [Call("kms:CreateKey", kms.CreateKeyRequest, req, src, tags=tags)]
    if protection := i.ok("deletionProtection"):  # the update that follows create
        calls.append(
            Call(
                "kms:SetDeletionProtection",
                kms.SetDeletionProtectionRequest,
                drop_none(
                    {
                        "KeyId": "<new key>",
                        "DeletionProtectionDescription": i.ok("deletionProtectionDescription"),
                        "EnableDeletionProtection": protection == "Enabled",
                    }
                ),
                "alicloud/resource_alicloud_kms_key.go resourceAliCloudKmsKeyUpdate",
            )
        )
    if window := i.ok("pendingWindowInDays"):  # sent at destroy, not at create
        calls.append(
            Call(
                "kms:ScheduleKeyDeletion",
                kms.ScheduleKeyDeletionRequest,
                {"KeyId": "<the key>", "PendingWindowInDays": window},
                "alicloud/resource_alicloud_kms_key.go resourceAliCloudKmsKeyDelete",
            )
        )
    return calls


def kms_ciphertext(i: Inputs, region: str) -> list[Call]:
    req = drop_none(
        {
            "RegionId": region,
            "Plaintext": i.get("plaintext"),
            "KeyId": i.get("keyId"),
            "EncryptionContext": json.dumps(i.ok("encryptionContext")) if i.ok("encryptionContext") else None,
        }
    )
    src = "alicloud/resource_alicloud_kms_ciphertext.go resourceAlicloudKmsCiphertextCreate"
    return [Call("kms:Encrypt", kms.EncryptRequest, req, src)]


# --- NAS ---------------------------------------------------------------------------------------------------------


def nas_file_system(i: Inputs, region: str) -> list[Call]:
    tags = tags_of(i)
    req = drop_none(
        {
            "Description": i.ok("description"),
            "StorageType": i.get("storageType"),
            "Capacity": i.get("capacity"),
            "FileSystemType": i.ok("fileSystemType"),
            "EncryptType": i.get("encryptType"),
            "DryRun": "false",
            "ProtocolType": i.get("protocolType"),
            "ZoneId": i.ok("zoneId"),
            "KmsKeyId": i.ok("kmsKeyId"),
            "VpcId": i.ok("vpcId"),
            "VSwitchId": i.ok("vswitchId"),
            "Tag": tag_list(tags) or None,
        }
    )
    src = "alicloud/resource_alicloud_nas_file_system.go resourceAliCloudNasFileSystemCreate"
    return [Call("nas:CreateFileSystem", nas.CreateFileSystemRequest, req, src, tags=tags)]


def nas_access_group(i: Inputs, region: str) -> list[Call]:
    req = drop_none(
        {
            "AccessGroupName": i.ok("accessGroupName"),
            "FileSystemType": i.ok("fileSystemType"),
            "Description": i.ok("description"),
            "AccessGroupType": i.ok("accessGroupType"),
        }
    )
    src = "alicloud/resource_alicloud_nas_access_group.go resourceAliCloudNasAccessGroupCreate"
    return [Call("nas:CreateAccessGroup", nas.CreateAccessGroupRequest, req, src)]


def nas_access_rule(i: Inputs, region: str) -> list[Call]:
    req = drop_none(
        {
            "FileSystemType": i.ok("fileSystemType") or "standard",
            "AccessGroupName": i.get("accessGroupName"),
            "SourceCidrIp": i.ok("sourceCidrIp"),
            "RWAccessType": i.ok("rwAccessType"),
            "UserAccessType": i.ok("userAccessType"),
            "Priority": i.ok("priority"),
        }
    )
    src = "alicloud/resource_alicloud_nas_access_rule.go resourceAliCloudNasAccessRuleCreate"
    return [Call("nas:CreateAccessRule", nas.CreateAccessRuleRequest, req, src)]


def nas_mount_target(i: Inputs, region: str) -> list[Call]:
    req = drop_none(
        {
            "FileSystemId": i.ok("fileSystemId"),
            "VpcId": i.ok("vpcId"),
            "AccessGroupName": i.get("accessGroupName"),
            "SecurityGroupId": i.ok("securityGroupId"),
            "VSwitchId": i.ok("vswitchId"),
            "NetworkType": i.ok("networkType") or "Vpc",
        }
    )
    src = "alicloud/resource_alicloud_nas_mount_target.go resourceAliCloudNasMountTargetCreate"
    return [Call("nas:CreateMountTarget", nas.CreateMountTargetRequest, req, src)]


# --- ACK (CS 2015-12-15, ROA: JSON bodies) ------------------------------------------------------------------------


def ack_cluster(i: Inputs, region: str) -> list[Call]:
    # the provider fills a typed roacs.CreateClusterRequest (the Go twin of this model)
    tags = tags_of(i)
    addons = [
        {
            "name": a.get("name"),
            "config": a.get("config") or "",
            "version": a.get("version") or "",
            "disabled": bool(a.get("disabled")),
        }
        for a in i.ok("addons") or []
    ]
    req = drop_none(
        {
            "name": i.ok("name"),
            "region_id": region,
            "cluster_type": "ManagedKubernetes",
            "profile": i.ok("profile") or "Default",
            "tags": [{"key": k, "value": v} for k, v in tags],
            "addons": addons,
            "vpcid": "<the vSwitch's VPC>",  # looked up from vswitch_ids[0] (DescribeVSwitch)
            "vswitch_ids": i.ok("vswitchIds"),
            "kubernetes_version": i.ok("version"),
            # GetOk: false is not sent (the API's default for both is false)
            "snat_entry": i.ok("newNatGateway"),
            "endpoint_public_access": i.ok("slbInternetEnabled"),
            "security_group_id": i.ok("securityGroupId"),
            "service_cidr": i.ok("serviceCidr"),
            "proxy_mode": i.ok("proxyMode"),
            "container_cidr": i.ok("podCidr"),
            "node_cidr_mask": str(i.ok("nodeCidrMask") or 24),  # schema default KubernetesClusterNodeCIDRMasksByDefault
            "cluster_spec": i.ok("clusterSpec"),
            "enable_rrsa": i.ok("enableRrsa"),
            "encryption_provider_key": i.ok("encryptionProviderKey"),
            "deletion_protection": i.get("deletionProtection"),
        }
    )
    src = "alicloud/resource_alicloud_cs_managed_kubernetes.go resourceAlicloudCSManagedKubernetesCreate"
    return [Call("cs:CreateCluster", cs.CreateClusterRequest, req, src, roa=True, tags=tags)]


def ack_node_pool(i: Inputs, region: str) -> list[Call]:
    tags = tags_of(i)
    disks = [
        drop_none(
            {
                "disk_name": d.get("name"),
                "kms_key_id": d.get("kmsKeyId"),
                "category": d.get("category"),
                "size": d.get("size") or None,
                "performance_level": d.get("performanceLevel"),
                "encrypted": d.get("encrypted"),
            }
        )
        for d in i.ok("dataDisks") or []
    ]
    pool = i.ok("privatePoolOptions") or {}
    group = drop_none(
        {
            "data_disks": disks or None,
            "security_group_ids": i.ok("securityGroupIds"),
            "key_pair": i.ok("keyName"),
            "system_disk_category": i.ok("systemDiskCategory"),
            "system_disk_kms_key_id": i.ok("systemDiskKmsKey"),
            "system_disk_encrypted": i.ok("systemDiskEncrypted"),
            "instance_types": i.ok("instanceTypes"),
            # ConvertTags: capitalised Key/Value (the model says key/value; ROA keys compare without case)
            "tags": tag_list(tags) or None,
            "desired_size": int(i.ok("desiredSize")) if i.ok("desiredSize") else None,
            "vswitch_ids": i.ok("vswitchIds"),
            "private_pool_options": drop_none(
                {"id": pool.get("privatePoolOptionsId"), "match_criteria": pool.get("privatePoolOptionsMatchCriteria")}
            )
            or None,
            "system_disk_size": i.ok("systemDiskSize"),
            "system_disk_performance_level": i.ok("systemDiskPerformanceLevel"),
            "spot_strategy": i.ok("spotStrategy"),
            # scaling_group["instance_metadata_options"] (resourceAliCloudAckNodepoolCreate)
            "instance_metadata_options": drop_none(
                {"http_tokens": (i.ok("instanceMetadataOptions") or {}).get("httpTokens")}
            )
            or None,
            "image_type": i.ok("imageType"),
            "deploymentset_id": i.ok("deploymentSetId"),
            "spot_instance_remedy": i.ok("spotInstanceRemedy"),
        }
    )
    scaling = i.ok("scalingConfig")
    k8s = drop_none(
        {
            "labels": [{"value": x.get("value"), "key": x.get("key")} for x in i.ok("labels") or []] or None,
            "user_data": i.ok("userData"),
            "taints": [
                {"value": t.get("value"), "key": t.get("key"), "effect": t.get("effect")} for t in i.ok("taints") or []
            ]
            or None,
            "pre_user_data": i.ok("preUserData"),
        }
    )
    req: dict[str, Any] = {
        "scaling_group": group,
        "kubernetes_config": k8s,
        "nodepool_info": {"name": i.ok("nodePoolName")},
    }
    if scaling:
        req["auto_scaling"] = drop_none(
            {
                "max_instances": scaling.get("maxSize"),
                "min_instances": scaling.get("minSize"),
                "enable": scaling.get("enable"),
            }
        )
    src = "alicloud/resource_alicloud_cs_kubernetes_node_pool.go resourceAliCloudAckNodepoolCreate"
    path = (("ClusterId", i.get("clusterId")),)
    return [Call("cs:CreateClusterNodePool", cs.CreateClusterNodePoolRequest, req, src, True, tags, path)]


def ack_addon(i: Inputs, region: str) -> list[Call]:
    body = drop_none({"name": i.get("name"), "version": i.get("version") or "", "config": i.ok("config")})
    src = "alicloud/service_alicloud_cs.go (CsClient).installAddon"
    path = (("ClusterId", i.get("clusterId")),)
    return [Call("cs:InstallClusterAddons", cs.InstallClusterAddonsRequest, {"body": [body]}, src, True, (), path)]


def ack_autoscaling_config(i: Inputs, region: str) -> list[Call]:
    # the schema's defaults, sent with GetOk: cool_down_duration and unneeded_duration 10m, utilization_threshold and
    # gpu_utilization_threshold 0.5, scan_interval 30s, expander least-waste; scale_down_enabled with d.Get
    body = drop_none(
        {
            "scaler_type": i.ok("scalerType"),
            "cool_down_duration": i.ok("coolDownDuration") or "10m",
            "unneeded_duration": i.ok("unneededDuration") or "10m",
            "utilization_threshold": i.ok("utilizationThreshold") or "0.5",
            "gpu_utilization_threshold": i.ok("gpuUtilizationThreshold") or "0.5",
            "scan_interval": i.ok("scanInterval") or "30s",
            "scale_down_enabled": True if i.get("scaleDownEnabled") is None else i.get("scaleDownEnabled"),
            "expander": i.ok("expander") or "least-waste",
            "scale_up_from_zero": i.ok("scaleUpFromZero"),
        }
    )
    src = "alicloud/resource_alicloud_cs_autoscaling_config.go resourceAlicloudCSAutoscalingConfigUpdate"
    path = (("ClusterId", i.get("clusterId")),)
    return [Call("cs:CreateAutoscalingConfig", cs.CreateAutoscalingConfigRequest, body, src, True, (), path)]
