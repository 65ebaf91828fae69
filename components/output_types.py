"""The typed objects of `GpuCluster`'s outputs (issue 31): `access`, `identity`, `metrics`, `kubernetes`, `slurm`.

Each is the union of the keys the clouds' packages put in that output (components/<cloud>/: access.py,
identity.py, slurm.py, kubernetes.py, `metrics_output`), every key optional: a cloud sets the ones it has. Schema
inference reads these classes (`components/provider.py`), so the rules of `provider_types.py` hold here too: no
`from __future__ import annotations`, a docstring under each key. A value whose shape differs between clouds
(Slurm's head node, its MUNGE key, ERDMA on ACK, an IAM statement's action) is `Any`, described in words.
"""

from typing import Any, TypedDict


class ClusterAccess(TypedDict, total=False):
    """How to log in and how to list the nodes."""

    method: str
    """How people reach the nodes: ssm, iap, bastion, session-manager, ssh or none (the resolved `access`)."""
    command: str
    """The command that opens a shell on a node or the login VM (unset where no way in is built)."""
    nodes: str
    """The command that lists the nodes' private IPs."""
    targets: str
    """Azure Bastion without a login VM: the command that lists the VM ids to pass as its target."""
    group: str
    """GCP, a managed group: the command that lists its instances."""
    user_roles: list[str]
    """GCP: the IAM roles a user needs to log in through IAP."""


class IdentityStatement(TypedDict, total=False):
    """One inline IAM statement of the nodes' role (AWS)."""

    action: Any
    """The action, or a list of them."""
    resource: str
    """The resource it applies to."""


class ClusterIdentity(TypedDict, total=False):
    """The nodes' cloud identity and its grants."""

    kind: str
    """The cloud's kind of identity (instance profile, managed identity, service account, RAM or CAM role)."""
    name: str
    """Its name (the service account's email on GCP)."""
    grants: list[str]
    """The managed policies or roles granted to it."""
    existing: bool
    """True when the identity was given (identity settings), not created."""
    inline: list[IdentityStatement]
    """AWS: the statements of the role's inline policy."""


class MetricsEndpoint(TypedDict, total=False):
    """One exporter on every node."""

    name: str
    """The exporter."""
    port: int
    """Its port."""
    path: str
    """Its HTTP path."""


class ClusterMetrics(TypedDict, total=False):
    """The exporters' endpoints and how to list the scrape targets."""

    endpoints: list[MetricsEndpoint]
    """The exporters on each node (empty without monitoring.dcgmExporter)."""
    scrape: str
    """How to find the scrape targets, in words, or why there are none."""


class HelmRelease(TypedDict, total=False):
    """A Helm release the cluster installs."""

    name: str
    """The release name."""
    chart: str
    """The chart."""
    version: str
    """The chart version."""
    namespace: str
    """The namespace, where the cloud reports it."""


class FabricWorkload(TypedDict, total=False):
    """A workload that wires the GPU fabric in the Kubernetes cluster (GKE)."""

    name: str
    """Its name."""
    source: str
    """Where its manifest comes from."""
    images: list[str]
    """The images it runs."""


class ClusterKubernetes(TypedDict, total=False):
    """scheduler kubernetes: the managed cluster."""

    service: str
    """The managed service (EKS, AKS, GKE, ACK)."""
    cluster_name: str
    """The cluster's name."""
    cluster_id: str
    """The cluster's id, where it differs from its name (ACK)."""
    endpoint: str
    """The API server's endpoint."""
    version: str
    """The Kubernetes version."""
    public_endpoint: bool
    """True when the API server is reachable from the internet (kubernetes.publicEndpoint)."""
    node_pools: list[str]
    """The node pools (node groups on EKS)."""
    credentials: str
    """The command that writes a kubeconfig for the cluster."""
    gpu_driver: str
    """Who installs the NVIDIA driver, in words."""
    gpu_software: str
    """The NVIDIA software installed, in words."""
    erdma: Any
    """ACK: how ERDMA is wired (the add-on, ERIs per node, the MTU)."""
    gpu_share: Any
    """ACK: kubernetes.gpuSharing as ACK's shared GPU scheduling (the add-on, the node label, each pod's request)."""
    releases: list[HelmRelease]
    """The Helm releases installed."""
    region: str
    """The cluster's region, where the cloud reports it."""
    fabric_workloads: list[FabricWorkload]
    """GKE: the workloads that wire the GPU NICs."""
    networks: list[str]
    """GKE: the networks of the GPU NICs."""


class ClusterSlurm(TypedDict, total=False):
    """scheduler slurm: the head node, the partition and how to submit and check."""

    head_node: Any
    """The head node (its id and address, in the cloud's terms)."""
    head: str
    """The head node's instance id (Alibaba)."""
    head_address: str
    """The head node's private address (Alibaba)."""
    partition: str
    """The GPU partition."""
    gres: str
    """The GRES line of the GPU nodes."""
    slurm_version: str
    """The Slurm version installed."""
    login: str
    """The command that logs in where jobs are submitted."""
    check: str
    """The command that checks the nodes."""
    sinfo: str
    """The command that lists the nodes' state (Alibaba)."""
    munge_key_secret: str
    """The secret that holds the MUNGE key (its id, never the key)."""
    munge_key: Any
    """Where the MUNGE key is kept and who may read it (Alibaba)."""
    compute_config: str
    """The elastic partitions' node configuration, where it is a resource of its own."""
    power_saving: str
    """Slurm's power saving of the elastic partitions, in words."""
