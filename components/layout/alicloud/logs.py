"""`monitoring.logs` on Alibaba Cloud (pure): the nodes' logs to Simple Log Service (SLS).

One SLS project per cluster (its name gets a random suffix at deploy: project names are unique across Alibaba Cloud)
with one logstore kept `retentionDays`, a machine group of the cluster's user-defined identity, and one Logtail
configuration per file set (cloud-init, syslog with journald's messages, and Slurm's logs where Slurm runs), each
attached to the group. Every node (the GPU nodes, an elastic partition's, the Slurm head, the login node) gets the
`logtail` part: Logtail installed with Alibaba's documented command from the region's internal OSS endpoint (no NAT)
and the identity file, which is all that joins it to the group: a same-account ECS instance needs no user identifier
and no RAM grant. Facts and their sources: catalog/logs/alicloud.yaml; `components/alicloud/logs.py` builds it.

ACK (scheduler kubernetes): the node pools' boot data is ACK's, so no Logtail part there. ACK's `logtail-ds` add-on
runs Logtail on every node and joins them to the machine group k8s-group-<cluster id> of the same project; two plugin
configurations on it ship the containers' stdout and stderr and the nodes' journal (kubelet, containerd, the kernel)
to the logstore (catalog: kubernetes). A login node, if any, ships its files as in VM mode.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from ... import bootstrap
from ...bootstrap import Part
from ...catalog import monitoring as catalog_monitoring
from ...errors import CLUSTER_KEY
from ...spec import ClusterSpec
from ...text import one_line

LOGSTORE = "nodes"
MACHINE_GROUP = "nodes"
UNIT = bootstrap.oneshot_unit(
    "gpu-cluster: Logtail ships this node's logs to the cluster's SLS logstore",
    name="logtail",
    after=["network-online.target"],
    wants=["network-online.target"],
)


def data() -> dict[str, Any]:
    """catalog/logs/alicloud.yaml."""
    return catalog_monitoring.cloud_logs("alicloud")


@dataclass(frozen=True)
class LogSource:
    """One Logtail configuration: the files of one directory matching one pattern (top level only)."""

    name: str
    directory: str
    pattern: str


@dataclass(frozen=True)
class PluginConfig:
    """One Logtail plugin configuration (inputType plugin) on the ACK nodes' machine group."""

    name: str
    input_detail: str  # inputDetail JSON: {"plugin": {"inputs": [...]}}


@dataclass(frozen=True)
class AckLogs:
    """ACK: the logtail-ds add-on writing to the cluster's project, its machine group and configurations."""

    addon: str
    project_key: str  # the add-on config key naming the SLS project
    machine_group_prefix: str  # + the cluster id: the group and its custom identifier
    configs: tuple[PluginConfig, ...]

    def addon_config(self, project: str) -> str:
        return json.dumps({self.project_key: project}, sort_keys=True)


@dataclass(frozen=True)
class AliLogs:
    project_prefix: str  # the SLS project's name before the deploy-time suffix
    logstore: str
    machine_group: str
    identity: str  # the nodes' /etc/ilogtail/user_defined_id, the machine group's one identifier
    retention_days: int
    sources: tuple[LogSource, ...]
    encrypt_type: str | None  # the logstore's SLS service-key encryption (encryption set); None: as SLS defaults
    notes: tuple[str, ...]  # what the plan says beside it
    part: Part  # the nodes' bootstrap part
    ack: AckLogs | None = None  # scheduler kubernetes: the add-on, its machine group and plugin configurations

    @property
    def login_user_data(self) -> str:
        """A login node without Slurm has no boot data of its own: this part alone."""
        return bootstrap.cloud_init((self.part,))


def identity(spec: ClusterSpec) -> str:
    """Unique per stack and cluster (a node joins every machine group of its account with its identity, so two
    clusters of one name must differ), within the 30 characters Alibaba's own installer takes."""
    limit = int(data()["identity"]["maxLength"])
    digest = hashlib.sha256(f"{spec.stack}/{spec.name}".encode()).hexdigest()[:12]
    return f"{spec.name[: limit - len(digest) - 1]}-{digest}"


def logtail_part(spec: ClusterSpec, user_defined_id: str) -> Part:
    """Logtail installed once and the identity written, at every boot (idempotent; tested on stubs)."""
    install = data()["install"]
    env = {
        "REGION": spec.region,
        "INSTALLER_URL": str(install["url"]).format(region=spec.region),
        "INSTALLER_ARGS": " ".join(str(a).format(region=spec.region) for a in install["args"]),
        "LOGTAIL_DIR": str(install["dir"]),
        "ID_FILE": str(install["identityFile"]),
        "USER_DEFINED_ID": user_defined_id,
    }
    return bootstrap.service_part(
        "logtail",
        script_text=bootstrap.script("alicloud_logtail.sh"),
        env=env,
        unit=UNIT,
        summary=f"installs Logtail and joins SLS machine group identity {user_defined_id} (monitoring.logs).",
        no_block=True,
    )


def plan(spec: ClusterSpec) -> AliLogs | None:
    logs = spec.monitoring.logs
    if not logs.enabled:
        return None
    slurm, ack = spec.scheduler == "slurm", spec.scheduler == "kubernetes"
    # on ACK the files are the login node's only: without one, no file configuration and no machine group of ours
    sources = tuple(
        LogSource(str(s["name"]), str(s["dir"]), str(s["pattern"]))
        for s in data()["sources"]
        if (s.get("when") is None or (s["when"] == "slurm" and slurm)) and not (ack and spec.login is None)
    )
    encrypted = spec.encryption_key != "provider"
    notes = (
        (
            f"{CLUSTER_KEY}.monitoring.logs: the SLS logstore is encrypted with SLS's service key, not "
            "encryption.key (bring-your-own-key needs a RAM role SLS assumes, not built: "
            f"{one_line(data()['encryption']['source'])})",
        )
        if encrypted
        else ()
    )
    user_defined_id = identity(spec)
    return AliLogs(
        project_prefix=f"{spec.name}-logs",
        logstore=LOGSTORE,
        machine_group=MACHINE_GROUP,
        identity=user_defined_id,
        retention_days=logs.retention_days,
        sources=sources,
        encrypt_type=str(data()["encryption"]["encryptType"]) if encrypted else None,
        notes=notes,
        part=logtail_part(spec, user_defined_id),
        ack=_ack() if ack else None,
    )


def _ack() -> AckLogs:
    kube = data()["kubernetes"]
    return AckLogs(
        addon=str(kube["addon"]),
        project_key=str(kube["projectKey"]),
        machine_group_prefix=str(kube["machineGroupPrefix"]),
        configs=tuple(
            PluginConfig(str(c["name"]), json.dumps({"plugin": {"inputs": c["inputs"]}}, sort_keys=True))
            for c in kube["configs"]
        ),
    )
