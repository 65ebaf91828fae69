"""The nodes: one instance template, then a managed instance group or N instances from it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_gcp as gcp

from ..bootstrap.mounts import SOURCE_PLACEHOLDER
from ..bootstrap.slurm_conf import HEAD_PLACEHOLDER
from ..layout.gcp import GcpLayout
from ..layout.gcp.nodes import SCRATCH_DEVICE_NAME
from ..resources import fill, invoke_options
from .encryption import Key
from .identity import Identity
from .network import Network
from .placement import build_placement


@dataclass
class Nodes:
    image_id: pulumi.Output[str]
    template: gcp.compute.InstanceTemplate
    group: gcp.compute.InstanceGroupManager | None = None
    instances: list[gcp.compute.InstanceFromTemplate] = field(default_factory=list)
    key: Key | None = None  # encryption.key not provider: the disks' CMEK

    @property
    def ids(self) -> pulumi.Output[Any]:
        """The MIG's instance group, or the instances' ids."""
        if self.group is not None:
            group: pulumi.Output[Any] = self.group.instance_group
            return group
        return pulumi.Output.all(*[inst.id for inst in self.instances])


def image_id(layout: GcpLayout, parent: pulumi.Resource) -> pulumi.Output[str]:
    if layout.image.family is None or layout.image.release is not None:  # a pinned release names its image
        return pulumi.Output.from_input(layout.image.ref)
    # Resolve the family once per deploy so every node of the group boots the same image.
    image: pulumi.Output[str] = gcp.compute.get_image_output(
        family=layout.image.family, project=layout.image.project, opts=invoke_options(parent)
    ).self_link
    return image


def build_nodes(
    name: str,
    layout: GcpLayout,
    net: Network,
    identity: Identity,
    placement: gcp.compute.ResourcePolicy | None,
    parent: pulumi.Resource,
    health_check: gcp.compute.HealthCheck | None = None,
    mount_source: pulumi.Input[str] | None = None,  # the shared filesystem's, known at deploy
    head_address: pulumi.Input[str] | None = None,  # scheduler slurm: the head's private IP, known at deploy
    key: Key | None = None,  # encryption.key not provider
) -> Nodes:
    spec = layout.spec
    child = pulumi.ResourceOptions(parent=parent)
    image = image_id(layout, parent)
    workload = placement if layout.placement and layout.placement.kind == "workload" else None
    compact = placement if workload is None else None
    template = _template(name, layout, net, image, identity, compact, child, mount_source, head_address, key)
    nodes = Nodes(image, template, key=key)
    elastic = layout.elastic
    if spec.node_group == "managed":
        # with an autoscaler the group's size is its business after the deploy (gcp/scaling.py)
        autoscaled = elastic is not None and elastic.autoscaler is not None
        nodes.group = gcp.compute.InstanceGroupManager(
            f"{name}-mig",
            base_instance_name=f"{spec.name}-node",
            zone=layout.zone,
            target_size=spec.nodes if elastic is None else elastic.spot_target,
            versions=[
                gcp.compute.InstanceGroupManagerVersionArgs(name="primary", instance_template=template.self_link_unique)
            ],
            # GPU nodes take minutes to boot; do not block the deploy on them.
            wait_for_instances=False,
            # update rolling: a new template rolls, drained by the node's shutdown handler (layout.gcp.nodes)
            update_policy=update_policy(layout),
            resource_policies=gcp.compute.InstanceGroupManagerResourcePoliciesArgs(workload_policy=workload.self_link)
            if workload
            else None,
            # autohealing: recreate a node whose health endpoint fails (gcp/health.py); updated in place
            auto_healing_policies=gcp.compute.InstanceGroupManagerAutoHealingPoliciesArgs(
                health_check=health_check.id, initial_delay_sec=layout.health_probe.initial_delay_sec
            )
            if health_check is not None and layout.health_probe is not None
            else None,
            opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(ignore_changes=["targetSize"]))
            if autoscaled
            else child,
        )
    else:
        nodes.instances = [
            gcp.compute.InstanceFromTemplate(
                f"{name}-node-{i}",
                source_instance_template=template.self_link_unique,
                zone=layout.zone,
                labels=dict(layout.labels),
                opts=child,
            )
            for i in range(spec.nodes)
        ]
    return nodes


def build_partitions(
    name: str,
    layout: GcpLayout,
    net: Network,
    identity: Identity,
    parent: pulumi.Resource,
    mount_source: pulumi.Input[str] | None = None,
    head_address: pulumi.Input[str] | None = None,
    key: Key | None = None,
) -> tuple[Nodes, dict[str, gcp.compute.InstanceTemplate]]:
    """Elastic Slurm partitions: per partition the instance template the head's resume program creates each node from
    (instances.insert with sourceInstanceTemplate), and its compact placement policy (no vmCount: layout/gcp
    partition_placement); no group and no instance. `Nodes` holds the first partition's, for the outputs."""
    child = pulumi.ResourceOptions(parent=parent)
    templates: dict[str, gcp.compute.InstanceTemplate] = {}
    first: Nodes | None = None
    for part in layout.partitions:
        sub = f"{name}-{part.name}"
        policy = build_placement(sub, part.layout, child)
        image = image_id(part.layout, parent)
        template = _template(sub, part.layout, net, image, identity, policy, child, mount_source, head_address, key)
        templates[part.name] = template
        first = first or Nodes(image, template, key=key)
    assert first is not None  # the spec has at least one partition
    return first, templates


