"""Node rules: encrypted disks, how one logs in, spot only where asked, the metadata service."""

from __future__ import annotations

from collections.abc import Iterator

from ..model import CONFIG, Facts, Issue, Resource, find, truthy
from ..types import NODE_TYPES


def encrypted_disks(res: Resource, facts: Facts) -> Iterator[str]:
    # Azure managed disks and GCP persistent disks are always encrypted at rest with
    # platform-managed keys (server-side encryption cannot be turned off), so only AWS EBS
    # and Alibaba ESSD, where encryption is a per-disk choice, are checked; so AKS agent pools and GKE
    # node pools pass, EKS node groups through their launch template, ACK node pools by their own flags.
    props, kind = res.props, res.type
    if kind == "aws:ec2/launchTemplate:LaunchTemplate":
        for mapping in props.get("blockDeviceMappings") or []:
            ebs = mapping.get("ebs")
            if ebs is not None and not truthy(ebs.get("encrypted")):
                yield f"EBS volume {mapping.get('deviceName')} is not encrypted"
    elif kind == "aws:ec2/instance:Instance":
        disks = [props.get("rootBlockDevice") or {}, *(props.get("ebsBlockDevices") or [])]
        if "launchTemplate" not in props or props.get("rootBlockDevice"):
            yield from ("an EBS volume is not encrypted" for d in disks if d and not truthy(d.get("encrypted")))
    elif kind == "aws:ebs/volume:Volume" and not truthy(props.get("encrypted")):
        yield "EBS volume is not encrypted"
    elif kind == "aws:eks/nodeGroup:NodeGroup" and not props.get("launchTemplate"):
        # without a launch template, EKS builds the nodes' volume itself (diskSize) and nothing here
        # asks for encryption: the nodes' disks are encrypted only if the account's EBS default is
        yield "node disks are not encrypted (no launch template with encrypted EBS volumes)"
    elif kind in (
        "alicloud:ecs/instance:Instance",
        "alicloud:ess/scalingConfiguration:ScalingConfiguration",
        "alicloud:cs/nodePool:NodePool",
    ):
        if not truthy(props.get("systemDiskEncrypted")):
            yield "system disk is not encrypted"
        for disk in props.get("dataDisks") or []:
            if not truthy(disk.get("encrypted")):
                yield f"data disk {disk.get('name') or disk.get('device') or ''} is not encrypted".replace("  ", " ")
    elif kind == "alicloud:ecs/ecsDisk:EcsDisk" and not truthy(props.get("encrypted")):
        yield "disk is not encrypted"
    elif kind == "tencentcloud:Instance/instance:Instance":
        # tencentcloud-iac-pulumi 0.2.3 takes no system-disk encryption flag: data disks are checked
        for disk in props.get("dataDisks") or []:
            if not truthy(disk.get("encrypt")):
                yield f"data disk {disk.get('dataDiskName') or ''} is not encrypted".replace("  ", " ")
    elif kind == "tencentcloud:As/scalingConfig:ScalingConfig":
        # as_.ScalingConfigDataDiskArgs has no encrypt argument: any data disk of a launch configuration is plain
        yield from ("a launch configuration data disk cannot be encrypted" for _ in props.get("dataDisks") or [])
    elif kind == "huaweicloud:Ecs/instance:Instance":
        # an EVS disk is encrypted only with a KMS key id (pulumi-huaweicloud 0.0.12 ecs.Instance
        # system_disk_kms_key_id, InstanceDataDiskArgs kms_key_id)
        if not props.get("systemDiskKmsKeyId"):
            yield "system disk is not encrypted (no systemDiskKmsKeyId)"
        yield from (
            "a data disk is not encrypted (no kmsKeyId)" for d in props.get("dataDisks") or [] if not d.get("kmsKeyId")
        )
    elif kind == "huaweicloud:As/configuration:Configuration":
        # ConfigurationInstanceConfigDiskArgs kms_id encrypts a DATA disk; no argument encrypts the system disk (the
        # plan warns of it, capabilities/huaweicloud.yaml asGroup.systemDiskEncrypted), so data disks are checked
        disks = (props.get("instanceConfig") or {}).get("disks") or []
        yield from (
            "a data disk is not encrypted (no kmsId)"
            for d in disks
            if d.get("diskType") != "SYS" and not d.get("kmsId")
        )


