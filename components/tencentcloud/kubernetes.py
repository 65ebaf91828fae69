"""`scheduler: kubernetes` on Tencent Cloud: a managed TKE cluster, its API endpoint, a CPU system pool, the GPU pool
and the in-cluster releases.

Everything is decided in `components.layout.tencentcloud.kubernetes` (`TkeLayout`); this module maps it onto
tencentcloud-iac-pulumi 0.2.3 `kubernetes`. The cluster uses the network the VM mode builds (VPC, the nodes' subnet,
NAT egress, the nodes' security group). Both pools are TKE node pools (an auto scaling group each) whose nodes take
the nodes' CAM role and key pair. The API server's endpoint is a `ClusterEndpoint` (the cluster's own
cluster_intranet needs worker_config, which node pools replace): inside the VPC always, on the internet only with
kubernetes.publicEndpoint, behind a security group admitting publicCidrs alone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import tencentcloud_iac_pulumi as tencentcloud

from .. import incluster
from ..layout.tencentcloud import TencentLayout, TkeLayout
from ..layout.tencentcloud.nodes import DISK_TYPE
from .network import Network


@dataclass(frozen=True)
class Kubernetes:
    cluster: tencentcloud.kubernetes.Cluster
    secrets_key: tencentcloud.kms.Key
    encryption: tencentcloud.kubernetes.EncryptionProtection
    endpoint: tencentcloud.kubernetes.ClusterEndpoint
    api_security_group: tencentcloud.security.Group | None
    system_pool: tencentcloud.kubernetes.NodePool
    gpu_pool: tencentcloud.kubernetes.NodePool
    kubeconfig: pulumi.Output[str]
    in_cluster: incluster.InCluster

    def output(self, layout: TencentLayout) -> dict[str, Any]:
        """The `kubernetes` stack output: what was built and how to reach it."""
        tke = layout.kubernetes
        assert tke is not None
        scaling = (
            {
                "autoscaling": {
                    "scaler": "TKE cluster autoscaler (node pool enable_auto_scale)",
                    "minNodes": tke.min_nodes,
                    "maxNodes": tke.max_nodes,
                    "gpuTaint": "{key}={value}:{effect}".format(**tke.gpu_taint),
                }
            }
            if tke.autoscale
            else {}
        )
        endpoint = self.endpoint.cluster_external_endpoint if tke.public_endpoint else self.endpoint.pgw_endpoint
        return scaling | {
            "service": "TKE",
            "clusterName": self.cluster.cluster_name,
            "clusterId": self.cluster.id,
            "endpoint": endpoint,
            "version": tke.version,
            "nodePools": [self.system_pool.name, self.gpu_pool.name],
            "credentials": self.cluster.id.apply(lambda cid: credentials_command(cid, layout.spec.region)),
            "gpuDriver": "NVIDIA's driver container of the GPU operator (TKE installs none: catalog/kubernetes/"
            "tencentcloud.yaml gpuDriverRefused)",
            "releases": [
                {"name": r.name, "chart": r.chart, "version": r.version, "namespace": r.namespace} for r in tke.releases
            ],
            "region": layout.spec.region,
        }


def _log_agent(layout: TencentLayout) -> bool:
    return layout.logs is not None and layout.logs.tke is not None and layout.logs.tke.log_agent


def credentials_command(cluster_id: str, region: str) -> str:
    """The kubeconfig (TKE DescribeClusterKubeconfig; its server is the VPC address without IsExtranet)."""
    return f"tccli tke DescribeClusterKubeconfig --region {region} --ClusterId {cluster_id} | jq -r .Kubeconfig"


def build(
    parent: pulumi.Resource,
    name: str,
    layout: TencentLayout,
    network: Network,
    key_ids: Sequence[pulumi.Input[str]] | None,
    role_name: pulumi.Output[str],
    tags: Mapping[str, str],
) -> Kubernetes:
    tke = layout.kubernetes
    assert tke is not None  # scheduler kubernetes
    spec = layout.spec
    child = pulumi.ResourceOptions(parent=parent)
    cluster = tencentcloud.kubernetes.Cluster(
        f"{name}-tke",
        vpc_id=network.vpc.id,
        cluster_name=spec.name,
        cluster_desc=f"gpu-cluster {spec.name}",
        cluster_version=tke.version,
        cluster_deploy_type=tke.deploy_type,
        network_type=tke.network_type,
        container_runtime=tke.container_runtime,
        cluster_cidr=tke.pod_cidr,
        service_cidr=tke.service_cidr,
        cluster_max_pod_num=tke.max_pods_per_node,
        cluster_max_service_num=tke.max_services,
        cluster_os=tke.node_os,
        # monitoring.logs: TKE's log components (layout/tencentcloud/tke_logs.py); absent without, as before
        log_agent=tencentcloud.kubernetes.ClusterLogAgentArgs(enabled=True) if _log_agent(layout) else None,
        tags=dict(tags),
        opts=child,
    )
    # the cluster's Secrets wrapped with a KMS key of its own before etcd (policy kubernetes-secrets-encryption)
    key_data = tke.secrets_key
    secrets_key = tencentcloud.kms.Key(
        f"{name}-tke-secrets",
        alias=f"{spec.name}-tke-secrets",
        description=f"gpu-cluster {spec.name}: TKE Secrets encryption",
        key_usage=str(key_data["keyUsage"]),
        is_enabled=bool(key_data["isEnabled"]),
        pending_delete_window_in_days=int(key_data["pendingDeleteWindowInDays"]),
        tags=dict(tags),
        opts=child,
    )
    encryption = tencentcloud.kubernetes.EncryptionProtection(
        f"{name}-tke-secrets-encryption",
        cluster_id=cluster.id,
        kms_configuration=tencentcloud.kubernetes.EncryptionProtectionKmsConfigurationArgs(
            key_id=secrets_key.id, kms_region=spec.region
        ),
        opts=child,
    )
    pool = _Pool(layout, tke, cluster, network, key_ids, role_name, tags, child)
    system_pool = pool.build(
        f"{name}-system",
        tke.system_pool_name,
        tke.system_instance_type,
        (tke.system_nodes, tke.system_nodes, tke.system_nodes),
        gpu=False,
    )
    gpu_pool = pool.build(
        f"{name}-gpu",
        tke.gpu_pool_name,
        spec.instance.instanceType,
        (tke.min_nodes, tke.desired_nodes, tke.max_nodes),
        gpu=True,
    )
    api_sg = _api_security_group(parent, name, layout, tke, tags) if tke.public_endpoint else None
    endpoint = tencentcloud.kubernetes.ClusterEndpoint(
        f"{name}-tke-endpoint",
        cluster_id=cluster.id,
        cluster_intranet=True,
        cluster_intranet_subnet_id=network.subnet.id,
        cluster_internet=tke.public_endpoint,
        cluster_internet_security_group=api_sg.id if api_sg else None,
        # "only cluster with node is allowed enable access endpoint" (kubernetes/cluster.py cluster_intranet)
        opts=pulumi.ResourceOptions(parent=parent, depends_on=[system_pool]),
    )
    config = endpoint.kube_config if tke.public_endpoint else endpoint.kube_config_intranet
    kubeconfig: pulumi.Output[str] = pulumi.Output.secret(config)
    in_cluster = incluster.install(name, kubeconfig, tke.releases, parent, depends_on=[endpoint, system_pool, gpu_pool])
    return Kubernetes(cluster, secrets_key, encryption, endpoint, api_sg, system_pool, gpu_pool, kubeconfig, in_cluster)


@dataclass(frozen=True)
class _Pool:
    """What both node pools share: the cluster, the subnet, the nodes' group, key pair, role and tags."""

    layout: TencentLayout
    tke: TkeLayout
    cluster: tencentcloud.kubernetes.Cluster
    network: Network
    key_ids: Sequence[pulumi.Input[str]] | None
    role_name: pulumi.Output[str]
    tags: Mapping[str, str]
    child: pulumi.ResourceOptions

    def build(
        self, resource: str, pool_name: str, instance_type: str, sizes: tuple[int, int, int], *, gpu: bool
    ) -> tencentcloud.kubernetes.NodePool:
        layout, tke = self.layout, self.tke
        low, desired, high = sizes
        scale = gpu and tke.autoscale
        spot = gpu and layout.spot
        scratch = tke.scratch_gb if gpu else None
        return tencentcloud.kubernetes.NodePool(
            resource,
            name=pool_name,
            cluster_id=self.cluster.id,
            vpc_id=self.network.vpc.id,
            subnet_ids=[self.network.subnet.id],
            node_os=tke.node_os,
            min_size=low,
            max_size=high,
            # a fixed size, or the autoscaler's (desired_capacity is computed with enable_auto_scale)
            desired_capacity=None if scale else desired,
            enable_auto_scale=scale,
            # the pool's nodes go with it (the SDK's default keeps them: delete_keep_instance "Default is `true`")
            delete_keep_instance=False,
            auto_scaling_config=tencentcloud.kubernetes.NodePoolAutoScalingConfigArgs(
                instance_type=instance_type,
                system_disk_type=DISK_TYPE,
                system_disk_size=layout.root_gb,
                data_disks=(
                    [
                        tencentcloud.kubernetes.NodePoolAutoScalingConfigDataDiskArgs(
                            disk_type=DISK_TYPE,
                            disk_size=scratch,
                            encrypt=True,
                            delete_with_instance=tke.scratch_delete_with_node,
                        )
                    ]
                    if scratch
                    else None
                ),
                orderly_security_group_ids=[self.network.security_group.id],
                key_ids=self.key_ids,
                cam_role_name=self.role_name,
                public_ip_assigned=False,
                # spot: SPOTPAID needs spot_instance_type and spot_max_price together (docstring)
                instance_charge_type="SPOTPAID" if spot else "POSTPAID_BY_HOUR",
                spot_instance_type="one-time" if spot else None,
                spot_max_price=layout.spot_max_price if spot else None,
                instance_name=pool_name,
            ),
            node_config=tencentcloud.kubernetes.NodePoolNodeConfigArgs(
                # TKE formats and mounts the scratch disk (no gpu-cluster bootstrap on TKE nodes)
                data_disks=[
                    tencentcloud.kubernetes.NodePoolNodeConfigDataDiskArgs(
                        disk_type=DISK_TYPE,
                        disk_size=scratch,
                        file_system=tke.scratch_file_system,
                        auto_format_and_mount=True,
                        mount_target=tke.scratch_path,
                    )
                ]
                if scratch
                else None,
            ),
            labels=dict(tke.gpu_labels) if gpu else None,
            taints=(
                [
                    tencentcloud.kubernetes.NodePoolTaintArgs(
                        key=tke.gpu_taint["key"], value=tke.gpu_taint["value"], effect=tke.gpu_taint["effect"]
                    )
                ]
                if gpu
                else None
            ),
            tags={**self.tags, "Name": pool_name},
            opts=self.child,
        )


def _api_security_group(
    parent: pulumi.Resource, name: str, layout: TencentLayout, tke: TkeLayout, tags: Mapping[str, str]
) -> tencentcloud.security.Group:
    """The public API endpoint's group: HTTPS from kubernetes.publicCidrs only."""
    child = pulumi.ResourceOptions(parent=parent)
    sg = tencentcloud.security.Group(
        f"{name}-tke-api-sg",
        name=f"{layout.spec.name}-tke-api",
        description=f"gpu-cluster {layout.spec.name}: TKE API server, kubernetes.publicCidrs only",
        tags=dict(tags),
        opts=child,
    )
    tencentcloud.security.GroupRuleSet(
        f"{name}-tke-api-rules",
        security_group_id=sg.id,
        ingresses=[
            tencentcloud.security.GroupRuleSetIngressArgs(
                action="ACCEPT", cidr_block=cidr, protocol="TCP", port=str(tke.api_port), description="TKE API"
            )
            for cidr in tke.public_cidrs
        ],
        opts=child,
    )
    return sg
