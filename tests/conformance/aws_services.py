"""Translators for EC2 Auto Scaling, IAM, EKS, FSx, EFS, KMS, Secrets Manager and SQS (see `aws_translate`).

Importing this module registers them in `aws_translate.TRANSLATORS`.
"""

from __future__ import annotations

from typing import Any

from .aws_api import Refusal
from .aws_iam import SOURCE as IAM_POLICY_SOURCE
from .aws_iam import policy_problems
from .aws_translate import Inputs, Resource, tag_list, translates

# ---------------------------------------------------------------------------------------------------------------
# EC2 Auto Scaling


def _template_spec(t: Inputs | None, id_key: str = "id", name_key: str = "name") -> dict[str, Any] | None:
    """expandLaunchTemplateSpecification."""
    if t is None:
        return None
    return {"LaunchTemplateId": t.get(id_key), "LaunchTemplateName": t.get(name_key), "Version": t.get("version")}


def _mixed(m: Inputs | None) -> dict[str, Any] | None:
    """expandMixedInstancesPolicy (expandInstancesDistribution, expandLaunchTemplate)."""
    if m is None:
        return None
    d = m.obj("instancesDistribution")
    lt = m.obj("launchTemplate")
    spec = lt.obj("launchTemplateSpecification") if lt else None
    overrides = lt.objs("overrides") if lt else []
    return {
        "InstancesDistribution": None
        if d is None
        else {
            "OnDemandAllocationStrategy": d.get("onDemandAllocationStrategy"),
            "OnDemandBaseCapacity": d.get("onDemandBaseCapacity"),
            "OnDemandPercentageAboveBaseCapacity": d.get("onDemandPercentageAboveBaseCapacity"),
            "SpotAllocationStrategy": d.get("spotAllocationStrategy"),
            "SpotInstancePools": d.get("spotInstancePools"),
            "SpotMaxPrice": d.get("spotMaxPrice"),
        },
        "LaunchTemplate": None
        if lt is None
        else {
            "LaunchTemplateSpecification": _template_spec(spec, "launchTemplateId", "launchTemplateName"),
            "Overrides": [{"InstanceType": o.get("instanceType")} for o in overrides] or None,
        },
    }


@translates("aws:autoscaling/group:Group")
def _group(r: Resource) -> None:
    """autoscaling/group.go resourceGroupCreate: CreateAutoScalingGroup (tags: KeyValueTags(..., asgName,
    TagResourceTypeGroup)), then EnableMetricsCollection for enabled_metrics."""
    i = r.inputs
    i.skip("waitForCapacityTimeout", reason="the provider's own wait after create (waitGroupCapacitySatisfied)")
    name = r.physical()
    tags = [
        {
            "Key": t.get("key"),
            "Value": t.get("value"),
            "PropagateAtLaunch": t.get("propagateAtLaunch"),
            "ResourceId": name,
            "ResourceType": "auto-scaling-group",
        }
        for t in i.objs("tags")
    ]
    subnets = i.get("vpcZoneIdentifiers")
    params = {
        "AutoScalingGroupName": name,
        "NewInstancesProtectedFromScaleIn": i.get("protectFromScaleIn", False),
        "MinSize": i.get("minSize"),
        "MaxSize": i.get("maxSize"),
        "DesiredCapacity": i.get("desiredCapacity"),
        "CapacityRebalance": i.get("capacityRebalance"),
        "DefaultInstanceWarmup": i.get("defaultInstanceWarmup"),
        "HealthCheckType": i.get("healthCheckType"),
        "HealthCheckGracePeriod": i.get("healthCheckGracePeriod", 300),  # the schema default
        "LaunchTemplate": _template_spec(i.obj("launchTemplate")),
        "MixedInstancesPolicy": _mixed(i.obj("mixedInstancesPolicy")),
        "PlacementGroup": i.get("placementGroup"),
        "Tags": tags or None,
        "VPCZoneIdentifier": ",".join(subnets) if subnets else None,  # expandVPCZoneIdentifiers
    }
    r.call("autoscaling", "CreateAutoScalingGroup", params, "autoscaling/group.go resourceGroupCreate")
    if (refresh := i.obj("instanceRefresh")) is not None:
        # sent on a later update that changes the launch template: startInstanceRefresh with
        # expandStartInstanceRefreshInput / expandRefreshPreferences (instance_warmup and checkpoint_delay are strings
        # in the schema, converted with flex.StringValueToInt64)
        prefs = refresh.obj("preferences")
        warmup, delay = (prefs.get("instanceWarmup"), prefs.get("checkpointDelay")) if prefs else (None, None)
        refresh.skip("triggers", reason="the provider's own list of inputs whose change starts a refresh")
        preferences = (
            None
            if prefs is None
            else {
                "AutoRollback": prefs.get("autoRollback"),
                "CheckpointDelay": None if delay is None else int(delay),
                "CheckpointPercentages": prefs.get("checkpointPercentages"),
                "InstanceWarmup": None if warmup is None else int(warmup),
                "MaxHealthyPercentage": prefs.get("maxHealthyPercentage"),
                "MinHealthyPercentage": prefs.get("minHealthyPercentage"),
                "ScaleInProtectedInstances": prefs.get("scaleInProtectedInstances"),
                "SkipMatching": prefs.get("skipMatching"),
                "StandbyInstances": prefs.get("standbyInstances"),
            }
        )
        params = {"AutoScalingGroupName": name, "Strategy": refresh.get("strategy"), "Preferences": preferences}
        r.call("autoscaling", "StartInstanceRefresh", params, "autoscaling/group.go startInstanceRefresh")
    if metrics := i.get("enabledMetrics"):
        params = {
            "AutoScalingGroupName": name,
            "Granularity": i.get("metricsGranularity", "1Minute"),
            "Metrics": metrics,
        }
        r.call("autoscaling", "EnableMetricsCollection", params, "autoscaling/group.go resourceGroupCreate")
    else:
        i.skip("metricsGranularity", reason="sent only with enabled_metrics")