def node_login(res: Resource, facts: Facts) -> Iterator[str]:
    props, kind = res.props, res.type
    if kind in ("aws:ec2/launchTemplate:LaunchTemplate", "aws:ec2/instance:Instance"):
        if "launchTemplate" in props and kind == "aws:ec2/instance:Instance":
            return  # the template carries the metadata options
        if (props.get("metadataOptions") or {}).get("httpTokens") != "required":
            yield "IMDSv2 is not required (metadataOptions.httpTokens must be 'required')"
    elif kind in ("azure-native:compute:VirtualMachineScaleSet", "azure-native:compute:VirtualMachine"):
        if kind.endswith("VirtualMachineScaleSet") and "virtualMachineProfile" not in props:
            return  # a Flexible scale set without a VM profile defines no VM (elastic Slurm partitions' VMs join it)
        if not any(v is True for v in find(props, {"disablePasswordAuthentication"})):
            yield "password authentication is not disabled (linuxConfiguration.disablePasswordAuthentication)"
        if any(v for v in find(props, {"adminPassword"})):
            yield "sets an admin password"
    elif kind in ("gcp:compute/instance:Instance", "gcp:compute/instanceTemplate:InstanceTemplate"):
        metadata = props.get("metadata") or {}
        if str(metadata.get("enable-oslogin", "")).upper() != "TRUE":
            yield "OS Login is not enabled (metadata enable-oslogin=TRUE)"
        if str(metadata.get("block-project-ssh-keys", "")).upper() != "TRUE":
            yield "project-wide SSH keys are not blocked (metadata block-project-ssh-keys=TRUE)"
    elif (
        (
            kind in ("alicloud:ecs/instance:Instance", "alicloud:ess/scalingConfiguration:ScalingConfiguration")
            and (props.get("password") or props.get("kmsEncryptedPassword") or truthy(props.get("passwordInherit")))
        )
        or (
            kind in ("tencentcloud:Instance/instance:Instance", "tencentcloud:As/scalingConfig:ScalingConfig")
            and props.get("password")
        )
        or (kind == "huaweicloud:Ecs/instance:Instance" and props.get("adminPass"))
    ):
        yield "allows password login"


def is_spot(res: Resource) -> bool:
    props = res.props
    if any(v == "spot" for v in find(props, {"marketType"})):
        return True
    policy = props.get("mixedInstancesPolicy") or {}
    dist = policy.get("instancesDistribution") or {}
    if policy and dist.get("onDemandPercentageAboveBaseCapacity", 100) < 100:
        return True
    if any(str(v).lower() == "spot" for v in find(props, {"priority", "provisioningModel"})):
        return True
    if any(v is True for v in find(props, {"preemptible"})):
        return True
    # EKS node groups: capacityType SPOT; AKS agent pools: scaleSetPriority Spot; GKE: nodeConfig.spot
    if any(str(v).lower() == "spot" for v in find(props, {"capacityType", "scaleSetPriority"})):
        return True
    if res.type == "gcp:container/nodePool:NodePool" and truthy((props.get("nodeConfig") or {}).get("spot")):
        return True
    if any(v == "SPOTPAID" for v in find(props, {"instanceChargeType"})):
        return True
    if res.type == "huaweicloud:Ecs/instance:Instance" and props.get("chargingMode") == "spot":
        return True
    return any(v not in (None, "", "NoSpot") for v in find(props, {"spotStrategy"}))


def spot_nodes(res: Resource, facts: Facts) -> Iterator[str | Issue]:
    if res.type not in NODE_TYPES or not is_spot(res):
        return
    if not facts.allow_spot:
        yield Issue(
            "runs spot nodes, which this policy does not allow (spot-nodes.allowSpot=false)",
            "run spot nodes, which this policy does not allow (spot-nodes.allowSpot=false)",
            "runs spot nodes, which this policy does not allow (spot-nodes.allowSpot=false)",
            f"set {CONFIG}.spot to false",
        )
    elif not facts.spot:
        yield "runs spot nodes although the stack did not ask for spot"


ALICLOUD_TOKEN_ARGUMENT = ("alicloud:ecs/instance:Instance", "alicloud:ecs/ecsLaunchTemplate:EcsLaunchTemplate")


def metadata_protection(res: Resource, facts: Facts) -> Iterator[str | Issue]:
    """The node's credentials in the metadata service, where a setting protects them beyond node-login's IMDSv2."""
    props, kind = res.props, res.type
    if kind in ALICLOUD_TOKEN_ARGUMENT and props.get("httpTokens") != "required":
        # pulumi-alicloud ecs.Instance / ecs.EcsLaunchTemplate http_tokens: "required" is the metadata
        # security-hardening (token) mode
        yield "metadata access is not in security-hardening mode (httpTokens must be 'required')"
    elif kind == "alicloud:cs/nodePool:NodePool":
        if (props.get("instanceMetadataOptions") or {}).get("httpTokens") != "required":
            yield "metadata access is not in security-hardening mode (instanceMetadataOptions.httpTokens)"
    elif kind == "alicloud:ess/scalingConfiguration:ScalingConfiguration":
        # pulumi-alicloud 4.0.0 ess.ScalingConfiguration has http_endpoint and no http_tokens: nothing to set
        yield Issue(
            "answers metadata requests without a token (an ESS scaling configuration has no http_tokens in "
            "pulumi-alicloud 4.0.0)",
            "answer metadata requests without a token (an ESS scaling configuration has no http_tokens in "
            "pulumi-alicloud 4.0.0)",
            "answers metadata requests without a token (an ESS scaling configuration has no http_tokens in "
            "pulumi-alicloud 4.0.0)",
            f"set {CONFIG}.nodeGroup to instances (ECS instances take the token-only mode)",
        )
    elif kind == "gcp:container/nodePool:NodePool":
        mode = ((props.get("nodeConfig") or {}).get("workloadMetadataConfig") or {}).get("mode")
        if mode != "GKE_METADATA":  # Workload Identity's metadata server hides the node's service account
            yield "pods can read the node's metadata (nodeConfig.workloadMetadataConfig.mode is not GKE_METADATA)"
