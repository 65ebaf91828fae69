"""scheduler: kubernetes on AWS (EKS), pure.

The GPU pool is an EKS managed node group on a launch template that carries the same interfaces, placement group,
disks and IMDS settings as the VM mode's; EKS picks the AMI (`amiType`) and merges its own bootstrap into our MIME
user data. Data: catalog/kubernetes/aws.yaml. `plan()` returns what the VM layout becomes with EKS (the package's
`plan()` applies it).
"""

from __future__ import annotations

import base64
import gzip
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from ... import bootstrap, catalog
from ...bootstrap.fabric import FabricUsability
from ...catalog import kubernetes as kubernetes_offers
from ...catalog.update import cloud_update
from ...errors import CLUSTER_KEY, ConfigError
from ...spec import ClusterSpec
from .. import Scratch, split_cidr
from ..kubernetes import GPU_TAINT, LABEL_PREFIX, Release, autoscaled, charts, gpu_labels, merge, releases
from ..node import node_parts
from .eks_logs import EksLogs
from .eks_logs import plan as logs_plan
from .identity import NodeIdentity
from .nodes import INSTANCE_STORE_GLOBS, Market

MIME_BOUNDARY = "==GPU-CLUSTER-BOUNDARY=="


@dataclass(frozen=True)
class EksPool:
    """One managed node group: the CPU system pool or the GPU pool."""

    key: Literal["system", "gpu"]  # the logical-name suffix
    instance_type: str
    ami_type: str
    capacity_type: str  # ON_DEMAND | SPOT | CAPACITY_BLOCK (the EKS API's names)
    desired: int
    min_size: int
    max_size: int
    root_gb: int
    labels: Mapping[str, str]
    taints: tuple[Mapping[str, str], ...]  # {key, value, effect} with the EKS API's effect names
    max_unavailable: int | None = None  # update_config: nodes an update takes down at once (None: EKS's default)
    tags: Mapping[str, str] = field(default_factory=dict)  # the group's own tags, beside the cluster's
    autoscaled: bool = False  # the Cluster Autoscaler sets its desired size: a later `pulumi up` must not reset it


@dataclass(frozen=True)
class PolicyStatement:
    """One IAM statement; `{cluster}` and `{nodegroups}` are filled at deploy (the cluster's name and node groups)."""

    sid: str
    actions: tuple[str, ...]
    resource: str
    condition: Mapping[str, Mapping[str, str]]


@dataclass(frozen=True)
class EksAutoscaler:
    """The Cluster Autoscaler's AWS identity: an EKS Pod Identity association of its service account with a role
    only pods.eks.amazonaws.com may assume, carrying `policy` (catalog/kubernetes/aws.yaml clusterAutoscaler)."""

    release: str  # the release name in `releases`
    namespace: str
    service_account: str
    addon: str  # the Pod Identity agent's EKS add-on
    trust_service: str
    trust_actions: tuple[str, ...]
    policy: tuple[PolicyStatement, ...]


@dataclass(frozen=True)
class EksLayout:
    service: str
    version: str
    public_endpoint: bool
    public_cidrs: tuple[str, ...]  # only with public_endpoint
    control_plane_subnet_cidr: str  # a subnet in a second zone, for the control plane's interfaces only
    cluster_trust_service: str
    cluster_policies: tuple[str, ...]
    authentication_mode: str
    admin_policy_arn: str
    root_device: str
    system: EksPool
    gpu: EksPool
    releases: tuple[Release, ...]
    gpu_user_data: str  # MIME multi-part: EKS adds its nodeadm part to it
    autoscaler: EksAutoscaler | None = None  # when the GPU pool can grow or shrink
    logs: EksLogs | None = None  # monitoring.logs: the CloudWatch Observability add-on's Fluent Bit and its groups
    cluster_name: str | None = None  # kubernetes.clusterName (None: Pulumi's auto-name, drawn at deploy)

    @property
    def gpu_user_data_b64(self) -> str:
        # The document itself stays plain MIME: EKS parses it to add its own part (ours inside is gzip).
        return base64.b64encode(self.gpu_user_data.encode()).decode()

    @property
    def pools(self) -> tuple[EksPool, EksPool]:
        return (self.system, self.gpu)


