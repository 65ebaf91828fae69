"""The multi-language package: `GpuCluster` as Pulumi's schema inference sees it (docs/component.md).

`pulumi package add <this repository>` runs `plugin/__main__.py`, which hosts `GpuClusterProvider`: the schema
inferred from the annotations here, finished by `finish_schema` (enum member names, secret outputs). What
inference supports shapes this module (SDK `pulumi/provider/experimental/analyzer.py`): no
`from __future__ import annotations` (string annotations are not followed), enums instead of `Literal`, lists
instead of tuples, TypedDicts for nested blocks and output objects. Inputs a program takes from another resource
(ids of an existing network, keys, an image, a certificate: `TakesOutput` in spec/model.py) are `Input`s; the
others are plain, because they decide what is built. It is a thin wrapper: the args become a `GpuClusterArgs`
and the Python component does the rest (the same validation, resources, outputs).
"""

import copy
import functools
import json
import re
from enum import Enum
from typing import Any

import pulumi
from pulumi.provider.experimental.component import ComponentProvider

from . import cluster
from .args import GpuClusterArgs
from .contract import Layout
from .output_types import ClusterAccess, ClusterIdentity, ClusterKubernetes, ClusterMetrics, ClusterSlurm
from .provider_gen import flattened_keys
from .provider_types import GpuClusterInputs
from .spec import ClusterSpec

PACKAGE = "gpu-cluster"


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def _plain(value: Any) -> Any:
    """Enums as their values; a nested block's keys as the stack file writes them (camelCase)."""
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, dict):
        return {_camel(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


# `spot` is `true|false` or an object in a stack file; schema inference has no unions, so the schema keeps
# `spot: bool` (what programs already pass) and takes the object's other keys flat beside it (spec/model.py Flatten).
_FLAT_KEYS = flattened_keys()


def to_args(inputs: GpuClusterInputs) -> GpuClusterArgs:
    """The schema's inputs as the Python API's `GpuClusterArgs` (tags are kept as given)."""
    given: dict[str, Any] = dict(inputs)
    kwargs: dict[str, Any] = {}
    blocks: dict[str, dict[str, Any]] = {}
    for key, value in given.items():
        if value is None:
            continue
        if key in _FLAT_KEYS:
            block, inner = _FLAT_KEYS[key]
            blocks.setdefault(block, {})[inner] = _plain(value)
        else:
            kwargs[key] = dict(value) if key == "tags" else _plain(value)
    for block, keys in blocks.items():  # the object form; enabled as given (unset with a base: the spec refuses)
        kwargs[block] = {"enabled": kwargs.get(block, False), **keys}
    return GpuClusterArgs(**kwargs)


class GpuCluster(cluster.GpuCluster):
    """A GPU cluster on one cloud: nodes, their network, identity and access (gpu-cluster)."""

    # The outputs of `cluster.GpuCluster`, repeated here because schema inference reads property
    # descriptions from this class's own source (tests/test_component_schema.py keeps both equal).
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

    def __init__(self, name: str, args: GpuClusterInputs, opts: pulumi.ResourceOptions | None = None) -> None:
        if not _has_outputs(args):
            super().__init__(name, to_args(args), opts)
            return
        # Some inputs are Outputs (another resource's id, a secret key): their values decide the layout, so the
        # component is registered now and its resources once those values are known (in a preview where one is
        # unknown, none are shown and the outputs are unknown). A secret input makes every output secret.
        planned = pulumi.Output.from_input(args).apply(lambda given: cluster.plan_args(name, to_args(given)))
        facts = pulumi.Output.unsecret(planned.apply(lambda plan: cluster.stack_facts(plan[0])))  # no input value
        pulumi.ComponentResource.__init__(self, cluster.TYPE, name, {"stackFacts": facts}, opts)

        def build(plan: tuple[ClusterSpec, Layout]) -> pulumi.Output[dict[str, Any]]:
            return pulumi.Output.all(**self.build(name, *plan))

        built: pulumi.Output[dict[str, Any]] = planned.apply(build)
        for attr in [*cluster.OUTPUT_KEYS, "placement_requested"]:
            setattr(self, attr, built.apply(functools.partial(_item, attr)))


def _item(key: str, values: dict[str, Any]) -> Any:
    return values[key]


def _has_outputs(value: Any) -> bool:
    """An Output anywhere in the inputs: the engine hands a value with dependencies or a secret as one."""
    if isinstance(value, pulumi.Output):
        return True
    if isinstance(value, dict):
        return any(_has_outputs(v) for v in value.values())
    if isinstance(value, list | tuple):
        return any(_has_outputs(v) for v in value)
    return False


def _pascal(value: str) -> str:
    """An enum value as the schema's member name: `aws` -> Aws, `capacity-block` -> CapacityBlock, `onDemand` ->
    OnDemand, `USD` -> USD; codegen keeps it (TypeScript `Cloud.Aws`, Go `CloudAws`, a Python SDK `AWS`)."""
    words = re.split(r"[^A-Za-z0-9]+", re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "-", value))
    return "".join(w if w.isupper() else w[:1].upper() + w[1:] for w in words if w)


def finish_schema(inferred: dict[str, Any]) -> dict[str, Any]:
    """What schema inference leaves out: enum member names that read naturally in every language (it takes the
    Python names, AWS), and `secret` on the secret outputs (it has no way to say it)."""
    out = copy.deepcopy(inferred)
    for token, typ in out["types"].items():
        names = [_pascal(str(member["value"])) for member in typ.get("enum", [])]
        assert len(set(names)) == len(names), f"{token}: two values make one name: {names}"
        for member, member_name in zip(typ.get("enum", []), names, strict=True):
            member["name"] = member_name
    properties = out["resources"][f"{PACKAGE}:index:GpuCluster"]["properties"]
    for attr in cluster.SECRET_OUTPUTS:
        properties[_camel(attr)]["secret"] = True
    return out


class GpuClusterProvider(ComponentProvider):
    """The component provider `plugin/__main__.py` hosts: the inferred schema, finished (`finish_schema`)."""

    def __init__(self, version: str) -> None:
        super().__init__([GpuCluster], PACKAGE, None, version)
        assert self.schema is not None
        self.schema = json.dumps(finish_schema(json.loads(self.schema)))


def package_version() -> str:
    """The package version for the schema and SDKs: pyproject.toml's (an installed copy's metadata may be absent)."""
    import tomllib
    from pathlib import Path

    data = tomllib.loads((Path(__file__).resolve().parent.parent / "pyproject.toml").read_text())
    return str(data["project"]["version"])


def schema(version: str | None = None) -> dict[str, Any]:
    """The package schema, as the plugin serves it to `pulumi package add` (no Pulumi CLI needed)."""
    provider = GpuClusterProvider(version or package_version())
    assert provider.schema is not None
    served: dict[str, Any] = json.loads(provider.schema)
    return served
