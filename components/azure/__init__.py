"""Azure resources for one GPU cluster: maps an `AzureLayout` onto pulumi-azure-native, nothing more.

Decisions (InfiniBand scope, NSG rules, image, spot eviction, scratch, identity, access) are made in
`components.layout.azure` (encryption included); the modules here turn them into resources, one concern each:
`network` (resource group, VNet, NSG, NAT gateway, the private node subnet), `identity` (a user-assigned
managed identity and its role assignments), `nodes` (an optional proximity placement group, then one
Uniform VM scale set (managed) or N VMs with their NICs, in one availability set when InfiniBand is
wired (instances)), `access` (Azure Bastion, an optional login node) and `storage` (the shared
filesystem: Azure Managed Lustre in its own subnet). Every resource is parented to
`CloudCluster`, so splitting the code changed no URN.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pulumi
import pulumi_azure_native as azure

from ..layout.azure import AzureLayout
from ..layout.azure.alerts import INGESTION_URL_PLACEHOLDER
from ..layout.azure.monitoring import (
    CLIENT_ID_PLACEHOLDER,
    QUERY_URL_PLACEHOLDER,
    RESOURCE_GROUP_PLACEHOLDER,
    SUBSCRIPTION_PLACEHOLDER,
)
from ..layout.monitoring import login_summary
from ..resources import fill, invoke_options
from . import (
    access,
    alerts,
    budget,
    encryption,
    identity,
    kubernetes,
    logs,
    managed_grafana,
    network,
    nodes,
    scaling,
    serve,
    slurm,
)
from .aliases import _is_api_version_alias, drop_api_version_aliases
from .context import Context
from .storage import build_shared

__all__ = ["TYPE", "CloudCluster", "_is_api_version_alias", "drop_api_version_aliases"]

TYPE = "gpu-cluster:azure:Cluster"


def monitoring_tokens(
    ctx: Context, ident: identity.Identity, alerting: alerts.Alerts | None = None
) -> dict[str, pulumi.Input[str] | None]:
    """What the login node's Prometheus needs from the deployed cluster (azure_sd): the subscription, the resource
    group and the nodes' identity's client id; with monitoring.notify or prometheus managed the remote-write URL,
    with managed the workspace's query endpoint (Grafana's data source); none without the login node's Prometheus."""
    if ctx.layout.monitoring is None:
        return {}
    subscription = azure.authorization.get_client_config_output(opts=invoke_options(ctx.component)).subscription_id
    return {
        SUBSCRIPTION_PLACEHOLDER: subscription,
        RESOURCE_GROUP_PLACEHOLDER: ctx.resource_group_name,
        CLIENT_ID_PLACEHOLDER: ident.client_id,
        INGESTION_URL_PLACEHOLDER: alerting.ingestion_url if alerting is not None else None,
        QUERY_URL_PLACEHOLDER: alerting.query_url if alerting is not None else None,
    }