def kubernetes_offer() -> kubernetes_offers.KubernetesOffer:
    offer = kubernetes_offers.offer("aws")
    assert offer is not None  # shipped with the package
    return offer


def kubernetes_problems(spec: ClusterSpec) -> Iterator[ConfigError]:
    """What scheduler kubernetes on EKS cannot build from the spec: one line per key, before any resource."""
    k = f"{CLUSTER_KEY}."
    net = spec.network
    if net.existing is not None:
        yield ConfigError(
            f"{k}network.existing",
            "set with scheduler kubernetes: the EKS control plane needs subnets in two zones and the cluster builds "
            "its own (one for the nodes, one more for the control plane); drop network.existing",
        )
    if net.public_ip:
        yield ConfigError(f"{k}network.publicIp", "true with scheduler kubernetes: EKS nodes stay private; use false")
    if net.egress != "nat":
        yield ConfigError(
            f"{k}network.egress",
            f"{net.egress} with scheduler kubernetes: the nodes pull the GPU operator's and the EFA plugin's images "
            "(nvcr.io, ECR) and reach the EKS and STS APIs; use nat",
        )
    if spec.identity.existing is not None:
        yield ConfigError(
            f"{k}identity.existing",
            "set with scheduler kubernetes: an EKS node group takes an IAM role, not an instance profile; drop it "
            "to let the cluster create the node role",
        )
    if spec.storage.shared is not None:
        yield ConfigError(
            f"{k}storage.shared",
            "set with scheduler kubernetes: the node bootstrap mounts it with apt packages and EKS nodes run "
            "Amazon Linux 2023; mount FSx in pods with the FSx for Lustre CSI driver, or drop storage.shared",
        )
    if spec.image != "auto":
        yield ConfigError(
            f"{k}image",
            f"{spec.image} with scheduler kubernetes: the GPU pool runs the EKS-optimized AL2023 NVIDIA AMI that EKS "
            "picks (amiType); use auto",
        )
    if spec.max_nodes < 1:
        yield ConfigError(f"{k}maxNodes", "0 with scheduler kubernetes: an EKS node group's maxSize is at least 1")


def mime_user_data(cloud_config: str) -> str:
    """The cloud-config as the one part of a MIME multi-part document (what EKS merges its bootstrap into).

    The part is gzip (base64 in the MIME): EC2 takes at most 16 KB of user data and EKS adds its own part (the
    cluster's endpoint and CA) to ours. cloud-init decompresses a part of a gzip content type and then reads it as
    what it starts with, `#cloud-config` (canonical/cloud-init cloudinit/user_data.py: DECOMP_TYPES, _process_msg).
    """
    packed = base64.encodebytes(gzip.compress(cloud_config.encode(), compresslevel=9, mtime=0)).decode()
    if MIME_BOUNDARY in packed:  # pragma: no cover - base64 has no "="-runs of this shape; guard a broken document
        raise ValueError(f"the user data contains the MIME boundary {MIME_BOUNDARY}")
    return (
        "MIME-Version: 1.0\n"
        f'Content-Type: multipart/mixed; boundary="{MIME_BOUNDARY}"\n\n'
        f"--{MIME_BOUNDARY}\n"
        "Content-Type: application/gzip\n"
        "Content-Transfer-Encoding: base64\n\n"
        f"{packed}"
        f"--{MIME_BOUNDARY}--\n"
    )


def eks_usability(efa_count: int) -> FabricUsability:
    """EFA on an EKS GPU node: the AMI brings the kernel side, the plugin advertises it, the image brings NCCL's."""
    if not efa_count:
        return FabricUsability(False, ("no fabric wired",))
    return FabricUsability(
        False,
        (
            "libfabric with the efa provider and aws-ofi-nccl: the EKS AL2023 NVIDIA AMI has only the EFA kernel "
            "module and rdma-core, so they must be in the workload's container image",
        ),
        provides=(
            "EFA kernel module and rdma-core from the EKS AL2023 NVIDIA AMI",
            "vpc.amazonaws.com/efa advertised by aws-efa-k8s-device-plugin",
        ),
    )


