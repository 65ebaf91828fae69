"""GCP resources for one GPU cluster: maps a `GcpLayout` onto pulumi-gcp, nothing more.

Decisions (GPU VPCs and NICs, ranges, image, scheduling, labels) are made in
`components.layout.gcp` (the key included); this package turns them into resources, one module per concern:
`network` (VPCs, subnets, firewall rules, Cloud NAT), `identity` (the nodes' service account and
its roles), `access` (the SSH rules, the login node, how to log in), `placement` (compact or
workload policy) and `nodes` (one instance template and a managed instance group, or N instances
from the template); with `scheduler: kubernetes`, `kubernetes` (a GKE cluster and its node pools)
stands in for `nodes`; with `scheduler: slurm`, `slurm` adds the head node and the MUNGE key's
secret; `serve` puts an internal passthrough load balancer in front of the managed group. Every resource is
parented to `CloudCluster`, so URNs do not depend on which module made it.
"""

from __future__ import annotations

from typing import Any

import pulumi

from ..bootstrap.metrics import endpoints
from ..layout.gcp import GcpLayout
from ..layout.gcp.labels import label_value
from .access import access_output, build_login, build_ssh_firewall, monitoring_output
from .budget import build_budget
from .encryption import build_encryption
from .health import build_health_check
from .identity import build_identity
from .kubernetes import build_kubernetes
from .network import build_nat, build_vpcs
from .nodes import build_nodes, build_partitions
from .observe import build_observe
from .placement import build_placement
from .scaling import build_scaling
from .serve import build_serving
from .slurm import build_head, build_power, login_script, slurm_output
from .storage import build_shared

TYPE = "gpu-cluster:gcp:Cluster"


