"""`scheduler: slurm` on Huawei Cloud (layout: `components.layout.huaweicloud.slurm`): the MUNGE key and the GPU nodes'
configuration in DEW CSMS, the agency's grant on them, the head node and the Slurm ports.

- MUNGE key: `random.RandomBytes` (a secret) as the text of the cluster's own CSMS secret (dew.Secret) on the
  cluster's DEW key; the compute-side configuration is another secret, a new version when it changes. The agency
  (which the head, the GPU nodes and the login node carry) gets one custom policy (iam.Role, granted by name through
  the agency's all_resources_roles): read exactly these two secrets, decrypt with the cluster's key.
- Head node: a private ECS in the nodes' subnet with its own security group, running slurmctld, its disks on the
  cluster's key.
- Rules, inside the cluster only: slurmctld (and NFS /home without storage.shared) to the head from the nodes and the
  login node, SSH to the head from the login node; slurmd to the nodes from the head and the login node; SrunPortRange
  to the login node from both.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_huaweicloud as huaweicloud
import pulumi_random as random

from ..bootstrap import gzip_b64
from ..bootstrap.huaweicloud_smn import TOPIC_PLACEHOLDER
from ..bootstrap.mounts import SOURCE_PLACEHOLDER
from ..bootstrap.slurm_conf import HEAD_PLACEHOLDER
from ..catalog.slurm import cloud_data as slurm_cloud
from ..layout.huaweicloud import HuaweiLayout, HuaweiSlurm
from ..resources import fill, secret_slurm_output
from .network import Network, secgroup_rule, security_group
from .nodes import image

SSH = 22


@dataclass(frozen=True)
class SlurmSecrets:
    """What exists before the agency: the two secrets and the policy reading them."""

    plan: HuaweiSlurm
    munge_secret: huaweicloud.dew.Secret
    conf_secret: huaweicloud.dew.Secret
    role: huaweicloud.iam.Role


@dataclass(frozen=True)
class SlurmHead:
    plan: HuaweiSlurm
    instance: huaweicloud.ecs.Instance
    security_group: huaweicloud.vpc.Secgroup
    secrets: SlurmSecrets

    @property
    def address(self) -> pulumi.Output[str]:
        ip: pulumi.Output[str] = self.instance.access_ip_v4
        return ip

    def login_user_data(
        self, mount_source: pulumi.Input[str] | None, topic_urn: pulumi.Input[str] | None = None
    ) -> pulumi.Input[str]:
        """The login node's: the Slurm client parts (then the monitoring) with the head's address (and
        monitoring.notify's SMN topic)."""
        values = {HEAD_PLACEHOLDER: self.address, SOURCE_PLACEHOLDER: mount_source, TOPIC_PLACEHOLDER: topic_urn}
        return fill(self.plan.login_user_data, values, gzip_b64)


def build_secrets(
    parent: pulumi.Resource, name: str, layout: HuaweiLayout, kms_key_id: pulumi.Output[str], tags: Mapping[str, str]
) -> SlurmSecrets | None:
    """The MUNGE key's and the configuration's secrets and the agency's policy on them (before the agency)."""
    plan = layout.slurm
    if plan is None:
        return None
    spec = layout.spec
    child = pulumi.ResourceOptions(parent=parent)
    key_bytes = random.RandomBytes(f"{name}-munge-key-bytes", length=plan.key_bytes, opts=child)
    key: pulumi.Output[str] = pulumi.Output.secret(key_bytes.base64)

    def secret(what: str, secret_name: str, text: pulumi.Input[str]) -> huaweicloud.dew.Secret:
        return huaweicloud.dew.Secret(
            f"{name}-slurm-{what}",
            name=secret_name,
            description=f"gpu-cluster {spec.name}: the Slurm {what}",
            secret_text=text,
            kms_key_id=kms_key_id,
            tags=dict(tags),
            opts=child,
        )

    munge = secret("munge-key", plan.munge_secret, key)
    conf = secret("compute-conf", plan.conf_secret, plan.layout.compute_config)
    role = huaweicloud.iam.Role(
        f"{name}-slurm-secrets-role",
        name=plan.role_name,
        type=str(slurm_cloud("huaweicloud")["grant"]["roleType"]),
        policy=kms_key_id.apply(plan.role_policy),
        description=f"gpu-cluster {spec.name}: the nodes read the Slurm MUNGE key and configuration (two CSMS secrets)",
        opts=child,
    )
    return SlurmSecrets(plan, munge, conf, role)


def build_head(
    parent: pulumi.Resource,
    name: str,
    layout: HuaweiLayout,
    network: Network,
    secrets: SlurmSecrets | None,
    key_pair: pulumi.Input[str] | None,
    agency: pulumi.Output[str],
    kms_key_id: pulumi.Output[str],
    mount_source: pulumi.Input[str] | None,
) -> SlurmHead | None:
    if secrets is None:
        return None
    plan, spec = secrets.plan, layout.spec
    child = pulumi.ResourceOptions(parent=parent)
    sg = security_group(
        parent,
        f"{name}-head-sg",
        f"{name}-head-egress",
        f"{spec.name}-slurm-head",
        f"gpu-cluster {spec.name} Slurm head",
    )
    instance = huaweicloud.ecs.Instance(
        f"{name}-head",
        name=f"{spec.name}-head",
        hostname=f"{spec.name}-head",
        availability_zone=network.zone,
        flavor_id=plan.head_instance_type,
        image_id=image(parent, plan.head_image_name_regex, plan.head_instance_type),
        networks=[huaweicloud.ecs.InstanceNetworkArgs(uuid=network.subnet.id)],
        security_group_ids=[sg.id],
        charging_mode="postPaid",
        system_disk_type=layout.disk_type,
        # /home (the NFS export without storage.shared) and the Slurm state live on this disk
        system_disk_size=layout.root_gb,
        system_disk_kms_key_id=kms_key_id,
        key_pair=key_pair,
        agency_name=agency,
        user_data=fill(plan.head_user_data, {SOURCE_PLACEHOLDER: mount_source}, gzip_b64),
        tags={**layout.tags, "Name": f"{spec.name}-head"},
        # the newest public image, resolved at creation: a newer one must not rebuild the head later; the head reads
        # the key and its configuration at first boot: both secrets and the grant first
        opts=pulumi.ResourceOptions.merge(
            child,
            pulumi.ResourceOptions(
                ignore_changes=["imageId"], depends_on=[secrets.munge_secret, secrets.conf_secret, secrets.role]
            ),
        ),
    )
    return SlurmHead(plan, instance, sg, secrets)


def rules(
    parent: pulumi.Resource,
    name: str,
    head: SlurmHead | None,
    nodes: huaweicloud.vpc.Secgroup,
    login: huaweicloud.vpc.Secgroup | None,
    shared: pulumi.CustomResource | None,  # the SFS Turbo filesystem the stack made, if any
    shared_ports: Sequence[tuple[str, int, int]] = (),
) -> None:
    """The Slurm ports between the head's, the nodes' and the login node's groups (one rule each, by name); the
    filesystem's NFS ports from the head and the login node, which mount it too (storage.py admits the nodes)."""
    if head is None:
        return
    layout, ports = head.plan.layout, head.plan.layout.ports
    sources = [("nodes", nodes), *([("login", login)] if login is not None else [])]
    if isinstance(shared, huaweicloud.sfs.Turbo):
        for who, group in [("head", head.security_group), *sources[1:]]:
            for _, low, high in shared_ports:
                huaweicloud.vpc.SecgroupRule(
                    f"{name}-shared-nfs-{low}-from-{who}",
                    security_group_id=shared.security_group_id,
                    direction="ingress",
                    ethertype="IPv4",
                    protocol="tcp",
                    ports=str(low) if low == high else f"{low}-{high}",
                    remote_group_id=group.id,
                    action="allow",
                    description=f"NFS from the {who}",
                    opts=pulumi.ResourceOptions(parent=parent),
                )
    for who, group in sources:
        secgroup_rule(parent, f"{name}-head-slurmctld-from-{who}", head.security_group, f"slurmctld from the {who}",
                      ports=str(ports.slurmctld), remote_group=group.id)  # fmt: skip
        if layout.home_export:
            secgroup_rule(parent, f"{name}-head-nfs-from-{who}", head.security_group, f"NFS /home for the {who}",
                          ports=str(ports.nfs), remote_group=group.id)  # fmt: skip
    slurmd = str(ports.slurmd)
    secgroup_rule(parent, f"{name}-sg-slurmd-from-head", nodes, "slurmd from the Slurm head node", ports=slurmd,
                  remote_group=head.security_group.id)  # fmt: skip
    if login is None:
        return
    secgroup_rule(parent, f"{name}-head-ssh-from-login", head.security_group, "SSH from the login node",
                  ports=str(SSH), remote_group=login.id)  # fmt: skip
    secgroup_rule(parent, f"{name}-sg-slurmd-from-login", nodes, "slurmd from srun on the login node", ports=slurmd,
                  remote_group=login.id)  # fmt: skip
    srun = "{}-{}".format(*ports.srun_range)
    for who, group in (("head", head.security_group), ("nodes", nodes)):
        secgroup_rule(parent, f"{name}-login-srun-from-{who}", login, f"srun (SrunPortRange) from the {who}",
                      ports=srun, remote_group=group.id)  # fmt: skip


def output(head: SlurmHead | None, access: Mapping[str, Any]) -> dict[str, Any] | None:
    """`slurm`: where the controller runs, how to submit and check, and where the key is kept (never the key)."""
    if head is None:
        return None
    key = {
        "store": "dew-csms-secret",
        "secret": head.plan.munge_secret,
        "grant": f"{head.plan.role_name}: read that secret (and the configuration's) for the nodes' agency only",
    }
    layout, login = head.plan.layout, access["command"]
    return secret_slurm_output((head.instance.id, head.address), layout, login, key, head.plan.conf_secret)
