"""`scheduler: kubernetes` on Alibaba Cloud: an ACK Pro cluster with its Secrets encrypted by a KMS key, a
CPU system pool, the GPU pool, the eRDMA controller add-on and the in-cluster releases.

Everything is decided in `components.layout.alicloud` (`AckLayout`); this module maps it onto
pulumi-alicloud 4.0.0 `cs`. The cluster uses the network the VM mode builds (VPC, the nodes' vSwitch,
NAT egress, the nodes' security group): ACK creates no NAT and no internet load balancer, so the API
server is reachable from the VPC only. The GPU pool takes the layout's deployment set. Its ERIs are
wired by the ACK eRDMA Controller add-on (the node pool has no ERI argument), which calls the ECS API
through an RRSA role trusted for its own service account only.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_alicloud as alicloud

from .. import incluster
from ..layout.alicloud import AckGpuShare, AckLayout, AlicloudLayout, ErdmaController
from ..resources import invoke_options
from .context import Context
from .identity import allow_document, custom_grant
from .nodes import build_deployment_set


@dataclass(frozen=True)
class Kubernetes:
    secrets_key: alicloud.kms.Key
    cluster: alicloud.cs.ManagedKubernetes
    deployment_set: alicloud.ecs.EcsDeploymentSet | None
    system_pool: alicloud.cs.NodePool
    gpu_pool: alicloud.cs.NodePool
    erdma: alicloud.cs.KubernetesAddon | None
    kubeconfig: pulumi.Output[str]
    in_cluster: incluster.InCluster

    def output(self, layout: AlicloudLayout) -> dict[str, Any]:
        """The `kubernetes` stack output: what was built and how to reach it."""
        ack = layout.kubernetes
        assert ack is not None
        spec = layout.spec
        scaling = (
            {
                "autoscaling": {
                    "scaler": ack.autoscaler.scaler_type,
                    "minNodes": ack.min_nodes,
                    "maxNodes": ack.max_nodes,
                    # pending pods grow the pool only when they tolerate its taint (and request nvidia.com/gpu)
                    "gpuTaint": "{key}={value}:{effect}".format(**ack.gpu_taint),
                }
            }
            if ack.autoscaler
            else {}
        )
        return scaling | {
            "service": "ACK",
            "clusterName": self.cluster.name,
            "clusterId": self.cluster.id,
            # the API server's address inside the VPC (no internet endpoint is created)
            "endpoint": self.cluster.connections.apply(lambda c: c[0].api_server_intranet if c else None),
            "version": ack.version,
            "nodePools": [self.system_pool.node_pool_name, self.gpu_pool.node_pool_name],
            "credentials": self.cluster.id.apply(credentials_command),
            "gpuDriver": f"NVIDIA {ack.driver_version} (installed by ACK: node-pool label)",
            "erdma": erdma_output(ack.erdma),
            "gpuShare": gpu_share_output(ack.gpu_share),
            "releases": [
                {"name": r.name, "chart": r.chart, "version": r.version, "namespace": r.namespace} for r in ack.releases
            ],
            "region": spec.region,
        }


def credentials_command(cluster_id: str) -> str:
    """The kubeconfig for the API server's VPC address (ACK DescribeClusterUserKubeconfig), for the login node."""
    return f"aliyun cs GET /k8s/{cluster_id}/user_config --PrivateIpAddress true | jq -r .config > ~/.kube/config"


def gpu_share_output(share: AckGpuShare | None) -> dict[str, Any] | None:
    """ACK's shared GPU scheduling: what the pool is labelled and what each pod asks instead of nvidia.com/gpu."""
    if share is None:
        return None
    key, value = share.label
    return {
        "addon": share.addon,
        "nodeLabel": f"{key}={value}",
        "podRequest": f"{share.pod_resource}: {share.pod_gib}",
        "note": "ACK shares a GPU by memory: a pod asks for GiB of GPU memory, not for nvidia.com/gpu",
    }


def erdma_output(erdma: ErdmaController | None) -> dict[str, Any] | None:
    if erdma is None:
        return None
    return {
        "addon": erdma.addon,
        "erisPerNode": erdma.eris,
        "mtu": erdma.mtu,
        "wiredBy": "the add-on at node join (the node pool itself has no ERI argument in pulumi-alicloud 4.0.0)",
    }


