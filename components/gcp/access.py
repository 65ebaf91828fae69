"""How people reach the nodes: the tcp:22 rules (IAP's range, sshCidrs) and the optional login node."""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_gcp as gcp

from ..layout.gcp import GcpLayout
from ..layout.gcp.labels import label_value
from ..layout.monitoring import NO_PATH, login_summary
from .encryption import Key
from .identity import Identity
from .network import Network


def build_ssh_firewall(
    name: str, layout: GcpLayout, net: Network, child: pulumi.ResourceOptions
) -> gcp.compute.Firewall | None:
    if not layout.ssh_source_ranges:
        return None
    return gcp.compute.Firewall(
        f"{name}-ssh",
        network=net.host.id,
        direction="INGRESS",
        allows=[gcp.compute.FirewallAllowArgs(protocol="tcp", ports=["22"])],
        source_ranges=list(layout.ssh_source_ranges),
        description="SSH to the nodes (sshCidrs, and IAP's range when gcp.iap is set)",
        opts=child,
    )


def build_login(
    name: str,
    layout: GcpLayout,
    net: Network,
    identity: Identity,
    child: pulumi.ResourceOptions,
    startup_script: pulumi.Input[str] | None = None,  # scheduler slurm: the login part (sbatch, srun, sackd)
    key: Key | None = None,  # encryption.key not provider: the boot disk's CMEK
) -> gcp.compute.Instance | None:
    """One small CPU VM on the host subnet: the only place sshCidrs and a public IP land when it exists."""
    login = layout.access.login
    if login is None:
        return None
    if layout.access.login_ssh_ranges:
        gcp.compute.Firewall(
            f"{name}-login-ssh",
            network=net.host.id,
            direction="INGRESS",
            allows=[gcp.compute.FirewallAllowArgs(protocol="tcp", ports=["22"])],
            source_ranges=list(layout.access.login_ssh_ranges),
            target_tags=[login.tag],
            description="SSH from sshCidrs to the login node only",
            opts=child,
        )
    labels = {**layout.labels, "gpu-cluster_role": "login"}
    metadata: dict[str, pulumi.Input[str]] = {
        k: v for k, v in layout.metadata.items() if k not in ("startup-script", "shutdown-script")
    }  # the GPU nodes' bootstrap and drain
    if startup_script is not None:
        metadata["startup-script"] = startup_script
    return gcp.compute.Instance(
        f"{name}-login",
        machine_type=login.instance_type,
        zone=layout.zone,
        boot_disk=gcp.compute.InstanceBootDiskArgs(
            initialize_params=gcp.compute.InstanceBootDiskInitializeParamsArgs(
                image=login.image, size=50, type="pd-balanced", labels=labels
            ),
            auto_delete=True,
            kms_key_self_link=key.id if key else None,
        ),
        network_interfaces=[
            gcp.compute.InstanceNetworkInterfaceArgs(
                subnetwork=net.subnets["nodes"].id,
                access_configs=[gcp.compute.InstanceNetworkInterfaceAccessConfigArgs()] if login.public_ip else None,
            )
        ],
        service_account=gcp.compute.InstanceServiceAccountArgs(email=identity.email, scopes=list(identity.scopes)),
        shielded_instance_config=gcp.compute.InstanceShieldedInstanceConfigArgs(
            enable_secure_boot=True, enable_vtpm=True, enable_integrity_monitoring=True
        ),
        tags=[login.tag],
        metadata=metadata,
        labels=labels,
        description=f"gpu-cluster {label_value(layout.spec.name)} login node",
        # the boot disk's labels are create-time only (initializeParams replaces the VM): the VM's own follow tags
        opts=pulumi.ResourceOptions.merge(
            key.after(child) if key else child,
            pulumi.ResourceOptions(ignore_changes=["bootDisk.initializeParams.labels"]),
        ),
    )


def access_output(
    layout: GcpLayout,
    login: gcp.compute.Instance | None,
    first_node: gcp.compute.InstanceFromTemplate | None,
    mig: pulumi.Output[str] | None,
) -> dict[str, Any]:
    """How to log in and how to list the nodes' private IPs, as a user types it."""
    spec = layout.spec
    where = f"--zone {layout.zone} --project {layout.project}"
    # the login node, else the first instance; a MIG's node names are known only from `nodes`
    target: pulumi.Input[str] = (
        login.name if login is not None else first_node.name if first_node is not None else "<node name>"
    )
    method = layout.access.method
    flags = {"iap": f" {where} --tunnel-through-iap", "ssh": f" {where}"}
    command: pulumi.Input[str] = (
        _named("gcloud compute ssh ", target, flags[method], "<node name>")
        if method in flags
        else "none: access is none (no login path is built)"
    )
    cluster = label_value(spec.name)
    filt = f"labels.gpu-cluster_cluster={cluster}"
    if login is not None:
        filt += " AND NOT labels.gpu-cluster_role:login"
    nodes = (
        f'gcloud compute instances list --project {layout.project} --zones {layout.zone} --filter="{filt}" '
        '--format="value(name,networkInterfaces[0].networkIP)"'
    )
    out: dict[str, Any] = {"method": method, "command": command, "nodes": nodes}
    if mig is not None:
        out["group"] = _named("gcloud compute instance-groups managed list-instances ", mig, f" {where}", "<group>")
    if method == "iap":
        out["userRoles"] = list(layout.access.user_roles)
    return out


def _named(head: str, name: pulumi.Input[str], tail: str, unknown: str) -> pulumi.Output[str]:
    """`head NAME tail`; a name the provider has not reported reads as `unknown`."""
    return pulumi.Output.from_input(name).apply(lambda n: f"{head}{n or unknown}{tail}")


def monitoring_output(layout: GcpLayout, login: gcp.compute.Instance | None) -> dict[str, Any]:
    """`monitoring`: where Prometheus and Grafana run and the exact command that forwards Grafana to this machine.

    Grafana listens on the login node's loopback, which an IAP TCP tunnel (to the VM's address) cannot reach: the
    forward is an SSH local forward, through IAP with access iap."""
    plan = layout.monitoring
    observe = layout.observe
    if layout.spec.prometheus == "managed" and observe is not None and observe.dashboards:
        # the GPU nodes' Ops Agent writes; the dashboards and rules live in Cloud Monitoring (no login node part)
        return {
            "prometheus": "managed",
            "service": observe.managed_service,
            "grafana": None,
            "dashboards": [d.display_name for d in observe.dashboards],
            "grafanaNote": observe.grafana_note,
        }
    if plan is None or login is None:
        return {"prometheus": "none", "grafana": None}
    port, method = plan.grafana_port, layout.access.method
    flags = {"iap": " --tunnel-through-iap", "ssh": ""}
    where = f" --zone {layout.zone} --project {layout.project}"
    forward: pulumi.Input[str] = (
        _named("gcloud compute ssh ", login.name, f"{where}{flags[method]} -- -N -L {port}:127.0.0.1:{port}", "<login>")
        if method in flags
        else NO_PATH
    )
    return login_summary(forward, port, plan.password_file, plan.prometheus_listen)
