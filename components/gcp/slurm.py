"""`scheduler: slurm` on GCP: the MUNGE key's secret and the head node (layout: `GcpLayout.slurm`).

- MUNGE key: `random.RandomBytes` (a secret output) as the payload of a Secret Manager secret replicated in the
  cluster's region only; the nodes' service account holds `roles/secretmanager.secretAccessor` on exactly that
  secret (a `SecretIamMember`, not a project grant). The head, the GPU nodes and the login node share that service
  account, so one grant covers all three; the key is in no startup script, input or output.
- The GPU nodes' Slurm configuration (nodes.conf): a project metadata item the head reads every minute from its
  metadata server, updated in place: growing or changing the GPU nodes never changes the head's startup script.
- Head node: a private VM (no external IP) in the host subnet running slurmctld, Shielded, OS Login.
- Elastic partitions (`slurm.partitions`): the head has a service account of its own (`build_head`), with the nodes'
  project roles and the MUNGE read, and `build_power` gives it a custom role of exactly what instances.insert from
  the partitions' templates and instances.delete need, bound on the project under an IAM condition (instances and
  disks named `<cluster>-*` in the zone only), and roles/iam.serviceAccountUser on the nodes' account only; the
  channel (nodes.conf, gres.conf, launch.env with each partition's template) is made once the templates exist.
- No firewall rule of its own: the host VPC's internal rule already admits every port between the head, the
  GPU nodes and the login node (all in the host subnet), and nothing from outside.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import pulumi
import pulumi_gcp as gcp
import pulumi_random as random

from ..bootstrap.mounts import SOURCE_PLACEHOLDER
from ..bootstrap.slurm_conf import DB_HOST_PLACEHOLDER, HEAD_PLACEHOLDER, launch_placeholder
from ..layout.gcp import GcpLayout, GcpSlurm
from ..layout.gcp.labels import label_value
from ..resources import fill
from .accounting import Database, build_database
from .encryption import Key
from .identity import Identity
from .network import Network
from .secrets import regional_secret


@dataclass(frozen=True)
class SlurmHead:
    plan: GcpSlurm
    instance: gcp.compute.Instance
    secret: gcp.secretmanager.Secret
    grant: gcp.secretmanager.SecretIamMember
    conf: gcp.compute.ProjectMetadataItem | None  # elastic partitions: made by `build_power` once the templates exist
    account: gcp.serviceaccount.Account | None = None  # partitions or accounting: the head's own service account
    database: Database | None = None  # slurm.accounting: Cloud SQL for MySQL

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
    key = random.RandomBytes(f"{name}-munge-key-bytes", length=plan.key_bytes, opts=child)
    secret = regional_secret(f"{name}-munge-key", layout, plan.secret_id, "munge-key", child)
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
    depends: list[pulumi.Resource] = [version, grant]
    account: gcp.serviceaccount.Account | None = None
    email, scopes = identity.email, identity.scopes
    conf: gcp.compute.ProjectMetadataItem | None = None
    if plan.power is None:
        conf = _compute_conf(name, layout, plan.layout.compute_config, child)
        depends.append(conf)
    # nodes.conf of elastic partitions names their templates, made after the head (their startup script holds its
    # address): the head's boot waits for the metadata item (the conf hook retries), not the deploy
    if plan.head_account_id is not None:
        # the head creates and deletes nodes, or reads the database's password: an account of its own, which the GPU
        # and login nodes do not carry
        account, grants = _head_account(name, layout, plan, secret, child)
        email = account.email
        depends.extend(grants)
    database = build_database(name, layout, net, child)
    if database is not None:
        assert account is not None  # head_account_id is set with accounting
        depends.append(
            gcp.secretmanager.SecretIamMember(
                f"{name}-db-password-head-reader",
                secret_id=database.secret.id,
                project=layout.project or None,
                role=database.plan.secret_role,
                member=account.member,
                opts=child,
            )
        )
        depends.append(database.version)
    labels = {**layout.labels, "gpu-cluster_role": "slurm-head"}
    metadata: dict[str, pulumi.Input[str]] = {
        k: v for k, v in layout.metadata.items() if k not in ("startup-script", "shutdown-script")
    }  # the GPU nodes' bootstrap and drain
    metadata["startup-script"] = fill(
        plan.head_script,
        {SOURCE_PLACEHOLDER: mount_source, DB_HOST_PLACEHOLDER: database.address if database else None},
    )
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
        service_account=gcp.compute.InstanceServiceAccountArgs(email=email, scopes=list(scopes)),
        shielded_instance_config=gcp.compute.InstanceShieldedInstanceConfigArgs(
            enable_secure_boot=True, enable_vtpm=True, enable_integrity_monitoring=True
        ),
        metadata=metadata,
        labels=labels,
        description=f"gpu-cluster {label_value(layout.spec.name)} Slurm head node (slurmctld)",
        # the boot disk's labels and size are create-time only (initializeParams replaces the head, and its disk holds
        # /home and the Slurm state): the VM's own labels follow tags; a larger storage.rootGb grows the nodes' disks,
        # the head's is resized in place by hand (gcloud compute disks resize)
        opts=pulumi.ResourceOptions.merge(
            child,
            pulumi.ResourceOptions(
                depends_on=[*depends, *(key.grants if key else [])],
                ignore_changes=["bootDisk.initializeParams.labels", "bootDisk.initializeParams.size"],
            ),
        ),
    )
    return SlurmHead(plan, instance, secret, grant, conf, account, database)


def _compute_conf(
    name: str, layout: GcpLayout, value: pulumi.Input[str], child: pulumi.ResourceOptions
) -> gcp.compute.ProjectMetadataItem:
    assert layout.slurm is not None
    return gcp.compute.ProjectMetadataItem(
        f"{name}-slurm-compute-conf",
        key=layout.slurm.conf_key,
        value=value,
        project=layout.project or None,
        opts=child,
    )


def _role_suffix(role: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", role.removeprefix("roles/").lower()).strip("-")


def _head_account(
    name: str, layout: GcpLayout, plan: GcpSlurm, secret: gcp.secretmanager.Secret, child: pulumi.ResourceOptions
) -> tuple[gcp.serviceaccount.Account, list[pulumi.Resource]]:
    """The head's own service account with what the nodes' account gave the head (its project roles: logging,
    monitoring; the MUNGE secret's read); the project metadata item needs no grant."""
    assert plan.head_account_id is not None
    spec = layout.spec
    account = gcp.serviceaccount.Account(
        f"{name}-head-sa",
        account_id=plan.head_account_id,
        display_name=f"gpu-cluster {spec.name} Slurm head",
        description=f"gpu-cluster {spec.name}: the Slurm head, which "
        + (
            "creates and deletes the GPU nodes"
            if plan.power is not None
            else "reads the accounting database's password"
        )
        + f" (stack {spec.stack})",
        project=layout.project or None,
        opts=child,
    )
    grants: list[pulumi.Resource] = [
        gcp.projects.IAMMember(
            f"{name}-head-sa-{_role_suffix(role)}",
            project=layout.project,
            role=role,
            member=account.member,
            opts=child,
        )
        for role in layout.identity.roles
        if role not in spec.identity.policies  # the user's extra roles are the nodes'
    ]
    grants.append(
        gcp.secretmanager.SecretIamMember(
            f"{name}-munge-key-head-reader",
            secret_id=secret.id,
            project=layout.project or None,
            role=plan.secret_role,
            member=account.member,
            opts=child,
        )
    )
    return account, grants


def build_power(
    name: str,
    layout: GcpLayout,
    head: SlurmHead | None,
    templates: Mapping[str, gcp.compute.InstanceTemplate],
    nodes: Identity,
    child: pulumi.ResourceOptions,
) -> SlurmHead | None:
    """Elastic partitions: the channel's text with each partition's template, and the head account's right to create
    instances from those templates and delete exactly this cluster's (catalog/slurm.yaml clouds.gcp.powerSave)."""
    if head is None or head.account is None or not templates or head.plan.power is None:
        return head
    plan, power = head.plan, head.plan.power
    tokens = {launch_placeholder(part): template.self_link for part, template in templates.items()}
    conf = _compute_conf(name, layout, fill(plan.layout.compute_config, tokens), child)
    spec = layout.spec
    role = gcp.projects.IAMCustomRole(
        f"{name}-head-slurm-power",
        role_id=power.role_id,
        title=f"gpu-cluster {spec.name} Slurm power saving",
        description=f"gpu-cluster {spec.name}: the Slurm head creates its GPU nodes from their instance templates and "
        f"deletes them (stack {spec.stack})",
        permissions=list(power.permissions),
        project=layout.project or None,
        opts=child,
    )
    # Scoped as tightly as IAM allows: the custom role has only these permissions, and its binding's condition limits
    # the instance and disk permissions to names `<cluster>-*` in the cluster's zone (IAM "Configure resource-based
    # access", Compute Engine supports resource.name); the template, subnet, placement and operation permissions are
    # use/read permissions on resources that hold no data (catalog/slurm.yaml clouds.gcp.powerSave)
    gcp.projects.IAMMember(
        f"{name}-head-sa-slurm-power",
        project=layout.project,
        role=role.name,
        member=head.account.member,
        condition=gcp.projects.IAMMemberConditionArgs(
            title="gpu-cluster-own-nodes",
            description=f"only the instances and disks of gpu-cluster {spec.name} ({spec.name}-*) in {layout.zone}",
            expression=power.condition,
        ),
        opts=child,
    )
    if nodes.account is not None:  # identity.existing is refused with partitions (layout/gcp/slurm.py)
        gcp.serviceaccount.IAMMember(
            f"{name}-head-sa-act-as-nodes",
            # the full name projects/{project}/serviceAccounts/{email} (pulumi-gcp serviceaccount/iam_member.py)
            service_account_id=pulumi.Output.concat(
                "projects/", layout.project, "/serviceAccounts/", nodes.account.email
            ),
            role=power.act_as_role,
            member=head.account.member,
            opts=child,
        )
    return replace(head, conf=conf)


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
        "powerSaving": layout.power_saving,
        **({"accounting": head.database.output()} if head.database is not None else {}),
    }