@translates("aws:autoscaling/lifecycleHook:LifecycleHook")
def _lifecycle_hook(r: Resource) -> None:
    """autoscaling/lifecycle_hook.go resourceLifecycleHookPut (getPutLifecycleHookInput): PutLifecycleHook."""
    i = r.inputs
    params = {
        "AutoScalingGroupName": i.get("autoscalingGroupName"),
        "LifecycleHookName": i.get("name"),
        "LifecycleTransition": i.get("lifecycleTransition"),
        "HeartbeatTimeout": i.get("heartbeatTimeout"),
        "DefaultResult": i.get("defaultResult"),
        "NotificationMetadata": i.get("notificationMetadata"),
        "NotificationTargetARN": i.get("notificationTargetArn"),
        "RoleARN": i.get("roleArn"),
    }
    r.call("autoscaling", "PutLifecycleHook", params, "autoscaling/lifecycle_hook.go resourceLifecycleHookPut")


def _dimensions(items: list[Inputs]) -> list[dict[str, Any]] | None:
    return [{"Name": d.get("name"), "Value": d.get("value")} for d in items] or None


def _metric(m: Inputs) -> dict[str, Any]:
    stat = m.obj("metricStat")
    metric = stat.obj("metric") if stat else None
    return {
        "Id": m.get("id"),
        "Expression": m.get("expression"),
        "Label": m.get("label"),
        "ReturnData": m.get("returnData"),
        "MetricStat": None
        if stat is None
        else {
            "Metric": None
            if metric is None
            else {
                "Namespace": metric.get("namespace"),
                "MetricName": metric.get("metricName"),
                "Dimensions": _dimensions(metric.objs("dimensions")),
            },
            "Stat": stat.get("stat"),
            "Unit": stat.get("unit"),
        },
    }