@dataclass(frozen=True)
class EksPlan:
    """What the VM layout becomes with EKS: same interfaces, placement, disks; EKS pools, releases and user data."""

    eks: EksLayout
    public_subnet_cidr: str
    user_data: str
    identity: NodeIdentity
    fabric_usability: FabricUsability


def plan(
    spec: ClusterSpec, *, scratch: Scratch, efa_count: int, market: Market, root_gb: int, identity: NodeIdentity
) -> EksPlan:
    """EKS's pools, releases and user data for the VM layout's scratch, EFA count, market, root disk and identity."""
    kube = spec.kubernetes
    assert kube is not None
    offer = kubernetes_offer()
    data = offer.extra
    groups = data["nodeGroups"]
    # The second half of the VPC holds the NAT's subnet (egress nat is required) and the control plane's.
    public_cidr, control_plane_cidr = split_cidr(split_cidr(spec.network.cidr, 1, 2)[1], 1, 2)
    # EKS nodes: no host exporters (the operator's or the chart's DCGM exporter), no self-removal hook (EKS owns
    # the Auto Scaling group): the health check reports. No host EFA check: libfabric is the container's.
    node_spec = replace(spec, dcgm_exporter=False, health_action="report" if spec.health_action else None)
    parts = node_parts(
        node_spec,
        scratch,
        fabric_devices=efa_count,
        nvme_globs=INSTANCE_STORE_GLOBS if scratch.kind == "nvme" else (),
    )
    effects: dict[str, str] = groups["taintEffects"]
    capacity: dict[str, str] = groups["capacityTypes"]
    # the system pool's AMI on its type's architecture (catalog/aws.yaml rules.cpuArch)
    arm = catalog.cpu_arch("aws", kube.system_instance_type) == "arm64"
    system = EksPool(
        key="system",
        instance_type=kube.system_instance_type,
        ami_type=str(groups["systemAmiTypeArm64" if arm else "systemAmiType"]),
        capacity_type=capacity["on-demand"],
        desired=kube.system_nodes,
        min_size=kube.system_nodes,
        max_size=kube.system_nodes,
        root_gb=int(groups["systemRootGb"]),
        labels={f"{LABEL_PREFIX}/pool": "system"},
        taints=(),
    )
    scales = autoscaled(spec)
    ca = data["clusterAutoscaler"]
    labels = gpu_labels(spec)
    gpu = EksPool(
        key="gpu",
        instance_type=spec.instance.instanceType,
        ami_type=str(groups["gpuAmiType"]),
        capacity_type=capacity[market],
        desired=spec.nodes,
        # the Cluster Autoscaler's bounds when it runs (minNodes may be 0: it scales from zero), else fixed
        min_size=spec.min_nodes,
        max_size=spec.max_nodes,
        root_gb=root_gb,
        labels={**labels, str(ca["acceleratorLabel"]): labels[f"{LABEL_PREFIX}/gpu"]} if scales else labels,
        taints=({**GPU_TAINT, "effect": effects[GPU_TAINT["effect"]]},),
        # the node group drains each node itself; the spec's update block sizes its batches
        max_unavailable=_max_unavailable(spec),
        tags=_node_template_tags(ca, efa_count) if scales else {},
        autoscaled=scales,
    )
    role = data["clusterRole"]
    access = data["access"]
    node_policies = tuple(p["arn"] for p in data["nodeRolePolicies"])
    logs = logs_plan(spec)
    # with logs, Fluent Bit's writes are scoped to the cluster's groups: the broad agent policy goes, as in VM mode
    broad = {logs.replaces_policy} if logs is not None else set()
    policies = tuple(p for p in dict.fromkeys((*identity.policies, *node_policies)) if p not in broad)
    identity = replace(identity, policies=policies)
    eks = EksLayout(
        service=offer.service,
        version=kube.version,
        public_endpoint=kube.public_endpoint,
        public_cidrs=kube.public_cidrs if kube.public_endpoint else (),
        control_plane_subnet_cidr=control_plane_cidr,
        cluster_trust_service=str(role["trustService"]),
        cluster_policies=tuple(p["arn"] for p in role["policies"]),
        authentication_mode=str(access["authenticationMode"]),
        admin_policy_arn=str(access["adminPolicyArn"]),
        root_device=str(groups["rootDevice"]),
        system=system,
        gpu=gpu,
        releases=_with_autoscaler_values(spec, releases(spec), ca) if scales else releases(spec),
        gpu_user_data=mime_user_data(bootstrap.cloud_init(parts)),
        autoscaler=_autoscaler(ca) if scales else None,
        logs=logs,
        cluster_name=kube.cluster_name,
    )
    return EksPlan(
        eks=eks,
        public_subnet_cidr=public_cidr,
        user_data=bootstrap.cloud_init(parts),
        identity=identity,
        fabric_usability=eks_usability(efa_count),
    )


