"""`GpuCluster`: the one component users create. It validates, lays out, and delegates to a cloud.

The cloud is reached through its contract (`contract.py`); its package, and so its provider SDK,
is imported only for the cloud in use.

No `from __future__ import annotations` here: the output annotations below are read at run time by
Pulumi's schema inference (`components/provider.py`, docs/component.md).
"""

from dataclasses import replace
from typing import Any

import pulumi

from .args import GpuClusterArgs, GpuClusterArgsError
from .contract import CloudCluster, Layout, contract
from .errors import ConfigError
from .spec import ClusterSpec

TYPE = "gpu-cluster:index:GpuCluster"

# Typed outputs: attribute -> key of the stack export it mirrors (the same names on every cloud;
# None where a cloud has no such thing).
OUTPUT_KEYS = {
    "cloud_name": "cloud",
    "region": "region",
    "zone": "zone",
    "instance_type": "instanceType",
    "gpu": "gpu",
    "gpus_per_node": "gpusPerNode",
    "nodes": "nodes",
    "max_nodes": "maxNodes",
    "fabric": "fabric",
    "fabric_gbps_per_node": "fabricGbpsPerNode",
    "placement_applied": "placementApplied",
    "placement_group": "placementGroup",
    "scratch": "scratch",
    "resource_group": "resourceGroup",
    "vpc_id": "vpcId",
    "subnet_ids": "subnetIds",
    "gpu_network_ids": "gpuNetworkIds",
    "security_group_id": "securityGroupId",
    "image_id": "imageId",
    "node_group": "nodeGroup",
    "instance_ids": "instanceIds",
    "private_ips": "privateIps",
    "identity": "identity",
    "access": "access",
    "metrics": "metrics",
    "kubernetes": "kubernetes",
    "kubeconfig": "kubeconfig",
    "slurm": "slurm",
}
SECRET_OUTPUTS = {"kubeconfig"}  # secret whatever the cloud package handed over


def plan_layout(spec: ClusterSpec) -> Layout:
    return contract(spec.cloud).plan(spec)


def _to_output(value: Any) -> pulumi.Output[Any] | None:
    return None if value is None else pulumi.Output.from_input(value)