@translates("aws:autoscaling/policy:Policy")
def _policy(r: Resource) -> None:
    """autoscaling/policy.go resourcePolicyPut (getPutScalingPolicyInput, expandTargetTrackingConfiguration,
    expandCustomizedMetricSpecification: metric_dimension -> Dimensions, metrics -> Metrics)."""
    i = r.inputs
    tt = i.obj("targetTrackingConfiguration")
    custom = tt.obj("customizedMetricSpecification") if tt else None
    predefined = tt.obj("predefinedMetricSpecification") if tt else None
    params = {
        "AutoScalingGroupName": i.get("autoscalingGroupName"),
        "PolicyName": r.physical(),
        "PolicyType": i.get("policyType"),
        "Enabled": i.get("enabled", True),
        "EstimatedInstanceWarmup": i.get("estimatedInstanceWarmup"),
        "TargetTrackingConfiguration": None
        if tt is None
        else {
            "TargetValue": tt.get("targetValue"),
            "DisableScaleIn": tt.get("disableScaleIn"),
            "PredefinedMetricSpecification": None
            if predefined is None
            else {
                "PredefinedMetricType": predefined.get("predefinedMetricType"),
                "ResourceLabel": predefined.get("resourceLabel"),
            },
            "CustomizedMetricSpecification": None
            if custom is None
            else {
                "Namespace": custom.get("namespace"),
                "MetricName": custom.get("metricName"),
                "Statistic": custom.get("statistic"),
                "Unit": custom.get("unit"),
                "Dimensions": _dimensions(custom.objs("metricDimensions")),
                "Metrics": [_metric(m) for m in custom.objs("metrics")] or None,
            },
        },
    }
    r.call("autoscaling", "PutScalingPolicy", params, "autoscaling/policy.go resourcePolicyPut")


@translates("aws:autoscaling/schedule:Schedule")
def _schedule(r: Resource) -> None:
    """autoscaling/schedule.go resourceSchedulePut: -1 (the schema default) means "not set" for the three sizes."""
    i = r.inputs

    def size(key: str) -> Any:
        value = i.get(key, -1)
        return None if value == -1 else value

    params = {
        "AutoScalingGroupName": i.get("autoscalingGroupName"),
        "ScheduledActionName": i.get("scheduledActionName"),
        "Recurrence": i.get("recurrence"),
        "TimeZone": i.get("timeZone"),
        "StartTime": i.get("startTime"),
        "EndTime": i.get("endTime"),
        "MinSize": size("minSize"),
        "MaxSize": size("maxSize"),
        "DesiredCapacity": size("desiredCapacity"),
    }
    r.call("autoscaling", "PutScheduledUpdateGroupAction", params, "autoscaling/schedule.go resourceSchedulePut")


# ---------------------------------------------------------------------------------------------------------------
# IAM


@translates("aws:iam/role:Role")
def _role(r: Resource) -> None:
    """iam/role.go resourceRoleCreate; pulumi-aws names a role `AutoName("name", 64, "-")`."""
    i = r.inputs
    params = {
        "RoleName": r.physical(maxlen=64),
        "AssumeRolePolicyDocument": i.get("assumeRolePolicy"),
        "Path": i.get("path", "/"),
        "Description": i.get("description"),
        "MaxSessionDuration": i.get("maxSessionDuration", 3600),
        "PermissionsBoundary": i.get("permissionsBoundary"),
        "Tags": tag_list(i.get("tags")),
    }
    r.call("iam", "CreateRole", params, "iam/role.go resourceRoleCreate")


@translates("aws:iam/rolePolicy:RolePolicy")
def _role_policy(r: Resource) -> None:
    i = r.inputs
    params = {"RoleName": i.get("role"), "PolicyName": r.physical(), "PolicyDocument": i.get("policy")}
    r.call("iam", "PutRolePolicy", params, "iam/role_policy.go resourceRolePolicyPut")
    # what the document grants: botocore types it as a string only (tests/conformance/aws_iam.py)
    for problem in policy_problems(i.get("policy")):
        r.out.problems.append(Refusal(r.urn, "iam", "PutRolePolicy", "PolicyDocument", problem, IAM_POLICY_SOURCE))


@translates("aws:iam/rolePolicyAttachment:RolePolicyAttachment")
def _role_policy_attachment(r: Resource) -> None:
    i = r.inputs
    r.call(
        "iam",
        "AttachRolePolicy",
        {"RoleName": i.get("role"), "PolicyArn": i.get("policyArn")},
        "iam/role_policy_attachment.go resourceRolePolicyAttachmentCreate",
    )


@translates("aws:iam/instanceProfile:InstanceProfile")
def _instance_profile(r: Resource) -> None:
    i = r.inputs
    name = r.physical()
    params = {"InstanceProfileName": name, "Path": i.get("path", "/"), "Tags": tag_list(i.get("tags"))}
    r.call("iam", "CreateInstanceProfile", params, "iam/instance_profile.go resourceInstanceProfileCreate")
    if (role := i.get("role")) is not None:
        r.call(
            "iam",
            "AddRoleToInstanceProfile",
            {"InstanceProfileName": name, "RoleName": role},
            "iam/instance_profile.go instanceProfileAddRole",
        )


