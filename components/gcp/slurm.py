"""`scheduler: slurm` on GCP: the MUNGE key's secret and the head node (layout: `GcpLayout.slurm`).

- MUNGE key: `random.RandomBytes` (a secret output) as the payload of a Secret Manager secret replicated in the
  cluster's region only; the nodes' service account holds `roles/secretmanager.secretAccessor` on exactly that
  secret (a `SecretIamMember`, not a project grant). The head, the GPU nodes and the login node share that service
  account, so one grant covers all three; the key is in no startup script, input or output.
- The GPU nodes' Slurm configuration (nodes.conf): a project metadata item the head reads every minute from its
  metadata server, updated in place: growing or changing the GPU nodes never changes the head's startup script.
- Head node: a private VM (no external IP) in the host subnet running slurmctld, Shielded, OS Login.
- No firewall rule of its own: the host VPC's internal rule already admits every port between the head, the
  GPU nodes and the login node (all in the host subnet), and nothing from outside.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_gcp as gcp
import pulumi_random as random

from ..bootstrap.mounts import SOURCE_PLACEHOLDER
from ..bootstrap.slurm_conf import HEAD_PLACEHOLDER
from ..layout.gcp import GcpLayout, GcpSlurm
from ..layout.gcp.labels import label_value
from ..resources import fill
from .encryption import Key
from .identity import Identity
from .network import Network


@dataclass(frozen=True)
class SlurmHead:
    plan: GcpSlurm
    instance: gcp.compute.Instance
    secret: gcp.secretmanager.Secret
    grant: gcp.secretmanager.SecretIamMember
    conf: gcp.compute.ProjectMetadataItem

    @property
    def address(self) -> pulumi.Output[str]:
        address: pulumi.Output[str] = self.instance.network_interfaces.apply(lambda nics: nics[0].network_ip)
        return address


def _member(identity: Identity) -> pulumi.Input[str]:
    if identity.account is not None:
        member: pulumi.Input[str] = identity.account.member
        return member
    # identity.existing: the grant is on the secret, so an account the cluster does not own can hold it too
    return pulumi.Output.from_input(identity.email).apply(lambda email: f"serviceAccount:{email}")


def _munge_secret(
    name: str, layout: GcpLayout, plan: GcpSlurm, identity: Identity, child: pulumi.ResourceOptions
) -> tuple[gcp.secretmanager.Secret, gcp.secretmanager.SecretVersion, gcp.secretmanager.SecretIamMember]:
    spec = layout.spec
    key = random.RandomBytes(f"{name}-munge-key-bytes", length=plan.key_bytes, opts=child)
    secret = gcp.secretmanager.Secret(
        f"{name}-munge-key",
        secret_id=plan.secret_id,
        project=layout.project or None,
        replication=gcp.secretmanager.SecretReplicationArgs(
            user_managed=gcp.secretmanager.SecretReplicationUserManagedArgs(
                replicas=[gcp.secretmanager.SecretReplicationUserManagedReplicaArgs(location=spec.region)]
            )
        ),
        labels={**layout.labels, "gpu-cluster_role": "munge-key"},
        opts=child,
    )
    version = gcp.secretmanager.SecretVersion(
        f"{name}-munge-key-version",
        secret=secret.id,
        # the raw bytes, sent as base64 and kept as bytes: the payload the hook reads is the key, base64
        secret_data=key.base64,  # a secret output of RandomBytes (additional_secret_outputs)
        is_secret_data_base64=True,
        opts=child,
    )
    grant = gcp.secretmanager.SecretIamMember(
        f"{name}-munge-key-reader",
        secret_id=secret.id,
        project=layout.project or None,
        role=plan.secret_role,
        member=_member(identity),
        opts=child,
    )
    return secret, version, grant


def build_head(
    name: str,
    layout: GcpLayout,
    net: Network,
    identity: Identity,
    child: pulumi.ResourceOptions,
    mount_source: pulumi.Input[str] | None = None,
    key: Key | None = None,  # encryption.key not provider: the boot disk's CMEK
) -> SlurmHead | None:
    plan = layout.slurm
    if plan is None:
        return None
    secret, version, grant = _munge_secret(name, layout, plan, identity, child)
    conf = gcp.compute.ProjectMetadataItem(
        f"{name}-slurm-compute-conf",
        key=plan.conf_key,
        value=plan.layout.compute_config,
        project=layout.project or None,
        opts=child,
    )
    labels = {**layout.labels, "gpu-cluster_role": "slurm-head"}
    metadata: dict[str, pulumi.Input[str]] = {
        k: v for k, v in layout.metadata.items() if k not in ("startup-script", "shutdown-script")
    }  # the GPU nodes' bootstrap and drain
    metadata["startup-script"] = fill(plan.head_script, {SOURCE_PLACEHOLDER: mount_source})
    instance = gcp.compute.Instance(
        f"{name}-head",
        machine_type=plan.head_instance_type,
        zone=layout.zone,
        # /home (the NFS export without storage.shared) and the Slurm state live on this disk
        boot_disk=gcp.compute.InstanceBootDiskArgs(
            initialize_params=gcp.compute.InstanceBootDiskInitializeParamsArgs(
                image=plan.head_image, size=layout.root_gb, type="pd-balanced", labels=labels
            ),
            auto_delete=True,
            kms_key_self_link=key.id if key else None,
        ),
        # no access config: no external IP; egress through the host subnet's Cloud NAT
        network_interfaces=[gcp.compute.InstanceNetworkInterfaceArgs(subnetwork=net.subnets["nodes"].id)],
        service_account=gcp.compute.InstanceServiceAccountArgs(email=identity.email, scopes=list(identity.scopes)),
        shielded_instance_config=gcp.compute.InstanceShieldedInstanceConfigArgs(
            enable_secure_boot=True, enable_vtpm=True, enable_integrity_monitoring=True
        ),
        metadata=metadata,
        labels=labels,
        description=f"gpu-cluster {label_value(layout.spec.name)} Slurm head node (slurmctld)",
        # the boot disk's labels are create-time only (initializeParams replaces the head): the VM's own follow tags
        opts=pulumi.ResourceOptions.merge(
            child,
            pulumi.ResourceOptions(
                depends_on=[version, grant, conf, *(key.grants if key else [])],
                ignore_changes=["bootDisk.initializeParams.labels"],
            ),
        ),
    )
    return SlurmHead(plan, instance, secret, grant, conf)


def login_script(head: SlurmHead | None, mount_source: pulumi.Input[str] | None = None) -> pulumi.Input[str] | None:
    """The login node's startup script with the head's address (and the shared filesystem's source) filled in."""
    if head is None:
        return None
    return fill(head.plan.login_script, {SOURCE_PLACEHOLDER: mount_source, HEAD_PLACEHOLDER: head.address})


def slurm_output(head: SlurmHead | None, access: dict[str, Any]) -> dict[str, Any] | None:
    """`slurm`: where the controller runs, how to submit and check, and which secret holds the key (not the key)."""
    if head is None:
        return None
    layout = head.plan.layout
    return {
        "headNode": {"name": head.instance.name, "privateIp": head.address},
        "partition": layout.partition,
        "slurmVersion": layout.packages.version,
        "login": access["command"],
        "check": "sinfo -N -l",
        "mungeKeySecret": head.secret.id,
        "powerSaving": "not built: the partition has the group's nodes (nodes), which register on boot",
    }