def build(ctx: Context) -> Kubernetes:
    """The ACK cluster and its pools (the pools' disks take ctx.kms_key; their nodes get ACK's own role, not
    ctx.role_name)."""
    parent, name, layout, network, tags, child = ctx.parent, ctx.name, ctx.layout, ctx.network, ctx.tags, ctx.child
    ack = layout.kubernetes
    assert ack is not None  # scheduler kubernetes
    spec = layout.spec
    key = _secrets_key(name, layout, ack, tags, child)
    cluster = alicloud.cs.ManagedKubernetes(
        f"{name}-ack",
        name=spec.name,
        cluster_spec=ack.cluster_spec,
        version=ack.version,
        vswitch_ids=[network.vswitch.id],
        security_group_id=network.security_group.id,
        # the cluster's own network: egress is the VPC's NAT (network.py), the API server stays private
        new_nat_gateway=False,
        slb_internet_enabled=False,
        addons=[alicloud.cs.ManagedKubernetesAddonArgs(name=ack.network_addon)],
        pod_cidr=ack.pod_cidr,
        service_cidr=ack.service_cidr,
        proxy_mode=ack.proxy_mode,
        # the provider's own advice: do not keep the CA data in state
        skip_set_certificate_authority=True,
        # SDK: "you must explicitly set disable_encryption = false along with encryption_provider_key"
        encryption_provider_key=key.id,
        disable_encryption=False,
        enable_rrsa=True if ack.erdma else None,
        # ACK puts these on the nodes as Kubernetes labels: label-safe keys (layout.alicloud.kubernetes.ack_tags)
        tags=dict(ack.cluster_tags),
        opts=child,
    )
    deployment_set = build_deployment_set(ctx)
    security_groups = network.node_security_groups
    system_pool = alicloud.cs.NodePool(
        f"{name}-system",
        cluster_id=cluster.id,
        node_pool_name=f"{spec.name}-system",
        vswitch_ids=[network.vswitch.id],
        instance_types=[ack.system_instance_type],
        desired_size=str(ack.system_nodes),
        image_type=ack.image_type,
        system_disk_category="cloud_essd",
        system_disk_encrypted=True,
        system_disk_kms_key=ctx.kms_key,
        security_group_ids=security_groups,
        key_name=ctx.key_name,
        instance_metadata_options=_metadata_options(layout),
        tags={**tags, "Name": f"{spec.name}-system"},
        opts=_pool_options(child),
    )
    gpu_pool = _gpu_pool(ctx, ack, cluster, deployment_set)
    autoscaler = _autoscaler(ctx, ack, cluster)
    erdma = _erdma(parent, name, ack.erdma, cluster, tags) if ack.erdma else None
    share = (
        # ACK's shared GPU scheduling (ACK Pro): its add-on reads the GPU pool's ack.node.gpu.schedule label
        alicloud.cs.KubernetesAddon(
            f"{name}-gpu-share",
            cluster_id=cluster.id,
            name=ack.gpu_share.addon,
            opts=pulumi.ResourceOptions(parent=parent),
        )
        if ack.gpu_share
        else None
    )
    credential = alicloud.cs.get_cluster_credential_output(cluster_id=cluster.id, opts=invoke_options(parent))
    kubeconfig: pulumi.Output[str] = pulumi.Output.secret(credential.kube_config)
    waits: list[pulumi.Resource] = [system_pool, gpu_pool, *(r for r in (erdma, autoscaler, share) if r is not None)]
    in_cluster = incluster.install(name, kubeconfig, ack.releases, parent, depends_on=waits)
    return Kubernetes(key, cluster, deployment_set, system_pool, gpu_pool, erdma, kubeconfig, in_cluster)


def _secrets_key(
    name: str, layout: AlicloudLayout, ack: AckLayout, tags: Mapping[str, str], child: pulumi.ResourceOptions
) -> alicloud.kms.Key:
    data = ack.secrets_key
    return alicloud.kms.Key(
        f"{name}-k8s-secrets",
        description=f"gpu-cluster {layout.spec.name}: ACK Secrets encryption",
        key_spec=str(data["keySpec"]),
        key_usage=str(data["keyUsage"]),
        protection_level=str(data["protectionLevel"]),
        pending_window_in_days=int(data["pendingWindowInDays"]),
        tags=dict(tags),
        opts=child,
    )


def _gpu_pool(
    ctx: Context,
    ack: AckLayout,
    cluster: alicloud.cs.ManagedKubernetes,
    deployment_set: alicloud.ecs.EcsDeploymentSet | None,
) -> alicloud.cs.NodePool:
    layout, network, kms_key = ctx.layout, ctx.network, ctx.kms_key
    spec = layout.spec
    scaling = ack.autoscaler is not None
    disk = layout.scratch.device_gb if layout.scratch.kind == "disk" else None
    return alicloud.cs.NodePool(
        f"{ctx.name}-gpu",
        cluster_id=cluster.id,
        node_pool_name=f"{spec.name}-gpu",
        vswitch_ids=[network.vswitch.id],
        instance_types=[spec.instance.instanceType],
        deployment_set_id=deployment_set.id if deployment_set else None,
        # a fixed size, or the autoscaler's range (minNodes..maxNodes) when the pool may grow or shrink
        desired_size=None if scaling else str(ack.min_nodes),
        scaling_config=(
            alicloud.cs.NodePoolScalingConfigArgs(enable=True, min_size=ack.min_nodes, max_size=ack.max_nodes)
            if scaling
            else None
        ),
        image_type=ack.image_type,
        labels=[alicloud.cs.NodePoolLabelArgs(key=k, value=v) for k, v in ack.gpu_labels.items()],
        taints=[
            alicloud.cs.NodePoolTaintArgs(
                key=ack.gpu_taint["key"], value=ack.gpu_taint["value"], effect=ack.gpu_taint["effect"]
            )
        ],
        spot_strategy="SpotAsPriceGo" if layout.spot else "NoSpot",
        spot_instance_remedy=True if layout.spot else None,
        private_pool_options=(
            alicloud.cs.NodePoolPrivatePoolOptionsArgs(
                private_pool_options_match_criteria="Target", private_pool_options_id=layout.private_pool_id
            )
            if layout.private_pool_id
            else None
        ),
        system_disk_category="cloud_essd",
        system_disk_size=layout.root_gb,
        system_disk_encrypted=True,
        system_disk_kms_key=kms_key,
        data_disks=(
            [
                alicloud.cs.NodePoolDataDiskArgs(
                    category="cloud_essd",
                    size=int(disk),
                    performance_level=layout.scratch_performance_level,
                    encrypted="true",
                    kms_key_id=kms_key,
                    name=f"{spec.name}-scratch",
                )
            ]
            if disk
            else None
        ),
        security_group_ids=network.node_security_groups,
        key_name=ctx.key_name,
        pre_user_data=ack.pre_user_data_b64,
        user_data=ack.user_data_b64,
        instance_metadata_options=_metadata_options(layout),
        tags={**ctx.tags, "Name": f"{spec.name}-gpu"},
        opts=_pool_options(ctx.child),
    )