# ---------------------------------------------------------------------------------------------------------------
# EKS


@translates("aws:eks/cluster:Cluster")
def _eks_cluster(r: Resource) -> None:
    """eks/cluster.go resourceClusterCreate (expandVpcConfigRequest, expandEncryptionConfig,
    expandCreateAccessConfigRequest; bootstrap_self_managed_addons defaults to true)."""
    i = r.inputs
    vpc = i.obj("vpcConfig")
    access = i.obj("accessConfig")
    encryption = i.obj("encryptionConfig")
    provider = encryption.obj("provider") if encryption else None
    params = {
        "name": r.physical(),
        "roleArn": i.get("roleArn"),
        "version": i.get("version"),
        "bootstrapSelfManagedAddons": i.get("bootstrapSelfManagedAddons", True),
        "resourcesVpcConfig": None
        if vpc is None
        else {
            "subnetIds": vpc.get("subnetIds"),
            "securityGroupIds": vpc.get("securityGroupIds"),
            "endpointPublicAccess": vpc.get("endpointPublicAccess"),
            "endpointPrivateAccess": vpc.get("endpointPrivateAccess"),
            "publicAccessCidrs": vpc.get("publicAccessCidrs"),
        },
        "accessConfig": None
        if access is None
        else {
            "authenticationMode": access.get("authenticationMode"),
            "bootstrapClusterCreatorAdminPermissions": access.get("bootstrapClusterCreatorAdminPermissions"),
        },
        "encryptionConfig": None
        if encryption is None
        else [
            {
                "resources": encryption.get("resources"),
                "provider": None if provider is None else {"keyArn": provider.get("keyArn")},
            }
        ],
        "logging": None
        if not (types := i.get("enabledClusterLogTypes"))
        else {"clusterLogging": [{"types": types, "enabled": True}]},
        "tags": i.get("tags"),
    }
    r.call("eks", "CreateCluster", params, "eks/cluster.go resourceClusterCreate")


@translates("aws:eks/nodeGroup:NodeGroup")
def _eks_node_group(r: Resource) -> None:
    """eks/node_group.go resourceNodeGroupCreate; pulumi-aws: AutoName("nodeGroupName", 255, "-")."""
    i = r.inputs
    scaling = i.obj("scalingConfig")
    template = i.obj("launchTemplate")
    params = {
        "clusterName": i.get("clusterName"),
        "nodegroupName": r.physical("nodeGroupName"),
        "nodeRole": i.get("nodeRoleArn"),
        "subnets": i.get("subnetIds"),
        "amiType": i.get("amiType"),
        "capacityType": i.get("capacityType"),
        "instanceTypes": i.get("instanceTypes"),
        "diskSize": i.get("diskSize"),
        "labels": i.get("labels"),
        "releaseVersion": i.get("releaseVersion"),
        "version": i.get("version"),
        "launchTemplate": None
        if template is None
        else {"id": template.get("id"), "name": template.get("name"), "version": template.get("version")},
        "scalingConfig": None
        if scaling is None
        else {
            "minSize": scaling.get("minSize"),
            "maxSize": scaling.get("maxSize"),
            "desiredSize": scaling.get("desiredSize"),
        },
        "taints": [{"key": t.get("key"), "value": t.get("value"), "effect": t.get("effect")} for t in i.objs("taints")]
        or None,
        "updateConfig": None
        if (update := i.obj("updateConfig")) is None
        else {
            "maxUnavailable": update.get("maxUnavailable"),
            "maxUnavailablePercentage": update.get("maxUnavailablePercentage"),
            "updateStrategy": update.get("updateStrategy"),
        },
        "tags": i.get("tags"),
    }
    r.call("eks", "CreateNodegroup", params, "eks/node_group.go resourceNodeGroupCreate")


