"""`scheduler: kubernetes` on Huawei Cloud: a CCE Standard cluster with a private API server, a CPU system pool, the
GPU pool, CCE's gpu-beta add-on (the NVIDIA driver and device plugin) and the in-cluster releases.

Everything is decided in `components.layout.huaweicloud.kubernetes` (`CceLayout`); this module maps it onto
pulumi-huaweicloud 0.0.12 `cce`. The cluster uses the VPC and subnet the VM mode builds (NAT egress): no EIP is bound
to the API server (cce.Cluster eip unset), so it is reachable from the VPC only. Both pools' system and data disks are
encrypted with the cluster's DEW key, and their nodes act as the cluster's IAM agency (extend_params agency_name).
The nodes' security group is CCE's own (security_group_id unset): CCE opens the ports its master and nodes need.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_huaweicloud as huaweicloud

from .. import incluster
from ..layout.huaweicloud import AutoscalerAddon, CceLayout, HuaweiLayout
from .network import Network


@dataclass(frozen=True)
class Kubernetes:
    cluster: huaweicloud.cce.Cluster
    system_pool: huaweicloud.cce.NodePool
    gpu_pool: huaweicloud.cce.NodePool
    addon: huaweicloud.cce.Addon
    kubeconfig: pulumi.Output[str]
    in_cluster: incluster.InCluster
    autoscaler: huaweicloud.cce.Addon | None  # CCE's autoscaler add-on when the GPU pool has a range

    def output(self, layout: HuaweiLayout) -> dict[str, Any]:
        """The `kubernetes` stack output: what was built and how to reach it (the kubeconfig is its own secret
        output)."""
        cce = layout.kubernetes
        assert cce is not None
        return {
            "service": "CCE",
            "clusterName": self.cluster.name,
            "clusterId": self.cluster.id,
            "version": cce.version,
            "nodePools": [self.system_pool.name, self.gpu_pool.name],
            "endpoint": "private: the API server has no EIP; use the kubeconfig output from the VPC (the login node)",
            # the API server is private: from the login node (or anywhere in the VPC)
            "credentials": "pulumi stack output kubeconfig --show-secrets > ~/.kube/config",
            "gpuDriver": f"NVIDIA {cce.addon.driver_version} (installed by CCE's {cce.addon.template} add-on)",
            "autoscaling": (
                {"minNodes": cce.min_nodes, "maxNodes": cce.max_nodes, "addon": f"{a.template} {a.version}"}
                if (a := cce.autoscaler)
                else None
            ),
            "releases": [
                {"name": r.name, "chart": r.chart, "version": r.version, "namespace": r.namespace} for r in cce.releases
            ],
            "region": layout.spec.region,
        }


def build(
    parent: pulumi.Resource,
    name: str,
    layout: HuaweiLayout,
    network: Network,
    key_pair: pulumi.Input[str] | None,
    agency: pulumi.Output[str],
    kms_key_id: pulumi.Output[str],
    tags: Mapping[str, str],
) -> Kubernetes:
    cce = layout.kubernetes
    assert cce is not None  # scheduler kubernetes
    spec = layout.spec
    child = pulumi.ResourceOptions(parent=parent)
    cluster = huaweicloud.cce.Cluster(
        f"{name}-cce",
        name=spec.name,
        flavor_id=cce.flavor,
        cluster_version=cce.version,
        vpc_id=network.vpc.id,
        subnet_id=network.subnet.id,
        container_network_type=cce.network_type,
        container_network_cidr=cce.container_cidr,
        service_network_cidr=cce.service_cidr,
        charging_mode="postPaid",
        description=f"gpu-cluster {spec.name}",
        tags=dict(tags),
        opts=child,
    )
    # placement spread: the GPU pool's nodes in an anti-affinity server group (cce.NodePool ecs_group_id)
    group = (
        huaweicloud.ecs.Servergroup(
            f"{name}-servergroup", name=f"{spec.name}-nodes", policies=[layout.server_group_policy], opts=child
        )
        if layout.server_group_policy
        else None
    )
    pool = _Pool(cce, network, key_pair, agency, kms_key_id, layout.disk_type, child)
    system_pool = pool.build(
        f"{name}-system",
        cluster,
        name=f"{spec.name}-system",
        flavor=cce.system_instance_type,
        nodes=cce.system_nodes,
        root_gb=layout.root_gb,
        tags={**tags, "Name": f"{spec.name}-system"},
    )
    gpu_pool = pool.build(
        f"{name}-gpu",
        cluster,
        name=f"{spec.name}-gpu",
        flavor=spec.instance.instanceType,
        nodes=spec.nodes,
        root_gb=layout.root_gb,
        tags={**tags, "Name": f"{spec.name}-gpu"},
        gpu=True,
        group=group.id if group else None,
    )
    addon = huaweicloud.cce.Addon(
        f"{name}-gpu-addon",
        cluster_id=cluster.id,
        template_name=cce.addon.template,
        values=huaweicloud.cce.AddonValuesArgs(custom_json=json.dumps(cce.addon.custom(), sort_keys=True)),
        # its pods run on the system pool; the driver installs on each GPU node as it joins
        opts=pulumi.ResourceOptions(parent=parent, depends_on=[system_pool]),
    )
    autoscaler = _autoscaler(parent, name, cce.autoscaler, cluster, spec.region, [system_pool, gpu_pool])
    kubeconfig: pulumi.Output[str] = pulumi.Output.secret(cluster.kube_config_raw)
    in_cluster = incluster.install(name, kubeconfig, cce.releases, parent, depends_on=[system_pool, gpu_pool, addon])
    return Kubernetes(cluster, system_pool, gpu_pool, addon, kubeconfig, in_cluster, autoscaler)


def _autoscaler(
    parent: pulumi.Resource,
    name: str,
    decided: AutoscalerAddon | None,
    cluster: huaweicloud.cce.Cluster,
    region: str,
    pools: list[huaweicloud.cce.NodePool],
) -> huaweicloud.cce.Addon | None:
    """CCE's autoscaler add-on, its values as the provider's own example builds them: the template CCE returns for
    this version gives the custom defaults and the flavor (mandatory), merged with cluster_id, tenant_id (the
    region's project) and scale-in off."""
    if decided is None:
        return None
    invoke = pulumi.InvokeOptions(parent=parent)
    project_id = huaweicloud.iam.get_projects_output(name=region, opts=invoke).projects[0].id
    template = huaweicloud.cce.get_addon_template_output(
        cluster_id=cluster.id, name=decided.template, version=decided.version, opts=invoke
    )
    parameters = template.spec.apply(lambda spec: json.loads(spec)["parameters"])
    flavor = parameters.apply(lambda p: json.dumps(p[decided.flavor_key], sort_keys=True))
    custom = pulumi.Output.all(parameters, cluster.id, project_id).apply(
        lambda a: json.dumps({**a[0].get("custom", {}), **decided.custom(a[1], a[2])}, sort_keys=True)
    )
    return huaweicloud.cce.Addon(
        f"{name}-autoscaler-addon",
        cluster_id=cluster.id,
        template_name=decided.template,
        version=decided.version,
        values=huaweicloud.cce.AddonValuesArgs(custom_json=custom, flavor_json=flavor),
        # its pods run on the system pool; it scales only pools that exist
        opts=pulumi.ResourceOptions(parent=parent, depends_on=pools),
    )


@dataclass(frozen=True)
class _Pool:
    """What both pools share: OS, runtime, key pair, agency, subnet and zone, and disks on the cluster's DEW key."""

    cce: CceLayout
    network: Network
    key_pair: pulumi.Input[str] | None
    agency: pulumi.Output[str]
    kms_key_id: pulumi.Output[str]
    disk_type: str
    child: pulumi.ResourceOptions

    def build(
        self,
        resource: str,
        cluster: huaweicloud.cce.Cluster,
        *,
        name: str,
        flavor: str,
        nodes: int,
        root_gb: int,
        tags: Mapping[str, str],
        gpu: bool = False,
        group: pulumi.Input[str] | None = None,
    ) -> huaweicloud.cce.NodePool:
        cce = self.cce
        scaling = gpu and cce.autoscaled
        return huaweicloud.cce.NodePool(
            resource,
            cluster_id=cluster.id,
            name=name,
            flavor_id=flavor,
            initial_node_count=nodes,
            # the pool's own range; only CCE's autoscaler add-on moves it (warned by the layout)
            scall_enable=True if scaling else None,
            min_node_count=cce.min_nodes if scaling else None,
            max_node_count=cce.max_nodes if scaling else None,
            os=cce.node_os,
            runtime=cce.runtime,
            key_pair=self.key_pair,
            availability_zone=self.network.zone,
            subnet_id=self.network.subnet.id,
            ecs_group_id=group,
            root_volume=huaweicloud.cce.NodePoolRootVolumeArgs(
                size=root_gb, volumetype=self.disk_type, kms_key_id=self.kms_key_id
            ),
            # CCE's container runtime and kubelet disk
            data_volumes=[
                huaweicloud.cce.NodePoolDataVolumeArgs(
                    size=cce.runtime_disk_gb, volumetype=self.disk_type, kms_key_id=self.kms_key_id
                )
            ],
            # the post-installation script inside extend_params, beside the agency: the provider sends the
            # top-level postinstall/preinstall/max_pods and then drops the whole extend_params block, agency and all
            # (terraform-provider-huaweicloud v1.73.3 huaweicloud/services/cce/common.go buildExtendParams)
            extend_params=huaweicloud.cce.NodePoolExtendParamsArgs(
                agency_name=self.agency, postinstall=cce.postinstall if gpu else None
            ),
            labels=dict(cce.gpu_labels) if gpu else None,
            taints=[huaweicloud.cce.NodePoolTaintArgs(**cce.gpu_taint)] if gpu else None,
            tags=dict(tags),
            opts=self.child,
        )