class CloudCluster(pulumi.ComponentResource):
    """The GCP half of `GpuCluster`; children are parented here so the tree reads cloud-first."""

    outputs: dict[str, Any]

    def __init__(self, name: str, layout: GcpLayout, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(TYPE, name, {}, opts)
        self.layout = layout
        spec = layout.spec
        child = pulumi.ResourceOptions(parent=self)
        for message in layout.warnings:
            pulumi.log.warn(message, resource=self)

        # Registration order is kept as before the split; new concerns come after.
        self.network = build_vpcs(name, layout, child)
        self.ssh_firewall = build_ssh_firewall(name, layout, self.network, child)
        build_nat(name, layout, self.network, child)
        self.placement_policy = build_placement(name, layout, child)
        self.identity = build_identity(name, layout, child)
        self.health_check = build_health_check(name, layout, self.network, child)
        # encryption.key not provider: the key every disk and filesystem below is encrypted with (None: Google's)
        self.key = build_encryption(name, layout, self)
        self.budget = build_budget(name, layout, self)  # budget: the project's cost under the cluster's label
        self.shared = build_shared(name, layout, self.network, child, self.key)
        if layout.kubernetes is not None:
            self._kubernetes(name, layout, child)
            self.register_outputs(self.outputs)
            return
        source = self.shared.source if self.shared else None
        # scheduler slurm: the head first, the nodes and the login node are given its address
        self.slurm = build_head(name, layout, self.network, self.identity, child, source, self.key)
        if layout.partitions:  # elastic Slurm partitions: the head creates their nodes from their templates
            head = self.slurm.address if self.slurm else None
            self.nodes, templates = build_partitions(
                name, layout, self.network, self.identity, self, source, head, self.key
            )
            self.slurm = build_power(name, layout, self.slurm, templates, self.identity, child)
        else:
            self.nodes = build_nodes(
                name,
                layout,
                self.network,
                self.identity,
                self.placement_policy,
                self,
                self.health_check,
                source,
                self.slurm.address if self.slurm else None,
                self.key,
            )
        self.template = self.nodes.template
        head = self.slurm.address if self.slurm else None
        self.scaling = build_scaling(
            name, layout, self.network, self.identity, self.nodes, self, self.health_check, source, head
        )
        script = login_script(self.slurm, source)
        if script is None:  # VM mode: the self-hosted monitoring, the Ops Agent (None: no startup-script)
            script = layout.vm_login_script
        self.login = build_login(name, layout, self.network, self.identity, child, script, self.key)
        groups = [g for g in (self.nodes.group, self.scaling.floor_group if self.scaling else None) if g is not None]
        self.serving = build_serving(name, layout, self.network, groups, child)
        self.observe = build_observe(name, layout, self.key, self)  # monitoring.logs / notify

        self.outputs = {
            **self._network_outputs(layout),
            "imageId": self.nodes.image_id,
            "instanceTemplate": self.template.self_link_unique,
            "nodeGroup" if spec.node_group == "managed" else "instanceIds": self.nodes.ids,
            "placementGroup": self.placement_policy.self_link if self.placement_policy else None,
            "identity": self.identity.output(layout),
            "access": access_output(
                layout,
                self.login,
                self.nodes.instances[0] if self.nodes.instances else None,
                self.nodes.group.name if self.nodes.group else None,
            ),
            "monitoring": monitoring_output(layout, self.login),
        }
        if spec.node_group == "instances":
            # for a hostfile (mpirun / torchrun): nic0 of every node
            self.outputs["privateIps"] = pulumi.Output.all(
                *[inst.network_interfaces.apply(lambda nics: nics[0].network_ip) for inst in self.nodes.instances]
            )
        if self.login is not None:
            self.outputs["loginNode"] = self.login.name
        if self.shared is not None and layout.shared is not None:
            self.outputs["sharedFilesystem"] = self.shared.output(layout.shared)
        self.outputs["placementApplied"] = layout.placement_applied
        self.outputs["metrics"] = metrics_output(layout)
        if self.slurm is not None:
            self.outputs["slurm"] = slurm_output(self.slurm, self.outputs["access"])
        if self.scaling is not None:
            self.outputs["scaling"] = self.scaling.output(layout)
        if self.serving is not None and layout.serve is not None:
            self.outputs["serve"] = self.serving.output(layout.serve)
        self._encryption_output(layout)
        self.register_outputs(self.outputs)

    def _network_outputs(self, layout: GcpLayout) -> dict[str, Any]:
        net = self.network
        return {
            "vpcId": net.host.id,
            "subnetIds": pulumi.Output.all(net.subnets["nodes"].id),
            "gpuNetworkIds": pulumi.Output.all(*[n.id for role, n in net.networks.items() if role != "host"]),
            "securityGroupId": net.internal_firewall.id,
            "zone": layout.zone,
        }

    def _kubernetes(self, name: str, layout: GcpLayout, child: pulumi.ResourceOptions) -> None:
        """scheduler kubernetes: the GKE cluster and its pools stand in for the template and the group."""
        gke = build_kubernetes(name, layout, self.network, self.identity, self, self.key)
        self.kubernetes = gke
        self.login = build_login(name, layout, self.network, self.identity, child, key=self.key)
        self.observe = build_observe(name, layout, self.key, self)  # monitoring.logs: GKE's logs into the bucket
        assert layout.kubernetes is not None
        self.outputs = {
            **self._network_outputs(layout),
            "imageId": layout.kubernetes.image_type,
            "nodeGroup": gke.pools[-1].name,
            "placementGroup": None,
            "identity": self.identity.output(layout),
            "access": access_output(layout, self.login, None, None),
            "placementApplied": layout.placement_applied,
            "metrics": metrics_output(layout),
            "kubernetes": gke.output(layout),
            "kubeconfig": gke.kubeconfig,
        }
        if self.login is not None:
            self.outputs["loginNode"] = self.login.name
        self._encryption_output(layout)

    def _encryption_output(self, layout: GcpLayout) -> None:
        """`encryption`: the key and who may use it (absent with encryption.key provider: outputs as before)."""
        enc = layout.encryption
        if self.key is not None and enc is not None:
            self.outputs["encryption"] = self.key.output(enc)


def metrics_output(layout: GcpLayout) -> dict[str, Any]:
    """The exporters' endpoints on every node and how to list the targets (reachable from the host VPC only)."""
    if not layout.spec.dcgm_exporter:
        return {"endpoints": [], "scrape": "none: monitoring.dcgmExporter is false"}
    if layout.kubernetes is not None:
        return {
            "endpoints": [],
            "scrape": "GKE managed DCGM metrics (monitoringConfig DCGM): Cloud Monitoring, Managed Service for "
            f"Prometheus, project {layout.project}; no exporter port on the nodes",
        }
    filt = f"labels.gpu-cluster_cluster={label_value(layout.spec.name)}"
    if layout.access.login is not None:
        filt += " AND NOT labels.gpu-cluster_role:login"
    ports = [e.port for e in endpoints()]
    listing = (
        f'gcloud compute instances list --project {layout.project} --zones {layout.zone} --filter="{filt}" '
        '--format="value(networkInterfaces[0].networkIP)"'
    )
    return {
        "endpoints": [{"name": e.name, "port": e.port, "path": e.path} for e in endpoints()],
        "scrape": f"{listing}, then each IP:{ports[0]}/metrics and IP:{ports[1]}/metrics from inside the host VPC "
        f"({layout.spec.network.cidr})",
    }