@translates("aws:eks/addon:Addon")
def _eks_addon(r: Resource) -> None:
    i = r.inputs
    i.skip("preserve", reason="sent only to DeleteAddon")
    params = {
        "clusterName": i.get("clusterName"),
        "addonName": i.get("addonName"),
        "addonVersion": i.get("addonVersion"),
        "configurationValues": i.get("configurationValues"),
        "resolveConflicts": i.get("resolveConflictsOnCreate"),
        "serviceAccountRoleArn": i.get("serviceAccountRoleArn"),
        "podIdentityAssociations": [
            {"roleArn": a.get("roleArn"), "serviceAccount": a.get("serviceAccount")}
            for a in i.objs("podIdentityAssociations")
        ]
        or None,
        "tags": i.get("tags"),
    }
    i.skip("resolveConflictsOnUpdate", reason="sent only to UpdateAddon")
    r.call("eks", "CreateAddon", params, "eks/addon.go resourceAddonCreate")


@translates("aws:eks/podIdentityAssociation:PodIdentityAssociation")
def _eks_pod_identity_association(r: Resource) -> None:
    i = r.inputs
    params = {
        "clusterName": i.get("clusterName"),
        "namespace": i.get("namespace"),
        "serviceAccount": i.get("serviceAccount"),
        "roleArn": i.get("roleArn"),
        "targetRoleArn": i.get("targetRoleArn"),
        "disableSessionTags": i.get("disableSessionTags"),
        "tags": i.get("tags"),
    }
    r.call(
        "eks",
        "CreatePodIdentityAssociation",
        params,
        "eks/pod_identity_association.go Create (fwflex.Expand of the model into CreatePodIdentityAssociationInput)",
    )


@translates("aws:eks/accessEntry:AccessEntry")
def _eks_access_entry(r: Resource) -> None:
    i = r.inputs
    params = {
        "clusterName": i.get("clusterName"),
        "principalArn": i.get("principalArn"),
        "type": i.get("type"),
        "kubernetesGroups": i.get("kubernetesGroups"),
        "username": i.get("userName"),
        "tags": i.get("tags"),
    }
    r.call("eks", "CreateAccessEntry", params, "eks/access_entry.go resourceAccessEntryCreate")


@translates("aws:eks/accessPolicyAssociation:AccessPolicyAssociation")
def _eks_access_policy(r: Resource) -> None:
    i = r.inputs
    scope = i.obj("accessScope")
    params = {
        "clusterName": i.get("clusterName"),
        "principalArn": i.get("principalArn"),
        "policyArn": i.get("policyArn"),
        "accessScope": None if scope is None else {"type": scope.get("type"), "namespaces": scope.get("namespaces")},
    }
    r.call(
        "eks", "AssociateAccessPolicy", params, "eks/access_policy_association.go resourceAccessPolicyAssociationCreate"
    )


# ---------------------------------------------------------------------------------------------------------------
# FSx, EFS


@translates("aws:fsx/lustreFileSystem:LustreFileSystem")
def _lustre(r: Resource) -> None:
    """fsx/lustre_file_system.go resourceLustreFileSystemCreate: one subnet (subnet_ids), the Lustre settings in
    LustreConfiguration (metadata_configuration -> expandLustreMetadataCreateConfiguration)."""
    i = r.inputs
    subnets = i.get("subnetIds")
    metadata = i.obj("metadataConfiguration")
    params = {
        "FileSystemType": "LUSTRE",
        "StorageCapacity": i.get("storageCapacity"),
        "StorageType": i.get("storageType"),
        "SubnetIds": subnets if isinstance(subnets, list) else [subnets],
        "SecurityGroupIds": i.get("securityGroupIds"),
        "KmsKeyId": i.get("kmsKeyId"),
        "FileSystemTypeVersion": i.get("fileSystemTypeVersion"),
        "LustreConfiguration": {
            "DeploymentType": i.get("deploymentType"),
            "PerUnitStorageThroughput": i.get("perUnitStorageThroughput"),
            "DataCompressionType": i.get("dataCompressionType"),
            "EfaEnabled": i.get("efaEnabled"),
            "MetadataConfiguration": None
            if metadata is None
            else {"Mode": metadata.get("mode"), "Iops": metadata.get("iops")},
        },
        "Tags": tag_list(i.get("tags")),
    }
    r.call("fsx", "CreateFileSystem", params, "fsx/lustre_file_system.go resourceLustreFileSystemCreate")


