"""The multi-language package: `GpuCluster` as Pulumi's schema inference sees it (docs/component.md).

`pulumi package add <this repository>` runs `plugin/__main__.py`, which hosts this module's `GpuCluster`
with `pulumi.provider.experimental.component_provider_host`; the schema is inferred from the annotations
here. What inference supports shapes this module (SDK `pulumi/provider/experimental/analyzer.py`):
no `from __future__ import annotations` (string annotations are not followed), enums instead of
`Literal`, lists instead of tuples, TypedDicts for nested blocks, plain (not `Input`) values because
they are validated before anything is registered. It is a thin wrapper: the args become a
`GpuClusterArgs` and the Python component does the rest (the same validation, resources, outputs).
"""

import json
from enum import Enum
from typing import Any

import pulumi

from . import cluster
from .args import GpuClusterArgs
from .provider_gen import flattened_keys
from .provider_types import GpuClusterInputs

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

    def __init__(self, name: str, args: GpuClusterInputs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(name, to_args(args), opts)


def package_version() -> str:
    """The package version for the schema and SDKs: pyproject.toml's (an installed copy's metadata may be absent)."""
    import tomllib
    from pathlib import Path

    data = tomllib.loads((Path(__file__).resolve().parent.parent / "pyproject.toml").read_text())
    return str(data["project"]["version"])


def schema(version: str | None = None) -> dict[str, Any]:
    """The package schema, as `pulumi package add` infers it (no Pulumi CLI needed)."""
    from pulumi.provider.experimental.component import ComponentProvider

    provider = ComponentProvider([GpuCluster], PACKAGE, None, version or package_version())
    assert provider.schema is not None
    inferred: dict[str, Any] = json.loads(provider.schema)
    return inferred