def _metadata_options(layout: AlicloudLayout) -> alicloud.cs.NodePoolInstanceMetadataOptionsArgs:
    return alicloud.cs.NodePoolInstanceMetadataOptionsArgs(http_tokens=layout.metadata_http_tokens)


def _pool_options(child: pulumi.ResourceOptions) -> pulumi.ResourceOptions:
    """A pool's options: its metadata mode is set when the pool is created and never changed after. The provider
    makes instance_metadata_options ForceNew (diff/replacement/alicloud.yaml cs/nodePool): a pool deployed before the
    hardened default keeps its mode rather than be replaced with every node on it (docs/alicloud.md)."""
    return pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(ignore_changes=["instanceMetadataOptions"]))


def _autoscaler(
    ctx: Context, ack: AckLayout, cluster: alicloud.cs.ManagedKubernetes
) -> alicloud.cs.AutoscalingConfig | None:
    """ACK's "Configure Auto Scaling": deploys its cluster-autoscaler, which sizes the GPU pool on pending pods."""
    conf = ack.autoscaler
    if conf is None:
        return None
    return alicloud.cs.AutoscalingConfig(
        f"{ctx.name}-autoscaler",
        cluster_id=cluster.id,
        scaler_type=conf.scaler_type,
        expander=conf.expander,
        scale_down_enabled=conf.scale_down_enabled,
        scale_up_from_zero=conf.scale_up_from_zero,
        opts=ctx.child,
    )


def erdma_trust_policy(erdma: ErdmaController, oidc_arn: str, issuer: str) -> str:
    """Trust the cluster's OIDC provider for the add-on's own service account only (ack-ram-tool's statement)."""
    statement = {
        "Action": "sts:AssumeRole",
        "Condition": {
            "StringEquals": {
                "oidc:aud": "sts.aliyuncs.com",
                "oidc:iss": issuer,
                "oidc:sub": f"system:serviceaccount:{erdma.namespace}:{erdma.service_account}",
            }
        },
        "Effect": "Allow",
        "Principal": {"Federated": [oidc_arn]},
    }
    return json.dumps({"Statement": [statement], "Version": "1"}, sort_keys=True)


def _erdma(
    parent: pulumi.Resource,
    name: str,
    erdma: ErdmaController,
    cluster: alicloud.cs.ManagedKubernetes,
    tags: Mapping[str, str],
) -> alicloud.cs.KubernetesAddon:
    child = pulumi.ResourceOptions(parent=parent)
    meta = cluster.rrsa_metadata
    role = alicloud.ram.Role(
        f"{name}-erdma-role",
        # the name the add-on looks for: <addon>-<cluster id> (catalog/kubernetes/alicloud.yaml erdmaController.rrsa)
        role_name=cluster.id.apply(lambda cid: f"{erdma.role_prefix}{cid}"),
        assume_role_policy_document=pulumi.Output.all(meta.ram_oidc_provider_arn, meta.rrsa_oidc_issuer_url).apply(
            lambda values: erdma_trust_policy(erdma, str(values[0]), str(values[1]))
        ),
        description="gpu-cluster: ACK eRDMA Controller (RRSA), creates and attaches the nodes' ERIs",
        tags=dict(tags),
        opts=child,
    )
    grant = custom_grant(
        parent,
        (f"{name}-erdma-policy", f"{name}-erdma-grant"),
        cluster.id.apply(lambda cid: f"{erdma.role_prefix}{cid}"),
        "gpu-cluster: what the ACK eRDMA Controller calls (ack-ram-tool's addon policy)",
        allow_document(erdma.actions, ["*"]),
        role.role_name,
    )
    return alicloud.cs.KubernetesAddon(
        f"{name}-erdma",
        cluster_id=cluster.id,
        name=erdma.addon,
        config=erdma.config,
        # the controller needs its role before it reconciles the first node
        opts=pulumi.ResourceOptions(parent=parent, depends_on=[grant.attachment]),
    )