@translates("aws:efs/fileSystem:FileSystem")
def _efs(r: Resource) -> None:
    """efs/file_system.go resourceFileSystemCreate; pulumi-aws: AutoName("creationToken", 255, "-")."""
    i = r.inputs
    params = {
        "CreationToken": r.physical("creationToken"),
        "Encrypted": i.get("encrypted"),
        "KmsKeyId": i.get("kmsKeyId"),
        "PerformanceMode": i.get("performanceMode"),
        "ThroughputMode": i.get("throughputMode"),
        "ProvisionedThroughputInMibps": i.get("provisionedThroughputInMibps"),
        "Tags": tag_list(i.get("tags")),
    }
    r.call("efs", "CreateFileSystem", params, "efs/file_system.go resourceFileSystemCreate")


@translates("aws:efs/mountTarget:MountTarget")
def _efs_mount_target(r: Resource) -> None:
    i = r.inputs
    params = {
        "FileSystemId": i.get("fileSystemId"),
        "SubnetId": i.get("subnetId"),
        "SecurityGroups": i.get("securityGroups"),
        "IpAddress": i.get("ipAddress"),
    }
    r.call("efs", "CreateMountTarget", params, "efs/mount_target.go resourceMountTargetCreate")


@translates("aws:efs/fileSystemPolicy:FileSystemPolicy")
def _efs_policy(r: Resource) -> None:
    i = r.inputs
    params = {
        "FileSystemId": i.get("fileSystemId"),
        "Policy": i.get("policy"),
        "BypassPolicyLockoutSafetyCheck": i.get("bypassPolicyLockoutSafetyCheck", False),
    }
    r.call("efs", "PutFileSystemPolicy", params, "efs/file_system_policy.go resourceFileSystemPolicyPut")


# ---------------------------------------------------------------------------------------------------------------
# KMS, Secrets Manager, SQS


@translates("aws:kms/key:Key")
def _kms_key(r: Resource) -> None:
    """kms/key.go resourceKeyCreate (KeyUsage and KeySpec: the schema defaults), then updateKeyRotationEnabled;
    deletion_window_in_days is ScheduleKeyDeletion's PendingWindowInDays when the key is destroyed."""
    i = r.inputs
    params = {
        "Description": i.get("description"),
        "KeyUsage": i.get("keyUsage", "ENCRYPT_DECRYPT"),
        "KeySpec": i.get("customerMasterKeySpec", "SYMMETRIC_DEFAULT"),
        "Policy": i.get("policy"),
        "MultiRegion": i.get("multiRegion", False),
        "BypassPolicyLockoutSafetyCheck": i.get("bypassPolicyLockoutSafetyCheck", False),
        "Tags": tag_list(i.get("tags"), "TagKey", "TagValue"),
    }
    r.call("kms", "CreateKey", params, "kms/key.go resourceKeyCreate")
    if i.get("enableKeyRotation"):
        params = {"KeyId": r.id, "RotationPeriodInDays": i.get("rotationPeriodInDays")}
        r.call("kms", "EnableKeyRotation", params, "kms/key.go updateKeyRotationEnabled")
    params = {"KeyId": r.id, "PendingWindowInDays": i.get("deletionWindowInDays", 30)}
    r.call("kms", "ScheduleKeyDeletion", params, "kms/key.go resourceKeyDelete", phase="delete")


@translates("aws:kms/alias:Alias")
def _kms_alias(r: Resource) -> None:
    i = r.inputs
    r.call(
        "kms",
        "CreateAlias",
        {"AliasName": r.physical(), "TargetKeyId": i.get("targetKeyId")},
        "kms/alias.go resourceAliasCreate",
    )


@translates("aws:secretsmanager/secret:Secret")
def _secret(r: Resource) -> None:
    """secretsmanager/secret.go resourceSecretCreate; recovery_window_in_days is DeleteSecret's when destroyed
    (0: ForceDeleteWithoutRecovery)."""
    i = r.inputs
    params = {
        "Name": r.physical(),
        "Description": i.get("description"),
        "KmsKeyId": i.get("kmsKeyId"),
        "Tags": tag_list(i.get("tags")),
    }
    r.call("secretsmanager", "CreateSecret", params, "secretsmanager/secret.go resourceSecretCreate")
    window = i.get("recoveryWindowInDays", 30)
    params = {
        "SecretId": r.id,
        **({"ForceDeleteWithoutRecovery": True} if window == 0 else {"RecoveryWindowInDays": window}),
    }
    r.call("secretsmanager", "DeleteSecret", params, "secretsmanager/secret.go resourceSecretDelete", phase="delete")