def metadata(
    layout: GcpLayout, mount_source: pulumi.Input[str] | None, head_address: pulumi.Input[str] | None = None
) -> dict[str, pulumi.Input[str]]:
    """The nodes' metadata, the startup script with the shared filesystem's mount source (and the Slurm head's
    address) once they are known."""
    out: dict[str, pulumi.Input[str]] = dict(layout.metadata)
    script = layout.metadata.get("startup-script")
    if script is not None:
        out["startup-script"] = fill(script, {SOURCE_PLACEHOLDER: mount_source, HEAD_PLACEHOLDER: head_address})
    return out


def _template(
    name: str,
    layout: GcpLayout,
    net: Network,
    image: pulumi.Output[str],
    identity: Identity,
    placement: gcp.compute.ResourcePolicy | None,
    child: pulumi.ResourceOptions,
    mount_source: pulumi.Input[str] | None = None,
    head_address: pulumi.Input[str] | None = None,
    key: Key | None = None,
) -> gcp.compute.InstanceTemplate:
    spec = layout.spec
    labels = dict(layout.labels)
    # CMEK on the boot and scratch persistent disks; local SSD takes none (layout.gcp.encryption notes)
    cmek = gcp.compute.InstanceTemplateDiskDiskEncryptionKeyArgs(kms_key_self_link=key.id) if key else None
    disks = [
        gcp.compute.InstanceTemplateDiskArgs(
            boot=True,
            source_image=image,
            disk_size_gb=layout.root_gb,
            disk_type=layout.boot_disk_type,
            auto_delete=True,
            labels=labels,
            disk_encryption_key=cmek,
        )
    ]
    if layout.scratch.kind == "disk":
        disks.append(
            gcp.compute.InstanceTemplateDiskArgs(
                boot=False,
                device_name=SCRATCH_DEVICE_NAME,
                disk_size_gb=int(layout.scratch.device_gb or 0),
                disk_type=layout.scratch_disk_type,
                auto_delete=not layout.scratch.retain,
                labels=labels,
                disk_encryption_key=cmek,
            )
        )
    # No network tags: every VPC here is the cluster's own, so its firewall rules apply to all of
    # its instances. Local SSDs of A2 Ultra / A3 / A4 come with the machine type and need no disk entry.
    nics = [
        gcp.compute.InstanceTemplateNetworkInterfaceArgs(
            subnetwork=net.subnets[nic.subnet].id,
            nic_type=nic.nic_type,
            access_configs=[gcp.compute.InstanceTemplateNetworkInterfaceAccessConfigArgs()]
            if nic.external_ip
            else None,
        )
        for nic in layout.nics
    ]
    sched = layout.scheduling
    reservation = (
        gcp.compute.InstanceTemplateReservationAffinityArgs(
            type="SPECIFIC_RESERVATION",
            specific_reservation=gcp.compute.InstanceTemplateReservationAffinitySpecificReservationArgs(
                key="compute.googleapis.com/reservation-name", values=[layout.reservation]
            ),
        )
        if layout.reservation
        else None
    )
    return gcp.compute.InstanceTemplate(
        f"{name}-template",
        machine_type=spec.instance.instanceType,
        disks=disks,
        network_interfaces=nics,
        guest_accelerators=[
            gcp.compute.InstanceTemplateGuestAcceleratorArgs(
                type=layout.guest_accelerator[0], count=layout.guest_accelerator[1]
            )
        ]
        if layout.guest_accelerator
        else None,
        scheduling=gcp.compute.InstanceTemplateSchedulingArgs(
            provisioning_model=sched.provisioning_model,
            preemptible=sched.preemptible,
            automatic_restart=sched.automatic_restart,
            on_host_maintenance=sched.on_host_maintenance,
            instance_termination_action=sched.instance_termination_action,
            max_run_duration=gcp.compute.InstanceTemplateSchedulingMaxRunDurationArgs(seconds=sched.max_run_seconds)
            if sched.max_run_seconds
            else None,
        ),
        service_account=identity.template_args(),
        # Secure Boot stays off: DKMS-built NVIDIA modules are not signed for the UEFI db.
        shielded_instance_config=gcp.compute.InstanceTemplateShieldedInstanceConfigArgs(
            enable_secure_boot=False, enable_vtpm=True, enable_integrity_monitoring=True
        ),
        resource_policies=placement.self_link if placement else None,
        reservation_affinity=reservation,
        metadata=metadata(layout, mount_source, head_address),
        labels=labels,
        description=f"gpu-cluster {spec.name} nodes ({spec.instance.label})",
        opts=pulumi.ResourceOptions.merge(key.after(child) if key else child, _fixed_labels(spec.node_group)),
    )


def _fixed_labels(node_group: str) -> pulumi.ResourceOptions:
    """A template is immutable: a label change replaces it, and with it every VM made from it (sourceInstanceTemplate
    replaces). VMs made one by one carry the labels themselves, updated in place, so their template keeps the labels
    it was created with. A MIG's VMs get labels from nowhere else: its template follows them, and the group rolls."""
    if node_group == "managed":
        return pulumi.ResourceOptions()
    return pulumi.ResourceOptions(ignore_changes=["labels", "disks[*].labels"])


def update_policy(layout: GcpLayout) -> gcp.compute.InstanceGroupManagerUpdatePolicyArgs | None:
    """The MIG's update policy from `layout.rollout`: PROACTIVE, minimal action REPLACE (a new template replaces the
    VM: its boot disk and startup script), fixed surge and unavailability (a zonal group: fixed counts)."""
    rollout = layout.rollout
    if rollout is None:
        return None
    return gcp.compute.InstanceGroupManagerUpdatePolicyArgs(
        type=rollout.type,
        minimal_action=rollout.minimal_action,
        max_surge_fixed=rollout.max_surge,
        max_unavailable_fixed=rollout.max_unavailable,
        replacement_method=rollout.replacement_method,
    )