class CloudCluster(pulumi.ComponentResource):
    """The Azure half of `GpuCluster`; children are parented here so the tree reads cloud-first."""

    outputs: dict[str, Any]

    def __init__(self, name: str, layout: AzureLayout, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(TYPE, name, {}, opts)
        self.layout = layout
        for warning in layout.warnings:
            pulumi.log.warn(warning, resource=self)
        # Children only (not this component): drop the provider's API-version aliases (see the function).
        child = pulumi.ResourceOptions(parent=self, transformations=[drop_api_version_aliases])
        self.resource_group_name = network.resource_group(name, layout, child)
        ctx = Context(name, self, layout, child, self.resource_group_name, list(layout.zones) or None)
        # encryption.key not provider: every managed disk and the shared filesystem name this key (None: Azure's)
        self.key = encryption.build(ctx)
        ctx = replace(ctx, key=self.key)
        self.budget = budget.build(ctx)  # budget: the resource group's cost, whatever builds below

        net = network.build(ctx)
        self.vnet, self.nsg, self.nat, self.subnet = net.vnet, net.nsg, net.nat, net.subnet
        self.identity = identity.build(ctx)
        self.logs = logs.build(ctx)  # monitoring.logs.enabled: the workspace and its rule, before any VM names them
        # prometheus managed on AKS: the workspace first (the cluster's collection rule names it), the rule group
        # after the cluster (scoped to it); elsewhere all before the login node, which writes to the workspace
        aks_metrics = layout.aks.metrics if layout.aks is not None else None
        metrics = alerts.workspace(ctx) if aks_metrics is not None else None
        self.alerts = alerts.build(ctx, self.identity) if aks_metrics is None else None
        self.grafana = managed_grafana.build(ctx, self.identity, self.alerts)  # managed: the reads, Managed Grafana
        tokens = monitoring_tokens(ctx, self.identity, self.alerts)
        vm_login = (
            fill(layout.monitoring.vm_custom_data, tokens, layout.custom_data_b64_for)
            if layout.monitoring is not None and layout.slurm is None
            else None
        )
        # scheduler slurm: the login VM waits for the head's address (and the shared filesystem's)
        self.access = access.build(ctx, net, self.identity, vm_login, defer_login_vm=layout.slurm is not None)
        # after the access subnets: Azure writes one subnet of a VNet at a time (AnotherOperationInProgress)
        subnets: list[pulumi.Resource] = [r for r in (self.access.bastion, self.access.login_nic) if r]
        api = kubernetes.api_subnet(ctx, net, subnets) if layout.aks is not None else None
        self.shared = build_shared(ctx, net, after=subnets + ([api] if api else []))
        source = self.shared.source if self.shared else None
        shared_subnet = [self.shared.subnet] if self.shared is not None and self.shared.subnet is not None else []
        self.slurm = slurm.build_head(ctx, net, self.identity, source, subnets + shared_subnet)
        if self.slurm is not None:
            login_data = self.slurm.login_custom_data(layout.custom_data_b64_for, source, tokens)
            self.access = access.login_vm(ctx, self.access, self.identity, login_data)
        self.kubernetes: kubernetes.Kubernetes | None = None
        self.serving: serve.Serving | None = None
        if api is not None:
            # scheduler kubernetes: the GPU nodes are an AKS agent pool (no scale set, no VMs)
            self.kubernetes = kubernetes.build(ctx, net, self.identity, api, self.logs, metrics)
            if aks_metrics is not None:
                self.alerts = alerts.build(ctx, self.identity, metrics, self.kubernetes.cluster)
                self.grafana = managed_grafana.build(ctx, self.identity, self.alerts, aks_metrics.managed)
            built = nodes.Nodes(self.kubernetes.ppg)
        elif layout.partitions:
            # elastic Slurm partitions: no GPU VM until the head's resume program creates one in a partition's scale set
            built = nodes.Nodes(None)
        else:
            # serve: the load balancer first, the scale set's NICs name its backend pool
            self.serving = serve.build_serving(ctx, net.subnet)
            built = nodes.build(
                ctx,
                net.subnet,
                self.identity,
                self.shared.source if self.shared else None,
                self.slurm.address if self.slurm else None,
                self.serving.pool_id if self.serving else None,
            )
        self.ppg = built.ppg
        self.scale_set: azure.compute.VirtualMachineScaleSet | None = built.scale_set
        self.availability_set: azure.compute.AvailabilitySet | None = built.availability_set
        self.vms: list[azure.compute.VirtualMachine] = built.vms
        self.scaling = scaling.build(ctx, built.scale_set, self.identity)
        self._ship_logs(ctx, built)

        node_ids: pulumi.Output[Any]
        if self.kubernetes is not None:
            node_ids = self.kubernetes.gpu_pool.name
        elif built.scale_set is not None:
            node_ids = built.scale_set.name
        elif self.slurm is not None and self.slurm.power is not None:
            node_ids = pulumi.Output.all(*[s.name for s in self.slurm.power.scale_sets.values()])
        else:
            node_ids = pulumi.Output.all(*[vm.id for vm in built.vms])
        self.outputs = {
            "resourceGroup": self.resource_group_name,
            "vpcId": self.vnet.id,
            "subnetIds": pulumi.Output.all(self.subnet.id),
            "securityGroupId": self.nsg.id if self.nsg else None,  # None: an existing subnet's NSG
            # AKS nodes run AKS's own node image (the image key is the login node's)
            "imageId": f"AKS node image ({layout.aks.gpu.os_sku})" if layout.aks else layout.image.ref,
            "nodeGroup" if layout.group == "scale-set" else "instanceIds": node_ids,
            "placementGroup": self.ppg.id if self.ppg else None,
            "identity": self.identity.output(),
            "access": _access_output(name, layout, self.resource_group_name, built, self.access),
            "accessHourlyUsd": layout.bastion.hourly_usd if layout.bastion else None,
            "placementApplied": layout.placement_applied,
            "metrics": _metrics_output(layout, self.resource_group_name, built),
            "monitoring": _monitoring_output(layout, self.resource_group_name, self.access, self.alerts, self.grafana),
        }
        if self.shared is not None and layout.shared is not None:
            self.outputs["sharedFilesystem"] = self.shared.output(layout.shared)
        if self.availability_set is not None:
            self.outputs["availabilitySet"] = self.availability_set.id
        if self.kubernetes is not None and layout.aks is not None:
            self.outputs["kubernetes"] = self.kubernetes.output(layout.aks, self.resource_group_name)
            self.outputs["kubeconfig"] = self.kubernetes.kubeconfig
        elif built.scale_set is None and not layout.partitions:
            # A hostfile for mpirun / torchrun: each node's private IP (known once its NIC exists).
            self.outputs["privateIps"] = pulumi.Output.all(
                *[nic.ip_configurations.apply(_first_private_ip) for nic in built.nics]
            )
        if self.slurm is not None:
            self.outputs["slurm"] = self.slurm.output(self.outputs["access"])
        if self.scaling is not None:
            self.outputs["scaling"] = self.scaling.output(ctx)
        if self.serving is not None and layout.serve is not None:
            self.outputs["serve"] = self.serving.output(layout.serve)
        if self.access.login_nic is not None:
            self.outputs["loginPrivateIp"] = self.access.login_nic.ip_configurations.apply(_first_private_ip)
        if self.key is not None and layout.encryption is not None:
            self.outputs["encryption"] = self.key.output(layout.encryption)
        if self.logs is not None:
            self.outputs["logs"] = self.logs.output()
        if self.alerts is not None and self.alerts.output() is not None:
            self.outputs["alerts"] = self.alerts.output()
        self.register_outputs(self.outputs)

    def _ship_logs(self, ctx: Context, built: nodes.Nodes) -> None:
        """monitoring.logs: the agent on every VM this component builds (each with the identity it carries) and the
        rule's association with it; the scale set has the agent in its extension profile (nodes.py)."""
        if self.logs is None:
            return
        ident = self.identity.resource_id
        if self.access.login_vm is not None:
            logs.attach_vm(ctx, self.logs, "login", self.access.login_vm, ident)
        if self.slurm is not None:
            head = self.slurm.head_identity or self.identity
            logs.attach_vm(ctx, self.logs, "head", self.slurm.vm, head.resource_id)
        for i, node in enumerate(built.vms):
            logs.attach_vm(ctx, self.logs, f"node-{i}", node, ident)
        if built.scale_set is not None:
            logs.associate(ctx, self.logs, "vmss", built.scale_set.id)


def _metrics_output(layout: AzureLayout, rg: pulumi.Input[str], built: nodes.Nodes) -> dict[str, Any]:
    """The scrape endpoints on every node (reachable from inside the VNet only: the NSG admits the ports from
    VirtualNetwork and denies the internet) and the command that lists the nodes' private IPs."""
    endpoints = [{"name": e.name, "port": e.port, "path": e.path} for e in layout.metrics_endpoints]
    if not endpoints or layout.aks is not None:  # AKS nodes run no bootstrap: metrics are the in-cluster exporter's
        return {"endpoints": [], "scrape": None}
    ports = ", ".join(f":{e.port}{e.path}" for e in layout.metrics_endpoints)
    scrape: pulumi.Input[str]
    if built.scale_set is not None:
        scrape = pulumi.Output.concat(
            "az vmss nic list --resource-group ", rg, " --vmss-name ", built.scale_set.name,
            ' --query "[].ipConfigurations[0].privateIPAddress" -o tsv', f"  # each IP: {ports}",
        )  # fmt: skip
    else:
        scrape = f"the privateIps output, each IP: {ports}"
    return {"endpoints": endpoints, "scrape": scrape}


def _first_private_ip(configs: Any) -> Any:
    return configs[0].private_ip_address if configs else None


def _access_output(
    name: str, layout: AzureLayout, rg: pulumi.Input[str], built: nodes.Nodes, way: access.Access
) -> dict[str, Any]:
    """How to log in and how to list the nodes: the exact commands, with placeholders only where a value
    is known after deploy."""
    user = layout.admin_user
    key = "~/.ssh/id_rsa" if layout.ssh_public_key.startswith("ssh-rsa") else "~/.ssh/id_ed25519"
    out: dict[str, Any] = {"method": layout.access}
    if layout.aks is not None:
        # AKS nodes: listed by the API server (from inside the VNet with a private endpoint, e.g. the login node)
        out["nodes"] = "kubectl get nodes -l gpu-cluster.dev/gpu -o wide"
        targets: pulumi.Input[str] = "the login node (AKS nodes take no SSH key)"
    elif built.scale_set is not None:
        vmss = built.scale_set.name
        out["nodes"] = pulumi.Output.concat(
            "az vmss nic list --resource-group ", rg, " --vmss-name ", vmss,
            ' --query "[].ipConfigurations[0].privateIPAddress" -o tsv',
        )  # fmt: skip
        targets = pulumi.Output.concat(
            "az vmss list-instances --resource-group ", rg, " --name ", vmss, ' --query "[].id" -o tsv'
        )
    else:
        # Azure names each VM after its logical name plus a random suffix: the prefix selects the nodes (elastic
        # partitions' VMs: `<cluster>-<node>`, named by the head's resume program)
        prefix = f"{layout.spec.name}-" if layout.partitions else f"{name}-node-"
        out["nodes"] = pulumi.Output.concat(
            "az vm list-ip-addresses --resource-group ", rg,
            f" --query \"[?starts_with(virtualMachine.name, '{prefix}')]",
            '.virtualMachine.network.privateIpAddresses[0]" -o tsv',
        )  # fmt: skip
        targets = pulumi.Output.concat("az vm list --resource-group ", rg, ' --query "[].id" -o tsv')
    if layout.access == "bastion" and way.bastion is not None:
        target: pulumi.Input[str] = way.login_vm.id if way.login_vm is not None else "<vm id>"
        out["command"] = pulumi.Output.concat(
            "az network bastion ssh --name ", way.bastion.name, " --resource-group ", rg,
            " --target-resource-id ", target, f" --auth-type ssh-key --username {user} --ssh-key {key}",
        )  # fmt: skip
        if way.login_vm is None:
            out["targets"] = targets  # the <vm id> values
    elif layout.access == "ssh":
        if way.login_ip is not None:
            out["command"] = pulumi.Output.concat(f"ssh -i {key} {user}@", way.login_ip.ip_address)
        else:
            out["command"] = f"ssh -i {key} {user}@<public ip of a node>"
    else:
        out["command"] = None
    return out


def _monitoring_output(
    layout: AzureLayout,
    rg: pulumi.Input[str],
    way: access.Access,
    alerting: alerts.Alerts | None = None,
    grafana: managed_grafana.ManagedGrafana | None = None,
) -> dict[str, Any]:
    """`monitoring`: where Prometheus and Grafana run and the commands that forward Grafana to this machine.

    Grafana listens on the login node's loopback, which a Bastion tunnel (to the VM's address) cannot reach: the
    tunnel carries SSH, and SSH forwards the port."""
    plan = layout.monitoring
    aks = layout.aks.metrics if layout.aks is not None else None
    if aks is not None and alerting is not None:  # AKS: the add-on writes, no Grafana of ours in the cluster
        return {
            "prometheus": "managed",
            "service": aks.managed.service,
            "workspace": alerting.workspace.name,
            "endpoint": alerting.query_url,
            "collector": "AKS's managed Prometheus add-on (ama-metrics; the DCGM exporter by its scrape ConfigMap)",
            "grafana": None,
            "grafanaNote": aks.managed.grafana_note,
            "portalDashboards": [d.name for d in aks.managed.dashboards.dashboards],
            "managedGrafana": grafana.output() if grafana is not None else None,
        }
    if plan is None or way.login_vm is None:
        return {"prometheus": "none", "grafana": None}
    port, user = plan.grafana_port, layout.admin_user
    key = "~/.ssh/id_rsa" if layout.ssh_public_key.startswith("ssh-rsa") else "~/.ssh/id_ed25519"
    forward: pulumi.Input[str]
    if layout.access == "bastion" and way.bastion is not None:
        forward = pulumi.Output.concat(
            "az network bastion tunnel --name ", way.bastion.name, " --resource-group ", rg,
            " --target-resource-id ", way.login_vm.id, " --resource-port 22 --port 50022 & ",
            f"ssh -i {key} -p 50022 -N -L {port}:127.0.0.1:{port} {user}@127.0.0.1",
        )  # fmt: skip
    elif layout.access == "ssh" and way.login_ip is not None:
        forward = pulumi.Output.concat(f"ssh -i {key} -N -L {port}:127.0.0.1:{port} {user}@", way.login_ip.ip_address)
    else:
        forward = "none: no path to the login node is built (access)"
    summary = login_summary(forward, port, plan.password_file, plan.prometheus_listen)
    if plan.managed is not None and alerting is not None:  # the agent writes there; the rules and alerts live there
        summary.update(
            prometheus="managed",
            service=plan.managed.service,
            workspace=alerting.workspace.name,
            endpoint=alerting.query_url,
            grafanaNote=plan.managed.grafana_note,
            portalDashboards=[d.name for d in plan.managed.dashboards.dashboards],
            managedGrafana=grafana.output() if grafana is not None else None,
        )
    return summary
