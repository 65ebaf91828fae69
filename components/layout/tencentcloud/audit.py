"""The audit trail of an MLPS level 3 cluster on Tencent Cloud (pure): `compliance: mlps3` gets one CloudAudit
tracking set of the account's API events (every product, read and write) delivered to a CLS topic in a logset of the
stack, kept `retention_days`. Facts: capabilities/tencentcloud.yaml `audit:`; `components/tencentcloud/audit.py`
builds it."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ...spec import ClusterSpec
from .data import tencent_data

SUFFIX = "-audit"
_NAME = re.compile(r"[^A-Za-z0-9_-]")  # track, logset names: letters, digits, '-' and '_'


@dataclass(frozen=True)
class TencentAudit:
    track_name: str  # CloudAudit tracking set: 3 to 48 letters, digits, '-' and '_'
    logset: str  # the CLS logset holding the topic (unique per account: cluster and stack)
    topic: str
    action_type: str
    resource_type: str
    event_names: tuple[str, ...]
    storage_type: str
    storage_prefix: str
    retention_days: int  # the topic's period: what the standard asks of the records


def plan(spec: ClusterSpec) -> TencentAudit | None:
    if spec.compliance != "mlps3":
        return None
    data = tencent_data()["audit"]
    base = _NAME.sub("-", f"{spec.name}-{spec.stack}")
    limit = int(data["nameMax"])
    return TencentAudit(
        track_name=f"{base[: limit - len(SUFFIX)]}{SUFFIX}",
        logset=f"{base}{SUFFIX}",
        topic="cloudaudit",
        action_type=str(data["actionType"]),
        resource_type=str(data["resourceType"]),
        event_names=tuple(str(e) for e in data["eventNames"]),
        storage_type=str(data["storageType"]),
        storage_prefix=str(data["storagePrefix"]),
        retention_days=int(data["retentionDays"]),
    )
