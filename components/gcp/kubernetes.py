"""`scheduler: kubernetes` on GCP: a GKE Standard cluster on the cluster's own VPCs (layout: `GcpLayout.kubernetes`).

- The control plane: regional (the zone's GPU pool in `nodeLocations`), VPC-native on the host subnet's
  pods/services ranges, private nodes, the API endpoint private unless `kubernetes.publicEndpoint` (then only
  `publicCidrs`), the minor version pinned and held (a channel plus a no-minor-or-node-upgrades exclusion),
  Kubernetes Secrets envelope-encrypted with a Cloud KMS key of the cluster's own, Dataplane V2 and
  multi-networking when the GPU pool has extra node networks, GKE's managed DCGM metrics.
- Two node pools: the system pool (CPU) and the GPU pool, both on the nodes' service account, Shielded,
  gVNIC, boot disks on the same KMS key. The GPU pool carries the GPU VPCs of the VM layout as
  `additionalNodeNetworkConfigs`, compact placement, the reservation, spot, GKE's driver installation, the
  local SSDs behind ephemeral storage, the GPU taint and labels.
- In-cluster (through a provider on the cluster's kubeconfig): one `GKENetworkParamSet` + `Network` per
  extra node network, Google's NCCL plugin DaemonSets for the fabric, and the `releases:` of the data (none
  on GKE: GKE runs the driver and the device plugin itself).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_gcp as gcp

from .. import incluster
from ..layout.gcp import GcpLayout, Gke, GkePool
from ..layout.kubernetes import Manifest, Release, releases
from ..resources import invoke_options
from .encryption import Key
from .identity import Identity
from .network import Network

SCOPE_URL = "https://www.googleapis.com/auth/{}"  # the node pools take full scope URLs
# GKE's own kubeconfig form: credentials from gcloud through the auth plugin, nothing secret in the file but the
# cluster's CA (cloud.google.com/kubernetes-engine/docs/how-to/cluster-access-for-kubectl, gke-gcloud-auth-plugin)
KUBECONFIG = """apiVersion: v1
kind: Config
clusters:
- name: {name}
  cluster:
    server: https://{endpoint}
    certificate-authority-data: {ca}
contexts:
- name: {name}
  context:
    cluster: {name}
    user: {name}
current-context: {name}
users:
- name: {name}
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      command: gke-gcloud-auth-plugin
      installHint: Install gke-gcloud-auth-plugin (gcloud components install gke-gcloud-auth-plugin)
      provideClusterInfo: true