def _max_unavailable(spec: ClusterSpec) -> int:
    """update_config.max_unavailable of the GPU node group: the spec's batch, within the API's cap."""
    batch, cap = spec.update.max_unavailable(spec.nodes), cloud_update("aws").kubernetes_max_unavailable
    return batch if cap is None else min(batch, cap)


def _node_template_tags(ca: Mapping[str, Any], efa_count: int) -> dict[str, str]:
    """What CA cannot learn of an empty group from its instance type, labels and taints: the EFA devices each node
    advertises (the GPU group's own tags; CA reads them with eks:DescribeNodegroup)."""
    if not efa_count:
        return {}
    return {f"{ca['nodeTemplateResourcePrefix']}{ca['efaResource']}": str(efa_count)}


def _with_autoscaler_values(
    spec: ClusterSpec, chosen: tuple[Release, ...], ca: Mapping[str, Any]
) -> tuple[Release, ...]:
    """The autoscaler's per-stack values: the region, and the image of the cluster's Kubernetes minor (CA's rule:
    the newest CA release of the cluster's minor; charts.yaml imageTags)."""
    kube = spec.kubernetes
    assert kube is not None
    tags: Mapping[str, str] = charts()[ca["release"]]["imageTags"]
    if kube.version not in tags:  # the data must cover every version EKS offers: a packaging mistake
        raise ValueError(f"charts.yaml cluster-autoscaler imageTags has no tag for Kubernetes {kube.version}")
    stack = {"awsRegion": spec.region, "image": {"tag": tags[kube.version]}}
    return tuple(replace(r, values=merge(r.values, stack)) if r.name == ca["release"] else r for r in chosen)


def _autoscaler(ca: Mapping[str, Any]) -> EksAutoscaler:
    identity = ca["podIdentity"]
    return EksAutoscaler(
        release=str(ca["release"]),
        namespace=str(ca["namespace"]),
        service_account=str(ca["serviceAccount"]),
        addon=str(identity["addon"]),
        trust_service=str(identity["trustService"]),
        trust_actions=tuple(identity["trustActions"]),
        policy=tuple(
            PolicyStatement(
                sid=str(st["sid"]),
                actions=tuple(st["actions"]),
                resource=str(st["resource"]),
                condition={op: dict(kv) for op, kv in (st.get("condition") or {}).items()},
            )
            for st in ca["policy"]
        ),
    )


def policy_document(statements: tuple[PolicyStatement, ...], cluster: str, nodegroups: str) -> str:
    """The IAM policy JSON with this cluster's name and node-group ARN pattern filled in."""
    fill = {"{cluster}": cluster, "{nodegroups}": nodegroups}

    def filled(text: str) -> str:
        for token, value in fill.items():
            text = text.replace(token, value)
        return text

    body = []
    for st in statements:
        entry: dict[str, Any] = {
            "Sid": st.sid,
            "Effect": "Allow",
            "Action": list(st.actions),
            "Resource": filled(st.resource),
        }
        if st.condition:
            entry["Condition"] = {op: {filled(k): filled(v) for k, v in kv.items()} for op, kv in st.condition.items()}
        body.append(entry)
    return json.dumps({"Version": "2012-10-17", "Statement": body})
