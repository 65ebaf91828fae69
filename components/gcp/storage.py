"""The shared filesystem (`storage.shared`): Google Cloud Managed Lustre on the host VPC.

Managed Lustre reaches the VPC through private services access (Cluster Toolkit's managed-lustre module
requires it): a VPC_PEERING range on the host VPC and the servicenetworking connection. Nothing is opened:
the nodes open the connections (TCP 988) and GCP firewalls are stateful. Encrypted at rest with
Google-managed keys (the service default). `retain: true` sets `protect` and `retainOnDelete` on the
instance. With `network.existing` the VPC is not ours: its private services access must already exist.
"""

from __future__ import annotations

import pulumi
import pulumi_gcp as gcp

from ..layout.gcp import GcpLayout
from ..resources import SharedFilesystem
from .encryption import Key
from .network import Network

PSA_SERVICE = "servicenetworking.googleapis.com"
FILESYSTEM = "shared"  # the Lustre fsname: "eight characters or less ... letters and numbers" (pulumi-gcp)


def build_shared(
    name: str, layout: GcpLayout, net: Network, child: pulumi.ResourceOptions, key: Key | None = None
) -> SharedFilesystem | None:
    shared = layout.shared
    if shared is None:
        return None
    if shared.existing:
        return SharedFilesystem(None, shared.source_form)
    spec = layout.spec
    host = net.host
    if shared.kind == "nfs":
        return _filestore(name, layout, net, child, key)
    depends: list[pulumi.Resource] = []
    if isinstance(host, gcp.compute.Network):  # our VPC: give it private services access
        prefix = int((shared.data or {}).get("psa", {}).get("prefixLength", 24))
        psa = gcp.compute.GlobalAddress(
            f"{name}-shared-psa",
            name=f"{spec.name}-shared-psa",
            purpose="VPC_PEERING",
            address_type="INTERNAL",
            prefix_length=prefix,
            network=host.id,
            description=f"gpu-cluster {spec.name}: private services access for Managed Lustre",
            opts=child,
        )
        depends.append(
            gcp.servicenetworking.Connection(
                f"{name}-shared-psa-connection",
                network=host.id,
                service=PSA_SERVICE,
                reserved_peering_ranges=[psa.name],
                opts=child,
            )
        )
    assert shared.size_gb is not None
    fs = gcp.lustre.Instance(
        f"{name}-shared",
        instance_id=f"{spec.name}-shared",
        location=layout.zone,  # "For Google Cloud Managed Lustre instances, locations map to zones"
        filesystem=FILESYSTEM,
        capacity_gib=str(shared.size_gb),
        per_unit_storage_throughput=str(shared.throughput),
        network=host.id,
        labels=dict(layout.labels),
        description=f"gpu-cluster {spec.name} shared filesystem",
        kms_key=key.id if key else None,  # CMEK: file data and metadata (the key in the instance's region)
        opts=pulumi.ResourceOptions.merge(
            child,
            pulumi.ResourceOptions(
                protect=shared.retain,
                retain_on_delete=shared.retain,
                depends_on=[*depends, *(key.grants if key else [])],
            ),
        ),
    )
    source = fs.mount_point.apply(lambda point: shared.source_form.format(mountPoint=point))
    return SharedFilesystem(fs, source)


def _filestore(
    name: str, layout: GcpLayout, net: Network, child: pulumi.ResourceOptions, key: Key | None = None
) -> SharedFilesystem:
    """Filestore Zonal in the nodes' zone, peered to the host VPC (DIRECT_PEERING, as Cluster Toolkit connects it)."""
    shared, spec, host = layout.shared, layout.spec, net.host
    assert shared is not None and shared.size_gb is not None
    fs = gcp.filestore.Instance(
        f"{name}-shared",
        name=f"{spec.name}-shared",
        location=layout.zone,
        tier="ZONAL",
        file_shares=gcp.filestore.InstanceFileSharesArgs(capacity_gb=shared.size_gb, name=FILESYSTEM),
        networks=[
            gcp.filestore.InstanceNetworkArgs(
                network=host.name if isinstance(host, gcp.compute.Network) else host.id,
                modes=["MODE_IPV4"],
                connect_mode="DIRECT_PEERING",
            )
        ],
        labels=dict(layout.labels),
        description=f"gpu-cluster {spec.name} shared filesystem",
        kms_key_name=key.id if key else None,  # CMEK (the key in the instance's region)
        opts=pulumi.ResourceOptions.merge(
            child,
            pulumi.ResourceOptions(
                protect=shared.retain, retain_on_delete=shared.retain, depends_on=key.grants if key else None
            ),
        ),
    )
    source = fs.networks.apply(lambda nets: shared.source_form.format(ipAddress=nets[0].ip_addresses[0]))
    return SharedFilesystem(fs, source)
