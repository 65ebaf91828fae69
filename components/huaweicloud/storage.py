"""The shared filesystem (`storage.shared`): an SFS Turbo filesystem in the nodes' subnet, on the cluster's DEW key.

Who may mount is a security group: Huawei advises "an independent security group for an SFS Turbo file system", so
the filesystem gets its own, created without Huawei's default rules, admitting the NFS ports of the catalog
(catalog/storage/huaweicloud.yaml `ports`) from the nodes' group only. Encrypted with the key of the EVS disks
(`crypt_key_id`). `retain: true` sets `protect` and `retainOnDelete` on the filesystem.
"""

from __future__ import annotations

from collections.abc import Mapping

import pulumi
import pulumi_huaweicloud as huaweicloud

from ..layout.huaweicloud import HuaweiLayout
from ..resources import SharedFilesystem
from .network import Network, secgroup_rule


def build_shared(
    parent: pulumi.Resource,
    name: str,
    layout: HuaweiLayout,
    net: Network,
    kms_key_id: pulumi.Input[str],
    tags: Mapping[str, str],
) -> SharedFilesystem | None:
    shared = layout.shared
    if shared is None:
        return None
    if shared.existing:
        return SharedFilesystem(None, shared.source_form)
    spec = layout.spec
    sg = huaweicloud.vpc.Secgroup(
        f"{name}-shared-sg",
        name=f"{spec.name}-shared",
        description=f"gpu-cluster {spec.name} shared filesystem: NFS from the nodes only",
        delete_default_rules=True,
        opts=pulumi.ResourceOptions(parent=parent),
    )
    for protocol, low, high in shared.ports:
        assert protocol == "tcp"  # secgroup_rule opens TCP (the catalog's NFS ports are TCP)
        ports = str(low) if low == high else f"{low}-{high}"
        nodes = net.security_group.id
        secgroup_rule(parent, f"{name}-shared-nfs-{low}", sg, "NFS from the nodes", ports=ports, remote_group=nodes)
    assert shared.size_gb is not None  # SFS Turbo has a provisioned size (catalog sizes)
    fs = huaweicloud.sfs.Turbo(
        f"{name}-shared",
        name=f"{spec.name}-shared",
        size=shared.size_gb,
        share_proto="NFS",
        share_type=str(shared.data["shareType"]),
        vpc_id=net.vpc.id,
        subnet_id=net.subnet.id,
        security_group_id=sg.id,
        availability_zone=net.zone,
        crypt_key_id=kms_key_id,
        tags={**tags, "Name": f"{spec.name}-shared"},
        opts=pulumi.ResourceOptions(parent=parent, protect=shared.retain, retain_on_delete=shared.retain),
    )
    source = fs.export_location.apply(lambda where: shared.source_form.format(exportLocation=where))
    return SharedFilesystem(fs, source)
