"""The shared filesystem (`storage.shared`): FSx for Lustre PERSISTENT_2 or EFS, in the node subnet.

Its own security group admits only the cluster: the Lustre ports (988, 1018-1023) or NFS (2049) from
the node security group and from itself (FSx servers talk to each other), plus all traffic between the
two groups for an EFA-enabled FSx (an EFA "requires a security group that allows all inbound and
outbound traffic to and from the security group itself and the security group of the clients"). The
node group gets the matching egress, so `egress: none` clusters still reach it. Encrypted at rest
(FSx persistent types always are, with the AWS managed key by default; EFS with `encrypted`), with the
cluster's customer-managed key when `encryption.key` is not provider.
`retain: true` sets `protect` and `retainOnDelete`: no destroy or replacement deletes the data.
Rule descriptions use only what EC2 accepts there (botocore `UserIdGroupPair.Description`: letters, digits, spaces and
`._-:/()#,@[]+=;{}!$*`; no apostrophe), which tests/test_conformance_aws.py checks.
EFS is encrypted in transit: the nodes mount through a local TLS tunnel (bootstrap/mounts_efs_tls.sh) and a file
system policy (catalog/storage/aws.yaml `fileSystemPolicy`, sources there) refuses every request not over TLS.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_aws as aws

from .. import resources
from ..layout.shared import Shared
from .naming import Context
from .network import Network


@dataclass(frozen=True)
class SharedFilesystem(resources.SharedFilesystem):
    security_group: aws.ec2.SecurityGroup | None


def _options(ctx: Context, shared: Shared) -> pulumi.ResourceOptions:
    return pulumi.ResourceOptions(parent=ctx.parent, protect=shared.retain, retain_on_delete=shared.retain)


# who a rule admits, in its description: the node group, or the filesystem's own group (FSx servers talk to each other)
_WHO = {"nodes": "the cluster nodes", "self": "the filesystem servers"}


def _rules(ctx: Context, net: Network, sg: aws.ec2.SecurityGroup, shared: Shared) -> None:
    name, child = ctx.name, ctx.child
    node_sg = net.security_group
    for protocol, low, high in shared.ports:
        ports = f"{low}" if low == high else f"{low}-{high}"
        for who, ref in (("nodes", node_sg), ("self", sg)):
            aws.vpc.SecurityGroupIngressRule(
                f"{name}-shared-in-{who}-{ports}",
                security_group_id=sg.id,
                referenced_security_group_id=ref.id,
                ip_protocol=protocol,
                from_port=low,
                to_port=high,
                description=f"{shared.kind} {ports} from {_WHO[who]}",
                opts=child,
            )
        for who, group, ref in (("shared", sg, node_sg), ("self", sg, sg), ("nodes", node_sg, sg)):
            aws.vpc.SecurityGroupEgressRule(
                f"{name}-shared-out-{who}-{ports}",
                security_group_id=group.id,
                referenced_security_group_id=ref.id,
                ip_protocol=protocol,
                from_port=low,
                to_port=high,
                description=f"{shared.kind} {ports} between the nodes and the shared filesystem",
                opts=child,
            )
    if shared.efa:
        for direction, rule in (("in", aws.vpc.SecurityGroupIngressRule), ("out", aws.vpc.SecurityGroupEgressRule)):
            for who, ref in (("nodes", node_sg), ("self", sg)):
                rule(
                    f"{name}-shared-efa-{direction}-{who}",
                    security_group_id=sg.id,
                    referenced_security_group_id=ref.id,
                    ip_protocol="-1",
                    description=f"EFA-enabled FSx: all traffic with {_WHO[who]}",
                    opts=child,
                )


def build_shared(ctx: Context, net: Network) -> SharedFilesystem | None:
    shared = ctx.layout.shared
    if shared is None:
        return None
    if shared.existing:
        return SharedFilesystem(None, shared.source_form, None)
    name, child = ctx.name, ctx.child
    sg = aws.ec2.SecurityGroup(
        f"{name}-shared-sg",
        vpc_id=net.vpc.id,
        description=f"gpu-cluster {ctx.layout.spec.name} shared filesystem (cluster only)",
        tags=ctx.tagged("shared-sg"),
        opts=child,
    )
    _rules(ctx, net, sg, shared)
    if shared.kind == "lustre":
        fs = aws.fsx.LustreFileSystem(
            f"{name}-shared",
            deployment_type="PERSISTENT_2",
            storage_type="SSD",
            storage_capacity=shared.size_gb,
            per_unit_storage_throughput=shared.throughput,
            # pulumi-aws 7.x types it as one string: "File systems currently support only one subnet"
            subnet_ids=net.subnet.id,
            security_group_ids=[sg.id],
            data_compression_type="LZ4",
            kms_key_id=ctx.kms_key,  # None: the AWS managed aws/fsx key
            file_system_type_version="2.15",
            efa_enabled=True if shared.efa else None,
            metadata_configuration=(
                aws.fsx.LustreFileSystemMetadataConfigurationArgs(mode="AUTOMATIC") if shared.efa else None
            ),
            tags=ctx.tagged("shared"),
            opts=_options(ctx, shared),
        )
        source = pulumi.Output.all(fs.dns_name, fs.mount_name).apply(
            lambda v: shared.source_form.format(dnsName=v[0], mountName=v[1])
        )
        return SharedFilesystem(fs, source, sg)
    efs = aws.efs.FileSystem(
        f"{name}-shared",
        encrypted=True,
        kms_key_id=ctx.kms_key,  # None: the AWS managed aws/elasticfilesystem key
        performance_mode="generalPurpose",
        throughput_mode="elastic",
        tags=ctx.tagged("shared"),
        opts=_options(ctx, shared),
    )
    aws.efs.MountTarget(
        f"{name}-shared-mt",
        file_system_id=efs.id,
        subnet_id=net.subnet.id,
        security_groups=[sg.id],
        opts=child,
    )
    statements = (shared.data or {}).get("fileSystemPolicy", {}).get("statements")
    if statements:
        aws.efs.FileSystemPolicy(
            f"{name}-shared-policy",
            file_system_id=efs.id,
            policy=efs.arn.apply(lambda arn: _policy(statements, arn)),
            opts=child,
        )
    source = efs.dns_name.apply(lambda dns: shared.source_form.format(dnsName=dns))
    return SharedFilesystem(efs, source, sg)


def _policy(statements: list[dict[str, Any]], arn: str) -> str:
    """The data's statements, each on this file system only."""
    return json.dumps({"Version": "2012-10-17", "Statement": [{**s, "Resource": arn} for s in statements]})
