"""The nodes' IAM identity on AWS: the created role's policies or an existing instance profile, the one grant the
self-removal hook needs (SetInstanceHealth in the node's own Auto Scaling group) and the one a vGPU slice needs to read
its GRID driver from AWS's bucket."""

from __future__ import annotations

from dataclasses import dataclass, replace

from ...errors import CLUSTER_KEY, ConfigError
from ...spec import ClusterSpec
from ..node import grid_driver
from . import data
from .data import health_hook_action
from .logs import AwsLogs
from .scaling import AwsScaling
from .scaling import data as scaling_data

__all__ = [
    "DriverGrant",
    "NodeIdentity",
    "driver_grant",
    "fleet_identity",
    "health_hook",
    "health_hook_action",
    "node_identity",
]


@dataclass(frozen=True)
class DriverGrant:
    """The node role may read the GRID driver's runfile: exactly that object (the EC2 guide asks for
    AmazonS3ReadOnlyAccess; one object is all the install reads, and a known key needs no s3:ListBucket)."""

    bucket: str
    key: str
    action: str = "s3:GetObject"


def driver_grant(spec: ClusterSpec) -> DriverGrant | None:
    """A node that installs its GRID driver from an S3 object (catalog gridDriver url s3://...): the read it needs.
    None for every other node (whole GPUs, images of your own, EKS pools whose AMI carries the driver)."""
    driver = grid_driver(spec)
    url = str(driver["url"]) if driver else ""
    if not url.startswith("s3://"):
        return None
    bucket, _, key = url.removeprefix("s3://").partition("/")
    return DriverGrant(bucket, key)


@dataclass(frozen=True)
class NodeIdentity:
    """The nodes' IAM identity: a role with an instance profile, or an existing instance profile."""

    existing_profile: str | None  # identity.existing: use it, create nothing
    trust_service: str  # who may assume the created role
    policies: tuple[str, ...]  # managed policy ARNs attached to the created role (empty with existing)


def node_identity(spec: ClusterSpec) -> NodeIdentity:
    k = f"{CLUSTER_KEY}.identity"
    ident = spec.identity
    role = data.node_role()
    if ident.existing is not None:
        # An instance profile carries a role we do not manage: we cannot attach policies to it.
        if ident.policies or ident.read_storage:
            key = f"{k}.policies" if ident.policies else f"{k}.readStorage"
            raise ConfigError(
                key,
                f"set together with identity.existing ({ident.existing}); attach policies to that profile's "
                "role yourself, or drop identity.existing to let the cluster create its role",
            )
        return NodeIdentity(ident.existing, role.trust_service, ())
    arns = list(role.policies)
    if ident.read_storage:
        arns.append(role.read_storage)
    arns.extend(ident.policies)
    return NodeIdentity(None, role.trust_service, tuple(dict.fromkeys(arns)))


def fleet_identity(identity: NodeIdentity, scaling: AwsScaling | None, logs: AwsLogs | None = None) -> NodeIdentity:
    """With gpuUtilization the CloudWatch agent's metric write is the inline PutMetricData grant scoped to its
    namespace (scaling.AwsScaling.permission), with monitoring.logs its log writes are on the cluster's group only
    (logs.AwsLogs.actions): the broader CloudWatchAgentServerPolicy (every namespace, every group) is then left off."""
    broad = {
        *((scaling_data()["gpuUtilization"]["replacesPolicy"],) if scaling is not None and scaling.gpu else ()),
        *((logs.replaces_policy,) if logs is not None else ()),
    }
    if not broad:
        return identity
    return replace(identity, policies=tuple(p for p in identity.policies if p not in broad))


def health_hook(spec: ClusterSpec) -> bool:
    """Self-removal on AWS: SetInstanceHealth in the node's own Auto Scaling group (managed groups only)."""
    if spec.health_action != "replace":
        return False
    if spec.node_group != "managed":
        raise ConfigError(
            f"{CLUSTER_KEY}.health.action",
            "replace needs nodeGroup: managed on AWS (an Auto Scaling group replaces an unhealthy node; an "
            "instance is not replaced); use report (the default for instances) or nodeGroup: managed",
        )
    return True
