"""`monitoring.logs` on Tencent Cloud (pure): the nodes' logs to Cloud Log Service (CLS).

One logset and one topic per cluster (kept `retentionDays`: the topic's `period`), a machine group whose members
are the nodes carrying the cluster's label (LogListener's `-label`, so a recreated node joins whatever its address),
and one collection config per file, each attached to the group. Every node kind (the GPU nodes, the login node) gets
the `loglistener` part: LogListener from Tencent's private-network mirror, initialised with the label and an API key.

LogListener takes only an API key (no CVM role, no token: catalog/logs/tencentcloud.yaml `credentials`), so the
stack makes a CAM sub-user whose only grant is pushLog on this topic (and the two actions CLS does not scope), and
keeps its key in an SSM secret the nodes' own CAM role may read, and nothing else: no key is in the boot data.
Facts and their sources: catalog/logs/tencentcloud.yaml; `components/tencentcloud/logs.py` builds it.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from ... import bootstrap
from ...bootstrap import Part
from ...catalog import monitoring as catalog_monitoring
from ...spec import ClusterSpec
from .tke_logs import TkeLogs
from .tke_logs import plan as tke_plan

TOPIC = "nodes"
SECRET_VERSION = "v1"
_NAME = re.compile(r"[^A-Za-z0-9_-]")  # SSM secret and CAM user names: letters, digits, '_' and '-'
UNIT = bootstrap.oneshot_unit(
    "gpu-cluster: LogListener ships this node's logs to the cluster's CLS topic",
    name="loglistener",
    after=["network-online.target"],
    wants=["network-online.target"],
)


def data() -> dict[str, Any]:
    """catalog/logs/tencentcloud.yaml."""
    return catalog_monitoring.cloud_logs("tencentcloud")


@dataclass(frozen=True)
class LogSource:
    """One CLS collection config: one file."""

    name: str
    path: str


@dataclass(frozen=True)
class TencentLogs:
    logset: str  # the logset's name (unique per account: cluster and stack)
    topic: str
    machine_group: str
    label: str  # the nodes' LogListener label, the machine group's one value
    retention_days: int
    sources: tuple[LogSource, ...]
    user: str  # the CAM sub-user whose API key LogListener uses
    secret: str  # the SSM secret holding that key
    secret_version: str
    part: Part  # the nodes' bootstrap part
    tke: TkeLogs | None = None  # scheduler kubernetes: TKE's log agent and LogConfigs (layout/tencentcloud/tke_logs.py)
    loglistener: bool = True  # a node runs LogListener from our boot data (on TKE only a login node does)

    def user_policy(self, region: str, owner_uin: str, topic_id: str) -> str:
        """The sub-user's grant: pushLog on this topic; getConfig and agentHeartBeat on "*" (CLS scopes neither)."""
        grant = data()["grant"]
        resource = str(grant["resource"]).format(region=region, owner=owner_uin, topic=topic_id)
        statements = [
            {"action": [f"name/{a}" for a in grant["scoped"]], "effect": "allow", "resource": [resource]},
            {"action": [f"name/{a}" for a in grant["unscoped"]], "effect": "allow", "resource": ["*"]},
        ]
        return json.dumps({"statement": statements, "version": "2.0"}, sort_keys=True)

    def node_policy(self, region: str, owner_uin: str, creator_uin: str) -> str:
        """The nodes' role: read this secret only (SSM's resource qcs::ssm:<region>:uin/<owner>:secret/creatorUin/
        <creator>/<name>, catalog/logs/tencentcloud.yaml `credentials.secretResource`)."""
        resource = str(data()["credentials"]["secretResource"]).format(
            region=region, owner=owner_uin, creator=creator_uin, name=self.secret
        )
        statement = {"action": ["name/ssm:GetSecretValue"], "effect": "allow", "resource": [resource]}
        return json.dumps({"statement": [statement], "version": "2.0"}, sort_keys=True)


def label(spec: ClusterSpec) -> str:
    """Unique per stack and cluster (a node joins every label group of its account), at most `identity.maxLength`."""
    limit = int(data()["identity"]["maxLength"])
    digest = hashlib.sha256(f"{spec.stack}/{spec.name}".encode()).hexdigest()[:12]
    return f"{spec.name[: limit - len(digest) - 1]}-{digest}"


def loglistener_part(spec: ClusterSpec, node_label: str, secret: str) -> Part:
    """LogListener and tccli installed once; the key read with the node's role and LogListener initialised with it at
    every boot (a rotated key is picked up); tested on stubs."""
    install, tccli = data()["install"], data()["credentials"]["tccli"]
    env = {
        "REGION": spec.region,
        "LOGLISTENER_URL": str(install["url"]),
        "LOGLISTENER_DIR": str(install["dir"]),
        "NETWORK": str(install["network"]),
        "LABEL": node_label,
        "SECRET_NAME": secret,
        "SECRET_VERSION": SECRET_VERSION,
        "SSM_ENDPOINT": str(data()["credentials"]["ssmEndpoint"]),
        "TCCLI_INDEX": str(tccli["index"]),
        "TCCLI_HOST": str(urlsplit(str(tccli["index"])).hostname),
        "TCCLI_VENV": str(tccli["venv"]),
    }
    return bootstrap.service_part(
        "loglistener",
        script_text=bootstrap.script("tencentcloud_loglistener.sh"),
        env=env,
        unit=UNIT,
        summary=f"installs LogListener and joins CLS machine group label {node_label} (monitoring.logs).",
        no_block=True,
    )


def plan(spec: ClusterSpec) -> TencentLogs | None:
    logs = spec.monitoring.logs
    if not logs.enabled:
        return None
    base = _NAME.sub("-", f"{spec.name}-{spec.stack}")
    node_label = label(spec)
    secret = f"{base}-loglistener"[:128]
    tke = spec.scheduler == "kubernetes"
    return TencentLogs(
        logset=f"{base}-logs",
        topic=TOPIC,
        machine_group=f"{base}-nodes",
        label=node_label,
        retention_days=logs.retention_days,
        sources=tuple(LogSource(str(s["name"]), str(s["path"])) for s in data()["sources"]),
        user=f"{base}-loglistener",  # AddUser documents no length limit (cam 3.1.181 AddUserRequest Name)
        secret=secret,
        secret_version=SECRET_VERSION,
        part=loglistener_part(spec, node_label, secret),
        tke=tke_plan(spec) if tke else None,
        loglistener=not tke or spec.login is not None,
    )
