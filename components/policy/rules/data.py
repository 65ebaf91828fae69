"""Rules a compliance profile turns on (default level: disabled, so stacks without a profile plan as before):
customer-managed keys, TLS where a minimum is set, shared filesystems protected from deletion."""

from __future__ import annotations

from collections.abc import Iterator

from ..model import CLUSTER_TYPE, CONFIG, Facts, Issue, Resource
from ..types import DATA_TYPES

ALI_NAS = "alicloud:nas/fileSystem:FileSystem"
# Alibaba's CPFS file system types: no key reaches them (catalog/storage/alicloud.yaml, the sources read)
CPFS_TYPES = ("cpfs", "cpfsse")


# Where each cloud's disks and filesystems name a customer-managed key (the provider SDKs' input names).
def key_missing(res: Resource) -> Iterator[str]:
    props, kind = res.props, res.type
    if kind == "aws:ec2/launchTemplate:LaunchTemplate":
        for mapping in props.get("blockDeviceMappings") or []:
            ebs = mapping.get("ebs")
            if ebs is not None and not ebs.get("kmsKeyId"):
                yield f"EBS volume {mapping.get('deviceName')} has no kmsKeyId"
    elif kind == "aws:ec2/instance:Instance" and ("launchTemplate" not in props or props.get("rootBlockDevice")):
        for disk in [props.get("rootBlockDevice") or {}, *(props.get("ebsBlockDevices") or [])]:
            if not disk.get("kmsKeyId"):
                yield "an EBS volume has no kmsKeyId"
    elif kind in (
        "aws:ebs/volume:Volume",
        "aws:efs/fileSystem:FileSystem",
        "aws:fsx/lustreFileSystem:LustreFileSystem",
    ):
        if not props.get("kmsKeyId"):
            yield "has no kmsKeyId (an AWS managed key)"
    elif kind == "aws:eks/nodeGroup:NodeGroup" and not props.get("launchTemplate"):
        yield "node disks take the account's default key (no launch template naming a kmsKeyId)"
    elif kind == "gcp:compute/instanceTemplate:InstanceTemplate":
        for i, disk in enumerate(props.get("disks") or []):
            # local SSD cannot take a customer-managed key (catalog/encryption/gcp.yaml notes.localSsd)
            if str(disk.get("type", "")).upper() != "SCRATCH" and not (disk.get("diskEncryptionKey") or {}).get(
                "kmsKeySelfLink"
            ):
                yield f"disk {i} has no diskEncryptionKey.kmsKeySelfLink"
    elif kind == "gcp:compute/instance:Instance":
        if not (props.get("bootDisk") or {}).get("kmsKeySelfLink"):
            yield "boot disk has no kmsKeySelfLink"
    elif kind == "gcp:filestore/instance:Instance" and not props.get("kmsKeyName"):
        yield "has no kmsKeyName (a Google-managed key)"
    elif kind == "gcp:lustre/instance:Instance" and not props.get("kmsKey"):
        yield "has no kmsKey (a Google-managed key)"
    elif kind == "gcp:container/nodePool:NodePool" and not (props.get("nodeConfig") or {}).get("bootDiskKmsKey"):
        yield "node boot disks have no nodeConfig.bootDiskKmsKey"
    elif kind in ("azure-native:compute:VirtualMachineScaleSet", "azure-native:compute:VirtualMachine"):
        storage = (props.get("virtualMachineProfile") or props).get("storageProfile") or {}
        disks = [storage.get("osDisk") or {}, *(storage.get("dataDisks") or [])]
        if any(not ((d.get("managedDisk") or {}).get("diskEncryptionSet") or {}).get("id") for d in disks):
            yield "a managed disk has no diskEncryptionSet (a platform-managed key)"
    elif kind == "azure-native:containerservice:ManagedCluster" and not props.get("diskEncryptionSetID"):
        yield "node disks have no diskEncryptionSetID (a platform-managed key)"
    elif kind == "azure-native:storagecache:AmlFilesystem" and not (props.get("encryptionSettings") or {}).get(
        "keyEncryptionKey"
    ):
        yield "has no encryptionSettings.keyEncryptionKey (a platform-managed key)"
    elif (
        kind == "azure-native:storage:StorageAccount"
        and str((props.get("encryption") or {}).get("keySource", "Microsoft.Storage")) != "Microsoft.Keyvault"
    ):
        yield "encrypts with a Microsoft-managed key (encryption.keySource is not Microsoft.Keyvault)"
    elif kind in ("alicloud:ecs/instance:Instance", "alicloud:ess/scalingConfiguration:ScalingConfiguration"):
        if not props.get("systemDiskKmsKeyId"):
            yield "system disk has no systemDiskKmsKeyId"
        yield from ("a data disk has no kmsKeyId" for d in props.get("dataDisks") or [] if not d.get("kmsKeyId"))
    elif kind == "alicloud:cs/nodePool:NodePool":
        if not props.get("systemDiskKmsKey"):
            yield "system disk has no systemDiskKmsKey"
        yield from ("a data disk has no kmsKeyId" for d in props.get("dataDisks") or [] if not d.get("kmsKeyId"))
    elif kind == ALI_NAS and props.get("fileSystemType") in CPFS_TYPES:
        yield "is a CPFS, which CreateFileSystem puts on no KMS key (EncryptType 1 and 2: standard and extreme only)"
    elif kind == ALI_NAS and (props.get("encryptType") != 2 or not props.get("kmsKeyId")):
        yield "is not encrypted with a KMS key of the account (encryptType is not 2 with a kmsKeyId)"
    elif kind == "huaweicloud:Ecs/instance:Instance":
        # every EVS disk takes the cluster's DEW key (capabilities/huaweicloud.yaml encryption)
        if not props.get("systemDiskKmsKeyId"):
            yield "system disk has no systemDiskKmsKeyId"
        yield from ("a data disk has no kmsKeyId" for d in props.get("dataDisks") or [] if not d.get("kmsKeyId"))
    elif kind == "huaweicloud:As/configuration:Configuration":
        # an AS configuration encrypts data disks only (kms_id); its system disk takes no key (capabilities/
        # huaweicloud.yaml asGroup.systemDiskEncrypted: the plan warns of it)
        for disk in (props.get("instanceConfig") or {}).get("disks") or []:
            if disk.get("diskType") == "SYS":
                yield "the system disk takes no key (an AS configuration cannot encrypt one)"
            elif not disk.get("kmsId"):
                yield "a data disk has no kmsId"
    elif kind == "huaweicloud:Sfs/turbo:Turbo" and not props.get("cryptKeyId"):
        yield "is not encrypted with a DEW key (no cryptKeyId)"
    elif kind in ("tencentcloud:Instance/instance:Instance", "tencentcloud:As/scalingConfig:ScalingConfig"):
        # the data disks take the cluster's KMS key; tencentcloud-iac-pulumi 0.2.3 has no system-disk key argument
        # (capabilities/tencentcloud.yaml encryption.systemDiskNote: the plan warns of it), so it is not checked
        yield from ("a data disk has no kmsKeyId" for d in props.get("dataDisks") or [] if not d.get("kmsKeyId"))
    elif kind == "tencentcloud:Kubernetes/nodePool:NodePool":
        disks = (props.get("autoScalingConfig") or {}).get("dataDisks") or []
        yield from ("a data disk has no kmsKeyId" for d in disks if not d.get("kmsKeyId"))


