"""GCP customer-managed keys: the cluster's Cloud KMS key ring and key (`encryption.key: auto`) or the key named,
and its Encrypter/Decrypter grants to the service agents that encrypt the disks and filesystems with it
(decisions in `components.layout.gcp.encryption`, planned in `plan()`: `GcpLayout.encryption`)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pulumi
import pulumi_gcp as gcp

from ..layout.gcp import GcpEncryption, GcpLayout
from ..resources import invoke_options


@dataclass
class Key:
    """The key the stack's disks and filesystems name, and what must exist before a resource may use it."""

    id: pulumi.Input[str]  # projects/P/locations/L/keyRings/R/cryptoKeys/K
    grants: list[gcp.kms.CryptoKeyIAMMember] = field(default_factory=list)
    key: gcp.kms.CryptoKey | None = None  # auto only
    ring: gcp.kms.KeyRing | None = None

    def after(self, opts: pulumi.ResourceOptions) -> pulumi.ResourceOptions:
        """`opts` plus a dependency on the grants: a disk or filesystem made before them fails to use the key."""
        return pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=list(self.grants)))

    def output(self, enc: GcpEncryption) -> dict[str, object]:
        return {
            "key": self.id,
            "created": enc.auto,
            "rotationPeriod": enc.rotation_period if enc.auto else None,
            "grantedTo": [who for who, _ in enc.agents],
        }


def build_encryption(name: str, layout: GcpLayout, parent: pulumi.Resource) -> Key | None:
    enc = layout.encryption
    if enc is None:
        return None
    for message in enc.notes:
        pulumi.log.warn(message, resource=parent)
    child = pulumi.ResourceOptions(parent=parent)
    project = layout.project or None
    key_id: pulumi.Input[str]
    ring = key = None
    if enc.auto:
        # Destroying the key destroys every disk and filesystem encrypted with it: protected, and kept in GCP when
        # the stack forgets it (GCP never deletes key rings anyway). No names: Pulumi's autonaming keeps a stack
        # destroyed and created again clear of the ring and key it left behind.
        kept = pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(protect=True, retain_on_delete=True))
        ring = gcp.kms.KeyRing(f"{name}-keyring", location=enc.location, project=project, opts=kept)
        key = gcp.kms.CryptoKey(
            f"{name}-key",
            key_ring=ring.id,
            purpose=enc.purpose,
            rotation_period=enc.rotation_period,
            destroy_scheduled_duration=enc.destroy_scheduled_duration,
            labels=dict(layout.labels),
            opts=kept,
        )
        key_id = key.id
    else:
        assert enc.key_name is not None
        key_id = enc.key_name
    number = gcp.organizations.get_project_output(project_id=project, opts=invoke_options(parent)).number
    grants = [
        gcp.kms.CryptoKeyIAMMember(
            f"{name}-key-{who}",
            crypto_key_id=key_id,
            role=enc.role,
            member=number.apply(lambda n, member=member: f"serviceAccount:{member.format(projectNumber=n)}"),
            opts=child,
        )
        for who, member in enc.agents
    ]
    return Key(key_id, grants, key, ring)