class GpuCluster(pulumi.ComponentResource):
    """A GPU cluster on one cloud: nodes, their network, identity and access, from typed args."""

    cloud_name: pulumi.Output[str]
    """The cloud: aws, azure, gcp, alicloud or tencentcloud."""
    region: pulumi.Output[str]
    """The region (location on Azure)."""
    zone: pulumi.Output[str] | None
    """The zone of the nodes, where the cloud reports one in the outputs (GCP)."""
    instance_type: pulumi.Output[str]
    """The nodes' instance type."""
    gpu: pulumi.Output[str]
    """The GPU model."""
    gpus_per_node: pulumi.Output[int]
    """GPUs per node."""
    nodes: pulumi.Output[int]
    """Nodes at deploy."""
    max_nodes: pulumi.Output[int]
    """Upper bound of the node group."""
    fabric: pulumi.Output[str]
    """The HPC fabric wired (efa, infiniband, gpudirect-*, erdma) or none."""
    fabric_gbps_per_node: pulumi.Output[float]
    """Fabric bandwidth wired per node, in Gb/s (0 without a fabric)."""
    placement_requested: pulumi.Output[str]
    """The placement asked for (auto resolved)."""
    placement_applied: pulumi.Output[str]
    """The placement the resources apply (a cloud's managed groups may apply less)."""
    placement_group: pulumi.Output[str] | None
    """The placement group / proximity group / policy / deployment set, if any."""
    scratch: pulumi.Output[str]
    """The scratch space of each node, in words."""
    resource_group: pulumi.Output[str] | None
    """Azure: the resource group."""
    vpc_id: pulumi.Output[str]
    """The network: VPC id (VNet id on Azure, network self link on GCP)."""
    subnet_ids: pulumi.Output[list[str]]
    """The nodes' subnets (vSwitches on Alibaba)."""
    gpu_network_ids: pulumi.Output[list[str]] | None
    """GCP: the GPU VPCs of the extra NICs."""
    security_group_id: pulumi.Output[str]
    """The nodes' security group (NSG on Azure, internal firewall rule on GCP)."""
    image_id: pulumi.Output[str]
    """The nodes' image."""
    node_group: pulumi.Output[str] | None
    """The managed node group (nodeGroup: managed), else None."""
    instance_ids: pulumi.Output[list[str]] | None
    """The instances (nodeGroup: instances), else None."""
    private_ips: pulumi.Output[list[str]] | None
    """The nodes' private IPs in node order (nodeGroup: instances): a hostfile."""
    identity: pulumi.Output[dict[str, Any]]
    """The nodes' cloud identity and its grants."""
    access: pulumi.Output[dict[str, Any]]
    """How to log in and how to list the nodes."""
    metrics: pulumi.Output[dict[str, Any]]
    """The exporters' endpoints and how to list the scrape targets."""
    kubernetes: pulumi.Output[dict[str, Any]] | None
    """scheduler kubernetes: clusterName, endpoint, version, nodePools, credentials (the command), releases."""
    kubeconfig: pulumi.Output[str] | None
    """scheduler kubernetes: the cluster's kubeconfig (secret)."""
    slurm: pulumi.Output[dict[str, Any]] | None
    """scheduler slurm: the head node, the partition and the login command."""

    def __init__(
        self,
        name: str,
        args: GpuClusterArgs | ClusterSpec,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        typed_args = args if isinstance(args, GpuClusterArgs) else None
        if typed_args is not None:
            args = _spec_of(name, typed_args)
        assert isinstance(args, ClusterSpec)
        # The layout may still reject the spec (ConfigError): do it before registering anything.
        cloud = contract(args.cloud)
        try:
            self.layout = cloud.plan(args)
        except ConfigError as exc:
            if typed_args is None:
                raise
            raise GpuClusterArgsError(exc, typed_args) from None  # named as the args' fields
        # What the stack asked for, as component inputs: policies (pack and offline plan) read these
        # to tell an opted-in public IP or spot node from a mistake. One key, so the SDK's habit of
        # turning input keys into attributes cannot clash with ours.
        facts = {
            "cloud": args.cloud,
            "instanceType": args.instance.instanceType,
            "nodes": args.nodes,
            "publicIp": args.network.public_ip,
            "loginPublicIp": args.login is not None and args.login.public_ip,
            "spot": args.uses_spot,
            "hourlyUsd": args.hourly_usd,
            "hourlyUsdAtMaxNodes": args.max_hourly_usd_at_scale,
            "maxHourlyUsd": args.max_hourly_usd,
        }
        if args.kubernetes is not None:  # only then: other stacks keep their inputs as deployed
            facts["scheduler"] = args.scheduler
            facts["kubernetesPublicEndpoint"] = args.kubernetes.public_endpoint
            facts["kubernetesPublicCidrs"] = list(args.kubernetes.public_cidrs)
        elif args.scheduler != "none":
            facts["scheduler"] = args.scheduler
        if args.serve is not None and args.serve.public:  # only then, as above: an opted-in public endpoint
            facts["servePublic"] = True
        if args.compliance != "none":  # only then, as above: the pack and the plan apply the profile's levels
            facts["compliance"] = args.compliance
        super().__init__(TYPE, name, {"stackFacts": facts}, opts)
        self.spec = args
        for finding in args.findings:
            log = pulumi.log.warn if finding.level == "warning" else pulumi.log.info
            log(str(finding), resource=self)
        self.cloud: CloudCluster = cloud.component()(
            f"{name}-{args.cloud}", self.layout, pulumi.ResourceOptions(parent=self)
        )
        row = args.instance
        # The stack exports (`__main__.py`): keys and values as shipped stacks have always had them.
        self.outputs: dict[str, Any] = {
            "cloud": args.cloud,
            "region": args.region,
            "instanceType": row.instanceType,
            "gpu": row.gpu or row.gpuDescription,
            "gpusPerNode": row.gpus,
            "nodes": args.nodes,
            "maxNodes": args.max_nodes,
            "fabric": row.fabric if args.fabric_wired else "none",
            "fabricGbpsPerNode": self.layout.fabric_gbps_wired,
            "placement": self.layout.placement_applied,
            "scratch": self.layout.scratch.describe(),
            **self.cloud.outputs,
        }
        for key in SECRET_OUTPUTS & self.outputs.keys():
            if self.outputs[key] is not None:
                self.outputs[key] = pulumi.Output.secret(self.outputs[key])
        typed = {attr: _to_output(self.outputs.get(key)) for attr, key in OUTPUT_KEYS.items()}
        typed["placement_requested"] = _to_output(args.placement)
        for attr, value in typed.items():
            setattr(self, attr, value)
        # registered: the stack exports, then the typed outputs under their schema names (camelCase)
        self.register_outputs({**self.outputs, **{_camel(attr): value for attr, value in typed.items()}})


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def _spec_of(name: str, args: GpuClusterArgs) -> ClusterSpec:
    """Validate typed args (errors name the fields); an unset cluster name is the resource name."""
    stack = pulumi.get_stack()
    if args.name is None and name != stack:
        args = replace(args, name=name)
    return args.to_spec(stack, pulumi.get_project(), python_names=True)
