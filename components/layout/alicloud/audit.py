"""The audit trail of an MLPS level 3 cluster on Alibaba Cloud (pure): `compliance: mlps3` gets one ActionTrail trail
delivering the account's API events to an SLS project of the stack. Facts: capabilities `audit:`;
`components/alicloud/audit.py` builds it."""

from __future__ import annotations

from dataclasses import dataclass

from ...spec import ClusterSpec
from .data import alicloud_data

TRAIL_NAME_MAX = 36  # ROS ALIYUN::ACTIONTRAIL::Trail Name: 6 to 36 characters (capabilities `audit.source`)
SUFFIX = "-audit"


@dataclass(frozen=True)
class AliAudit:
    trail_name: str  # unique within the account; the cluster name (at most 31 characters) and -audit
    event_rw: str  # Read, Write or All
    service_role: str  # the service-linked role ActionTrail delivers with
    retention_days: int  # what the standard asks of the records (the SLS Logstore keeps them permanently)


def plan(spec: ClusterSpec) -> AliAudit | None:
    if spec.compliance != "mlps3":
        return None
    data = alicloud_data()["audit"]
    return AliAudit(
        trail_name=f"{spec.name[: TRAIL_NAME_MAX - len(SUFFIX)]}{SUFFIX}",
        event_rw=str(data["eventRw"]),
        service_role=str(data["serviceRole"]),
        retention_days=int(data["retentionDays"]),
    )