"""


@dataclass
class Kubernetes:
    cluster: gcp.container.Cluster
    pools: list[gcp.container.NodePool]
    key: pulumi.Input[str]  # the KMS key's id: the cluster's own, or encryption.key's (gcp/encryption.py)
    kubeconfig: pulumi.Output[str]
    releases: tuple[Release, ...]
    installed: incluster.InCluster
    objects: list[Any]

    def output(self, layout: GcpLayout) -> dict[str, Any]:
        """The `kubernetes` output: what was built and how to reach it."""
        gke = layout.kubernetes
        assert gke is not None
        where = f"--location {layout.spec.region} --project {layout.project}"
        internal = "" if gke.public_endpoint else " --internal-ip"
        return {
            "clusterName": self.cluster.name,
            "endpoint": self.cluster.endpoint,
            "version": gke.version,
            "nodePools": [p.name for p in gke.pools],
            # a private endpoint answers inside the host VPC only (the login node, IAP, a VPN)
            "credentials": self.cluster.name.apply(
                lambda n: f"gcloud container clusters get-credentials {n} {where}{internal}"
            ),
            "releases": [{"name": r.name, "chart": r.chart, "version": r.version} for r in self.releases],
            "gpuSoftware": f"GKE installs the NVIDIA driver (gpuDriverVersion {gke.gpu_driver_version}) and runs its "
            "device plugin; GPU metrics: GKE managed DCGM" + ("" if layout.spec.dcgm_exporter else " (off)"),
            "fabricWorkloads": [
                {"name": d["metadata"]["name"], "source": gke.fabric_source, "images": _images(d)}
                for d in gke.daemonsets
            ],
            "networks": [n.name for n in gke.gpu.networks],
        }


def _images(daemonset: Mapping[str, Any]) -> list[str]:
    pod = daemonset["spec"]["template"]["spec"]
    return [str(c["image"]) for c in (*pod.get("initContainers", []), *pod["containers"])]


def build_kubernetes(
    name: str, layout: GcpLayout, net: Network, identity: Identity, parent: pulumi.Resource, cmek: Key | None = None
) -> Kubernetes:
    gke = layout.kubernetes
    assert gke is not None
    child = pulumi.ResourceOptions(parent=parent)
    # encryption.key not provider: one key per cluster, its grants include the GKE agent (layout.gcp.encryption)
    key: pulumi.Input[str]
    if cmek is not None:
        key, grants = cmek.id, list(cmek.grants)
    else:
        made, grants = _key(name, layout, gke, parent)
        key = made.id
    cluster = _cluster(name, layout, gke, net, key, pulumi.ResourceOptions(parent=parent, depends_on=grants))
    pools = [_pool(name, layout, gke, pool, cluster, net, identity, key, child) for pool in gke.pools]
    kubeconfig: pulumi.Output[str] = pulumi.Output.all(
        cluster.name, cluster.endpoint, cluster.master_auth.cluster_ca_certificate
    ).apply(lambda a: KUBECONFIG.format(name=a[0], endpoint=a[1], ca=a[2]))
    kubeconfig = pulumi.Output.secret(kubeconfig)
    charts = releases(layout.spec)
    installed = incluster.install(name, kubeconfig, charts, parent, depends_on=pools)
    objects = incluster.apply(name, installed.provider, _manifests(gke, net), parent)
    return Kubernetes(cluster, pools, key, kubeconfig, charts, installed, objects)


def _key(
    name: str, layout: GcpLayout, gke: Gke, parent: pulumi.Resource
) -> tuple[gcp.kms.CryptoKey, list[gcp.kms.CryptoKeyIAMMember]]:
    """The cluster's own KMS key (Secrets, node boot disks) and the two service agents' use of it."""
    child = pulumi.ResourceOptions(parent=parent)
    project = layout.project or None
    # no names: GCP never deletes key rings and keys, so a fixed name would collide when a stack is recreated
    ring = gcp.kms.KeyRing(f"{name}-gke-keyring", location=layout.spec.region, project=project, opts=child)
    key = gcp.kms.CryptoKey(
        f"{name}-gke-key", key_ring=ring.id, purpose="ENCRYPT_DECRYPT", labels=dict(layout.labels), opts=child
    )
    number = gcp.organizations.get_project_output(project_id=project, opts=invoke_options(parent)).number
    grants = [
        gcp.kms.CryptoKeyIAMMember(
            f"{name}-gke-key-{who}",
            crypto_key_id=key.id,
            role=gke.key_role,
            member=number.apply(lambda n, agent=agent: f"serviceAccount:{agent.format(projectNumber=n)}"),
            opts=child,
        )
        for who, agent in (("secrets", gke.secrets_agent), ("disks", gke.disks_agent))
    ]
    return key, grants


def _cluster(
    name: str, layout: GcpLayout, gke: Gke, net: Network, key: pulumi.Input[str], opts: pulumi.ResourceOptions
) -> gcp.container.Cluster:
    spec = layout.spec
    c = gcp.container
    exclusion = gke.exclusion
    return c.Cluster(
        f"{name}-gke",
        name=gke.name,
        project=layout.project or None,
        location=spec.region,  # a regional control plane; the pools stay in the nodes' zone
        node_locations=[layout.zone],
        network=net.host.id,
        subnetwork=net.subnets["nodes"].id,
        networking_mode="VPC_NATIVE",
        ip_allocation_policy=c.ClusterIpAllocationPolicyArgs(
            cluster_secondary_range_name=gke.pods_range, services_secondary_range_name=gke.services_range
        ),
        # the pools are ours: the default pool is removed once the cluster exists (it needs one node meanwhile)
        remove_default_node_pool=True,
        initial_node_count=1,
        min_master_version=gke.version,
        release_channel=c.ClusterReleaseChannelArgs(channel=gke.release_channel),
        maintenance_policy=c.ClusterMaintenancePolicyArgs(
            daily_maintenance_window=c.ClusterMaintenancePolicyDailyMaintenanceWindowArgs(start_time=gke.daily_window),
            maintenance_exclusions=[
                c.ClusterMaintenancePolicyMaintenanceExclusionArgs(
                    exclusion_name=exclusion["exclusionName"],
                    start_time=exclusion["startTime"],
                    exclusion_options=c.ClusterMaintenancePolicyMaintenanceExclusionExclusionOptionsArgs(
                        scope=exclusion["scope"], end_time_behavior=exclusion["endTimeBehavior"]
                    ),
                )
            ],
        ),
        private_cluster_config=c.ClusterPrivateClusterConfigArgs(
            enable_private_nodes=True, enable_private_endpoint=not gke.public_endpoint
        ),
        master_authorized_networks_config=c.ClusterMasterAuthorizedNetworksConfigArgs(
            cidr_blocks=[
                c.ClusterMasterAuthorizedNetworksConfigCidrBlockArgs(
                    cidr_block=cidr, display_name="kubernetes.publicCidrs" if gke.public_endpoint else "host VPC"
                )
                for cidr in gke.authorized_cidrs
            ],
            gcp_public_cidrs_access_enabled=False,
        ),
        # the DNS-based endpoint stays internal too
        control_plane_endpoints_config=c.ClusterControlPlaneEndpointsConfigArgs(
            dns_endpoint_config=c.ClusterControlPlaneEndpointsConfigDnsEndpointConfigArgs(allow_external_traffic=False)
        ),
        master_auth=c.ClusterMasterAuthArgs(
            client_certificate_config=c.ClusterMasterAuthClientCertificateConfigArgs(issue_client_certificate=False)
        ),
        database_encryption=c.ClusterDatabaseEncryptionArgs(state="ENCRYPTED", key_name=key),
        # multi-networking needs GKE Dataplane V2 (providers.md section 1; Cluster Toolkit gke-cluster main.tf)
        datapath_provider="ADVANCED_DATAPATH" if gke.multi_networking else None,
        enable_multi_networking=True if gke.multi_networking else None,
        enable_shielded_nodes=True,
        workload_identity_config=c.ClusterWorkloadIdentityConfigArgs(workload_pool=f"{layout.project}.svc.id.goog"),
        monitoring_config=c.ClusterMonitoringConfigArgs(
            enable_components=list(gke.monitoring_components),
            managed_prometheus=c.ClusterMonitoringConfigManagedPrometheusArgs(enabled=True),
        ),
        resource_labels=dict(layout.labels),
        # deleting the control plane deletes every workload and Secret: `pulumi destroy` needs this set false first
        deletion_protection=True,
        # no description: it is ForceNew (terraform-provider-google resource_container_cluster.go), and a
        # replaced control plane loses every Kubernetes object
        opts=opts,
    )


def _pool(
    name: str,
    layout: GcpLayout,
    gke: Gke,
    pool: GkePool,
    cluster: gcp.container.Cluster,
    net: Network,
    identity: Identity,
    key: pulumi.Input[str],
    child: pulumi.ResourceOptions,
) -> gcp.container.NodePool:
    c = gcp.container
    autoscale = pool.autoscaled
    accelerator = (
        [
            c.NodePoolNodeConfigGuestAcceleratorArgs(
                type=pool.accelerator[0],
                count=pool.accelerator[1],
                gpu_driver_installation_config=c.NodePoolNodeConfigGuestAcceleratorGpuDriverInstallationConfigArgs(
                    gpu_driver_version=gke.gpu_driver_version
                ),
                gpu_sharing_config=c.NodePoolNodeConfigGuestAcceleratorGpuSharingConfigArgs(
                    gpu_sharing_strategy=pool.sharing[0], max_shared_clients_per_gpu=pool.sharing[1]
                )
                if pool.sharing
                else None,
                gpu_partition_size=pool.partition,
            )
        ]
        if pool.accelerator
        else None
    )
    reservation = (
        c.NodePoolNodeConfigReservationAffinityArgs(
            consume_reservation_type="SPECIFIC_RESERVATION",
            key="compute.googleapis.com/reservation-name",
            values=[pool.reservation],
        )
        if pool.reservation
        else None
    )
    extra = [
        c.NodePoolNetworkConfigAdditionalNodeNetworkConfigArgs(
            network=net.networks[n.vpc].name, subnetwork=net.subnets[n.subnet].name
        )
        for n in pool.networks
    ]
    return c.NodePool(
        f"{name}-pool-{pool.name}",
        name=pool.name,
        cluster=cluster.id,
        location=layout.spec.region,
        node_locations=[layout.zone],
        # initialNodeCount replaces the pool when it changes (gcp.yaml container/nodePool), so it is given once and
        # ignored after: the size lives in nodeCount, or in the autoscaler's bounds (minNodes..maxNodes) when it scales
        node_count=None if autoscale else pool.nodes,
        initial_node_count=pool.nodes,
        autoscaling=c.NodePoolAutoscalingArgs(total_min_node_count=pool.floor, total_max_node_count=pool.max_nodes)
        if autoscale
        else None,
        # a channel-enrolled cluster keeps node auto-upgrade on; the maintenance exclusion holds the version
        management=c.NodePoolManagementArgs(auto_repair=True, auto_upgrade=True),
        placement_policy=c.NodePoolPlacementPolicyArgs(type="COMPACT") if pool.compact else None,
        upgrade_settings=c.NodePoolUpgradeSettingsArgs(
            strategy="SURGE", max_surge=pool.surge[0], max_unavailable=pool.surge[1]
        )
        if pool.surge is not None
        else None,
        network_config=c.NodePoolNetworkConfigArgs(
            enable_private_nodes=True, additional_node_network_configs=extra or None
        ),
        node_config=c.NodePoolNodeConfigArgs(
            machine_type=pool.machine_type,
            image_type=gke.image_type,
            disk_size_gb=pool.disk_gb,
            disk_type=pool.disk_type,
            boot_disk_kms_key=key,
            service_account=identity.email,
            oauth_scopes=[SCOPE_URL.format(s) for s in identity.scopes],
            labels=dict(pool.labels) or None,
            taints=[c.NodePoolNodeConfigTaintArgs(**t) for t in pool.taints] or None,
            guest_accelerators=accelerator,
            ephemeral_storage_local_ssd_config=c.NodePoolNodeConfigEphemeralStorageLocalSsdConfigArgs(
                local_ssd_count=pool.local_ssd_count
            )
            if pool.local_ssd_count
            else None,
            spot=pool.spot or None,
            reservation_affinity=reservation,
            gvnic=c.NodePoolNodeConfigGvnicArgs(enabled=True),
            shielded_instance_config=c.NodePoolNodeConfigShieldedInstanceConfigArgs(
                enable_secure_boot=gke.secure_boot, enable_integrity_monitoring=True
            ),
            workload_metadata_config=c.NodePoolNodeConfigWorkloadMetadataConfigArgs(mode="GKE_METADATA"),
            metadata={"disable-legacy-endpoints": "true"},
            resource_labels=dict(layout.labels),
        ),
        opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(ignore_changes=["initialNodeCount"])),
    )


def _manifests(gke: Gke, net: Network) -> list[Manifest]:
    """One GKENetworkParamSet and one Network per extra node network, then the fabric's DaemonSets."""
    out: list[Manifest] = []
    for n in gke.gpu.networks:
        params = {"vpc": net.networks[n.vpc].name, "vpcSubnet": net.subnets[n.subnet].name, "deviceMode": n.device_mode}
        network = {
            "parametersRef": {"group": "networking.gke.io", "kind": "GKENetworkParamSet", "name": n.name},
            "type": "Device",
        }
        out += [
            Manifest(
                api_version=gke.network_api_version,
                kind=kind,
                name=n.name,
                namespace=None,
                spec=spec,
                after=None,
                why="the workloads' networking.gke.io/interfaces name this network",
            )
            for kind, spec in (("GKENetworkParamSet", params), ("Network", network))
        ]
    for d in gke.daemonsets:
        out.append(
            Manifest(
                api_version=str(d["apiVersion"]),
                kind=str(d["kind"]),
                name=str(d["metadata"]["name"]),
                namespace=d["metadata"].get("namespace"),
                spec=d["spec"],
                after=None,
                why=f"the NCCL plugin for the fabric ({gke.fabric_source})",
            )
        )
    return out
