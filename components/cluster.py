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
from .output_types import ClusterAccess, ClusterIdentity, ClusterKubernetes, ClusterMetrics, ClusterSlurm
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
    identity: pulumi.Output[ClusterIdentity]
    """The nodes' cloud identity and its grants."""
    access: pulumi.Output[ClusterAccess]
    """How to log in and how to list the nodes."""
    metrics: pulumi.Output[ClusterMetrics]
    """The exporters' endpoints and how to list the scrape targets."""
    kubernetes: pulumi.Output[ClusterKubernetes] | None
    """scheduler kubernetes: clusterName, endpoint, version, nodePools, credentials (the command), releases."""
    kubeconfig: pulumi.Output[str] | None
    """scheduler kubernetes: the cluster's kubeconfig (secret)."""
    slurm: pulumi.Output[ClusterSlurm] | None
    """scheduler slurm: the head node, the partition and the login command."""

    def __init__(
        self,
        name: str,
        args: GpuClusterArgs | ClusterSpec,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        spec, layout = plan_args(name, args)  # may refuse (ConfigError): before anything is registered
        super().__init__(TYPE, name, {"stackFacts": stack_facts(spec)}, opts)
        for attr, value in self.build(name, spec, layout).items():
            setattr(self, attr, value)

    def build(self, name: str, spec: ClusterSpec, layout: Layout) -> dict[str, pulumi.Output[Any] | None]:
        """The cloud's resources under this component; its typed outputs by attribute (registered as outputs)."""
        self.spec, self.layout = spec, layout
        for finding in spec.findings:
            log = pulumi.log.warn if finding.level == "warning" else pulumi.log.info
            log(str(finding), resource=self)
        self.cloud: CloudCluster = contract(spec.cloud).component()(
            f"{name}-{spec.cloud}", layout, pulumi.ResourceOptions(parent=self)
        )
        row = spec.instance
        # The stack exports (`__main__.py`): keys and values as shipped stacks have always had them.
        self.outputs: dict[str, Any] = {
            "cloud": spec.cloud,
            "region": spec.region,
            "instanceType": row.instanceType,
            "gpu": row.gpu or row.gpuDescription,
            "gpusPerNode": row.gpus,
            "nodes": spec.nodes,
            "maxNodes": spec.max_nodes,
            "fabric": row.fabric if spec.fabric_wired else "none",
            "fabricGbpsPerNode": layout.fabric_gbps_wired,
            "placement": layout.placement_applied,
            "scratch": layout.scratch.describe(),
            **self.cloud.outputs,
        }
        for key in SECRET_OUTPUTS & self.outputs.keys():
            if self.outputs[key] is not None:
                self.outputs[key] = pulumi.Output.secret(self.outputs[key])
        typed = {attr: _to_output(self.outputs.get(key)) for attr, key in OUTPUT_KEYS.items()}
        typed["placement_requested"] = _to_output(spec.placement)
        # registered: the stack exports, then the typed outputs under their schema names (camelCase)
        self.register_outputs({**self.outputs, **{_camel(attr): value for attr, value in typed.items()}})
        return typed


def plan_args(name: str, args: GpuClusterArgs | ClusterSpec) -> tuple[ClusterSpec, Layout]:
    """The spec of typed args (errors name the fields) and its layout; the layout may still refuse the spec."""
    typed_args = args if isinstance(args, GpuClusterArgs) else None
    spec = _spec_of(name, typed_args) if typed_args is not None else args
    assert isinstance(spec, ClusterSpec)
    try:
        return spec, contract(spec.cloud).plan(spec)
    except ConfigError as exc:
        if typed_args is None:
            raise
        raise GpuClusterArgsError(exc, typed_args) from None  # named as the args' fields


def stack_facts(spec: ClusterSpec) -> dict[str, Any]:
    """What the stack asked for, as component inputs: policies (pack and offline plan) read these to tell an
    opted-in public IP or spot node from a mistake. One key, so the SDK's habit of turning input keys into
    attributes cannot clash with ours."""
    facts: dict[str, Any] = {
        "cloud": spec.cloud,
        "instanceType": spec.instance.instanceType,
        "nodes": spec.nodes,
        "publicIp": spec.network.public_ip,
        "loginPublicIp": spec.login is not None and spec.login.public_ip,
        "spot": spec.uses_spot,
        "hourlyUsd": spec.hourly_usd,
        "hourlyUsdAtMaxNodes": spec.max_hourly_usd_at_scale,
        "maxHourlyUsd": spec.max_hourly_usd,
    }
    if spec.kubernetes is not None:  # only then: other stacks keep their inputs as deployed
        facts["scheduler"] = spec.scheduler
        facts["kubernetesPublicEndpoint"] = spec.kubernetes.public_endpoint
        facts["kubernetesPublicCidrs"] = list(spec.kubernetes.public_cidrs)
    elif spec.scheduler != "none":
        facts["scheduler"] = spec.scheduler
    if spec.serve is not None and spec.serve.public:  # only then, as above: an opted-in public endpoint
        facts["servePublic"] = True
    if spec.compliance != "none":  # only then, as above: the pack and the plan apply the profile's levels
        facts["compliance"] = spec.compliance
    return facts


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def _spec_of(name: str, args: GpuClusterArgs) -> ClusterSpec:
    """Validate typed args (errors name the fields); an unset cluster name is the resource name."""
    stack = pulumi.get_stack()
    if args.name is None and name != stack:
        args = replace(args, name=name)
    return args.to_spec(stack, pulumi.get_project(), python_names=True)