@translates("aws:secretsmanager/secretVersion:SecretVersion")
def _secret_version(r: Resource) -> None:
    i = r.inputs
    params = {
        "SecretId": i.get("secretId"),
        "SecretString": i.get("secretString"),
        "VersionStages": i.get("versionStages"),
    }
    r.call("secretsmanager", "PutSecretValue", params, "secretsmanager/secret_version.go resourceSecretVersionCreate")


@translates("aws:ssm/parameter:Parameter")
def _ssm_parameter(r: Resource) -> None:
    """ssm/parameter.go resourceParameterCreate: PutParameter with AllowedPattern as given ("" when unset), Overwrite
    false for a new resource, the value from insecure_value when set, and the tags with it (no Overwrite)."""
    i = r.inputs
    params = {
        "AllowedPattern": i.get("allowedPattern", ""),
        "Name": r.physical(maxlen=2048),
        "Overwrite": False,
        "Type": i.get("type"),
        "Value": i.get("insecureValue") or i.get("value"),
        "DataType": i.get("dataType"),
        "Description": i.get("description"),
        "Tier": i.get("tier"),
        "Tags": tag_list(i.get("tags")),
    }
    r.call("ssm", "PutParameter", params, "ssm/parameter.go resourceParameterCreate")


# SQS queue attributes the registered inputs set (queueAttributeMap in sqs/attribute_funcs.go; the schema's defaults
# for the attributes these stacks leave unset are not reproduced here).
_QUEUE_ATTRIBUTES = {
    "sqsManagedSseEnabled": "SqsManagedSseEnabled",
    "kmsMasterKeyId": "KmsMasterKeyId",
    "visibilityTimeoutSeconds": "VisibilityTimeout",
    "messageRetentionSeconds": "MessageRetentionPeriod",
}


@translates("aws:sqs/queue:Queue")
def _queue(r: Resource) -> None:
    """sqs/queue.go resourceQueueCreate: attributes as strings, tags as the queue's map. pulumi-aws names a queue
    with at most 80 characters (AutoNameWithCustomOptions, Maxlen 80)."""
    i = r.inputs
    attributes = {}
    for key, name in _QUEUE_ATTRIBUTES.items():
        if (value := i.get(key)) is not None:
            attributes[name] = str(value).lower() if isinstance(value, bool) else str(value)
    params = {"QueueName": r.physical(maxlen=80), "Attributes": attributes or None, "tags": i.get("tags")}
    r.call("sqs", "CreateQueue", params, "sqs/queue.go resourceQueueCreate")


# ---------------------------------------------------------------------------------------------------------------
# Budgets


@translates("aws:budgets/budget:Budget")
def _budget(r: Resource) -> None:
    """budgets/budget.go resourceBudgetCreate (expandBudgetUnmarshal: BudgetLimit from limit_amount/limit_unit,
    CostFilters from cost_filter name -> values; ResourceTags from tags), then one CreateNotification per notification
    with its EMAIL subscribers (resourceBudgetNotificationsCreate). The account is the caller's, known at deploy."""
    i = r.inputs
    account = "<resolved at deploy: the caller's account id>"
    budget = {
        "BudgetName": r.physical(maxlen=100),
        "BudgetType": i.get("budgetType"),
        "BudgetLimit": {"Amount": i.get("limitAmount"), "Unit": i.get("limitUnit")},
        "CostFilters": {f.get("name"): f.get("values") for f in i.objs("costFilters")} or None,
        "TimeUnit": i.get("timeUnit"),
    }
    params = {"AccountId": account, "Budget": budget, "ResourceTags": tag_list(i.get("tags"))}
    r.call("budgets", "CreateBudget", params, "budgets/budget.go resourceBudgetCreate")
    for n in i.objs("notifications"):
        notification = {
            "NotificationType": n.get("notificationType"),
            "ComparisonOperator": n.get("comparisonOperator"),
            "Threshold": n.get("threshold"),
            "ThresholdType": n.get("thresholdType"),
        }
        subscribers = [{"SubscriptionType": "EMAIL", "Address": a} for a in n.get("subscriberEmailAddresses") or []]
        params = {"AccountId": account, "BudgetName": budget["BudgetName"], "Notification": notification,
                  "Subscribers": subscribers}  # fmt: skip
        r.call("budgets", "CreateNotification", params, "budgets/budget.go resourceBudgetNotificationsCreate")