# Resources encryption.key does not reach (the key is set, the resource cannot take it): the fix names what the user
# can change instead. General-purpose NAS takes the cluster's key (capabilities/alicloud.yaml encryption.nas);
# Alibaba's CPFS takes none and is not built: a CPFS in a stack the pack judges is fixed by kind nfs, not by the key.
KEY_UNREACHABLE_FIX: dict[str, str] = {
    # tencentcloud-iac-pulumi 0.2.3 NodePoolAutoScalingConfigDataDiskArgs: encrypt, but no KMS key
    "tencentcloud:Kubernetes/nodePool:NodePool": f"set {CONFIG}.storage.scratch none (a TKE pool's data disk takes "
    "no KMS key)",
    "huaweicloud:As/configuration:Configuration": f"set {CONFIG}.nodeGroup instances (an ECS instance's system disk "
    "takes the cluster's DEW key)",
}


def customer_managed_keys(res: Resource, facts: Facts) -> Iterator[str | Issue]:
    if res.type == ALI_NAS and res.props.get("fileSystemType") in CPFS_TYPES:
        fix = f"set {CONFIG}.storage.shared.kind nfs (General-purpose NAS takes the cluster's key; CPFS takes none)"
        for message in key_missing(res):
            yield Issue(message, "are CPFS, on no customer key", "is a CPFS, on no customer key", fix)
        return
    fix = KEY_UNREACHABLE_FIX.get(res.type, f"set {CONFIG}.encryption.key auto")
    for message in key_missing(res):
        yield Issue(message, "use a provider-managed key", "uses a provider-managed key", fix)


def in_transit(res: Resource, facts: Facts) -> Iterator[str | Issue]:
    """TLS 1.2 or later where the resource takes a minimum (the endpoints the nodes reach beyond themselves)."""
    props, kind = res.props, res.type
    if kind == "azure-native:storage:StorageAccount" and props.get("minimumTlsVersion") not in ("TLS1_2", "TLS1_3"):
        yield f"accepts TLS below 1.2 (minimumTlsVersion {props.get('minimumTlsVersion')!r})"
    if kind in facts.plain_transit:
        yield "accepts NFS without TLS: no file system policy denies requests where aws:SecureTransport is false"


def deletion_protection(res: Resource, facts: Facts) -> Iterator[str | Issue]:
    if res.type in DATA_TYPES and not res.protect:
        yield Issue(
            "is deleted with the stack (not protected)",
            "are deleted with the stack (not protected)",
            "is deleted with the stack (not protected)",
            f"set {CONFIG}.storage.shared.retain true",
        )


# The trail a stack builds, per cloud: what it is, and where mlps3 delivers it.
TRAILS = {
    "alicloud": ("ActionTrail trail", "ActionTrail alone keeps 90 days", "the trail to an SLS project"),
    "tencentcloud": ("CloudAudit tracking set", "none delivers them to a log store", "the tracking set to a CLS topic"),
}


def audit_trail(res: Resource, facts: Facts) -> Iterator[str | Issue]:
    """Alibaba and Tencent: the account's API events go to a trail that keeps them; on the other clouds the audit
    trail is the account's, outside a cluster stack (profiles.yaml)."""
    trail = TRAILS.get(str(facts.cloud))
    if res.type == CLUSTER_TYPE and trail is not None and not facts.audit_trail:
        what, why, built = trail
        yield Issue(
            f"keeps no {what} of the account's API events ({why})",
            fix=f"set {CONFIG}.compliance mlps3 (the stack then builds {built})",
        )