# --- slurm.accounting: RDS for MySQL (components/aws/accounting.py) -----------------------------------------------


@translates("aws:ec2/vpcIpv4CidrBlockAssociation:VpcIpv4CidrBlockAssociation")
def _vpc_cidr_block(r: Resource) -> None:
    i = r.inputs
    params = {"VpcId": i.get("vpcId"), "CidrBlock": i.get("cidrBlock")}
    r.call(
        "ec2",
        "AssociateVpcCidrBlock",
        params,
        "ec2/vpc_ipv4_cidr_block_association.go resourceVPCIPv4CIDRBlockAssociationCreate",
    )


@translates("aws:rds/subnetGroup:SubnetGroup")
def _db_subnet_group(r: Resource) -> None:
    """rds/subnet_group.go resourceSubnetGroupCreate; pulumi-aws autonames `name` lowercased."""
    i = r.inputs
    params = {
        "DBSubnetGroupName": r.physical().lower(),
        "DBSubnetGroupDescription": i.get("description"),
        "SubnetIds": i.get("subnetIds"),
        "Tags": tag_list(i.get("tags")),
    }
    r.call("rds", "CreateDBSubnetGroup", params, "rds/subnet_group.go resourceSubnetGroupCreate")


@translates("aws:rds/parameterGroup:ParameterGroup")
def _db_parameter_group(r: Resource) -> None:
    """rds/parameter_group.go resourceParameterGroupCreate, then ModifyDBParameterGroup with the parameters."""
    i = r.inputs
    name = r.physical().lower()
    params = {
        "DBParameterGroupName": name,
        "DBParameterGroupFamily": i.get("family"),
        "Description": i.get("description"),
        "Tags": tag_list(i.get("tags")),
    }
    r.call("rds", "CreateDBParameterGroup", params, "rds/parameter_group.go resourceParameterGroupCreate")
    parameters = [
        {"ParameterName": p.get("name"), "ParameterValue": p.get("value"), "ApplyMethod": p.get("applyMethod")}
        for p in i.objs("parameters")
    ]
    if parameters:
        r.call(
            "rds", "ModifyDBParameterGroup", {"DBParameterGroupName": name, "Parameters": parameters},
            "rds/parameter_group.go resourceParameterGroupUpdate",
        )  # fmt: skip


@translates("aws:rds/instance:Instance")
def _db_instance(r: Resource) -> None:
    """rds/instance.go resourceInstanceCreate (CreateDBInstance); skip_final_snapshot is DeleteDBInstance's."""
    i = r.inputs
    params = {
        "DBInstanceIdentifier": r.physical("identifier", maxlen=63).lower(),
        "DBInstanceClass": i.get("instanceClass"),
        "Engine": i.get("engine"),
        "EngineVersion": i.get("engineVersion"),
        "AllocatedStorage": i.get("allocatedStorage"),
        "StorageType": i.get("storageType"),
        "StorageEncrypted": i.get("storageEncrypted"),
        "KmsKeyId": i.get("kmsKeyId"),
        "DBName": i.get("dbName"),
        "MasterUsername": i.get("username"),
        "MasterUserPassword": i.get("password"),
        "Port": i.get("port"),
        "DBSubnetGroupName": i.get("dbSubnetGroupName"),
        "VpcSecurityGroupIds": i.get("vpcSecurityGroupIds"),
        "DBParameterGroupName": i.get("parameterGroupName"),
        "PubliclyAccessible": i.get("publiclyAccessible"),
        "MultiAZ": i.get("multiAz"),
        "BackupRetentionPeriod": i.get("backupRetentionPeriod"),
        "CopyTagsToSnapshot": i.get("copyTagsToSnapshot"),
        "DeletionProtection": i.get("deletionProtection"),
        "AutoMinorVersionUpgrade": i.get("autoMinorVersionUpgrade"),
        "Tags": tag_list(i.get("tags")),
    }
    r.call("rds", "CreateDBInstance", params, "rds/instance.go resourceInstanceCreate")
    delete = {"DBInstanceIdentifier": params["DBInstanceIdentifier"], "SkipFinalSnapshot": i.get("skipFinalSnapshot")}
    r.call("rds", "DeleteDBInstance", delete, "rds/instance.go resourceInstanceDelete", phase="delete")
