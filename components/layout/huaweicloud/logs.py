"""`monitoring.logs` on Huawei Cloud (pure): the nodes' logs to Log Tank Service (LTS).

One log group per cluster (kept `retentionDays`: the group's `ttl_in_days`) and one stream in it. Every node kind
(the GPU nodes, the Slurm head, the login node) gets the `icagent` part: ICAgent from Huawei's installer in its
IAM-agency mode, so no key is in the boot data; the nodes' agency (the head's too) gets the role ICAgent needs
(identity.py). With Slurm, slurmctld's and slurmd's files are collected as well (`slurm_files`). With CCE the pool
nodes run CCE's own ICAgent (the provider installs it with the cluster): LTS's CCE ingestion (`CceLogs`) binds their
own files instead, and the nodes' agency needs no role for it.

With an AS group (`nodeGroup: managed`) the nodes AS launches are unknown at deploy, so the host group is a LABEL group
of one custom identifier of the cluster and stack (`LabelHosts`, the same LABEL path as CCE's): every node of the
stack, the AS nodes and the login node, gets the `lts-label` part, which writes the identifier where ICAgent reads it
before ICAgent starts, and LTS adds each host reporting it to the group. The login node joins the same group rather
than an IP group of its own: one host group and one access configuration bind the same files on every node.

Which files go to the stream: an LTS host group of the cluster's instances and a host access configuration, which
pulumi-huaweicloud 0.0.12 lacks, so `components/huaweicloud/lts_ingestion.py` makes them with a dynamic resource
through Huawei's LTS SDK. The group takes no key, so `encryption` does not reach the logs (warned). Facts and their
sources: catalog/logs/huaweicloud.yaml; `components/huaweicloud/logs.py` builds it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ... import bootstrap
from ...bootstrap import Part
from ...bootstrap.slurm_conf import SLURMCTLD_LOG, SLURMD_LOG, SLURMDBD_LOG
from ...catalog import monitoring as catalog_monitoring
from ...errors import CLUSTER_KEY, ConfigError
from ...spec import ClusterSpec
from ...text import one_line
from ..kubernetes import releases
from .nodes import managed_group

STREAM = "nodes"
_NAME = re.compile(r"[^A-Za-z0-9_.-]")  # LTS group and stream names: letters, digits, '_', '-' and '.'
UNIT = bootstrap.oneshot_unit(
    "gpu-cluster: ICAgent ships this node's logs to the cluster's LTS log group",
    name="icagent",
    after=["network-online.target"],
    wants=["network-online.target"],
)
LABEL_UNIT = bootstrap.oneshot_unit(
    "gpu-cluster: this node's LTS custom identifier, read by ICAgent",
    name="lts-label",
    after=["local-fs.target"],
    before=["gpu-cluster-icagent.service"],
)


def data() -> dict[str, Any]:
    """catalog/logs/huaweicloud.yaml."""
    return catalog_monitoring.cloud_logs("huaweicloud")


@dataclass(frozen=True)
class HuaweiLogs:
    group: str  # the log group's name (unique per account and region: cluster and stack)
    stream: str
    retention_days: int
    files: tuple[str, ...]  # what the host access configuration binds to the stream
    host_group: str  # the LTS host group of the cluster's instances (unique per project, as the log group)
    access_config: str  # the host access configuration's name
    single_line_mode: str  # how LTS stamps each line (catalog ingestion.singleLineMode)
    host_wait_minutes: int  # how long the ingestion waits for ICAgent to report every host
    role: str  # the role the nodes' agency needs for ICAgent
    part: Part | None  # the ECS nodes' bootstrap part; None with CCE, whose ICAgent is CCE's own
    warnings: tuple[str, ...]
    cce: CceLogs | None = None  # scheduler kubernetes: LTS's CCE ingestion in place of the ECS hosts'
    # monitoring.logs.controlPlane: CCE's own names of the components whose logs CCE ships (cce.ClusterLogConfig)
    control_plane: tuple[str, ...] = ()
    stdout: CceStdout | None = None  # with CCE: the GPU software's container stdout, to its own stream
    # an AS group: the LABEL host group of the stack's custom identifier, and the part writing it on every node
    label_hosts: LabelHosts | None = None
    label_part: Part | None = None

    @property
    def node_parts(self) -> tuple[Part, ...]:
        """What every ECS node of the stack gets: the identifier (an AS group) before ICAgent; none with CCE."""
        return tuple(p for p in (self.label_part, self.part) if p is not None)

    @property
    def access_types(self) -> tuple[str, str]:
        """The host group's agent_access_type and the access configuration's type: CCE's, the custom identifier's
        (an AS group), else the ECS instances' by id (catalog `ingestion`)."""
        if self.cce is not None:
            return self.cce.agent_access_type, self.cce.access_config_type
        if self.label_hosts is not None:
            return self.label_hosts.agent_access_type, self.label_hosts.access_config_type
        ingestion = data()["ingestion"]
        return str(ingestion["agentAccessType"]), str(ingestion["accessConfigType"])


@dataclass(frozen=True)
class LabelHosts:
    """A LABEL host group of one custom identifier the stack's own nodes write (catalog/logs/huaweicloud.yaml
    `customIdentifier`): no host ids, nothing to wait for; an AGENT access configuration of the nodes' files."""

    agent_access_type: str  # LABEL
    access_config_type: str  # AGENT
    label: str  # the custom identifier: the host group's name


@dataclass(frozen=True)
class CceLogs:
    """LTS's CCE ingestion: a host group of the custom identifier CCE's ICAgent reports and a K8S_CCE access
    configuration of the cluster (catalog/logs/huaweicloud.yaml `kubernetes`)."""

    agent_access_type: str  # LABEL
    host_group_label: str  # "k8s-log-{cluster_id}", filled with the cce.Cluster's id at deploy
    access_config_type: str  # K8S_CCE
    path_type: str  # host_file: the nodes' own files

    def label(self, cluster_id: str) -> str:
        return self.host_group_label.format(cluster_id=cluster_id)


@dataclass(frozen=True)
class CceStdout:
    """A second CCE access configuration: the containers' stdout and stderr in the GPU software's namespaces
    (catalog/logs/huaweicloud.yaml `kubernetes.stdout`), with its own LABEL host group of the same identifier."""

    stream: str
    host_group: str
    access_config: str
    namespaces: tuple[str, ...]
    path_type: str  # container_stdout
    stdout: bool
    stderr: bool

    @property
    def namespace_regex(self) -> str:
        """LTS's namespace_regex: exactly these namespaces (Kubernetes names: [a-z0-9-], nothing to escape)."""
        return "^(" + "|".join(self.namespaces) + ")$"


def logs_problems(spec: ClusterSpec) -> Iterator[ConfigError]:
    """ICAgent's agency mode needs the region's LTS access address: refused where none was read (not with CCE, whose
    ICAgent is CCE's own)."""
    if not spec.monitoring.logs.enabled or spec.scheduler == "kubernetes":
        return
    if spec.region not in data()["accessIps"]:
        known = ", ".join(sorted(data()["accessIps"]))
        yield ConfigError(
            f"{CLUSTER_KEY}.monitoring.logs.enabled",
            f"true, but ICAgent's LTS access address for {spec.region} is not known here (catalog/logs/"
            f"huaweicloud.yaml accessIps: {known}; {one_line(data()['accessIpsSource'])}); turn logs off there",
        )


def slurm_files(spec: ClusterSpec) -> tuple[str, ...]:
    """Slurm's own logs (bootstrap/slurm_conf.py, as the other clouds collect them): slurmctld's (and slurmdbd's) on the
    head, slurmd's on the GPU nodes. One access configuration serves every host of the group, and ICAgent collects a
    path only where the file exists, so the list is the union."""
    if spec.scheduler != "slurm" or spec.slurm is None:
        return ()
    return (SLURMCTLD_LOG, *((SLURMDBD_LOG,) if spec.slurm.accounting else ()), SLURMD_LOG)


def icagent_part(region: str) -> Part:
    """ICAgent installed once in agency mode; tested on stubs."""
    install = data()["install"]
    env = {
        "REGION": region,
        "INSTALLER_URL": str(install["script"]).format(region=region),
        "ACCESS_IP": str(data()["accessIps"][region]),
        "ACCESS_DOMAIN": str(install["accessDomain"]).format(region=region),
        "OBS_DOMAIN": str(install["obsDomain"]).format(region=region),
        "ICAGENT_DIR": str(install["dir"]),
    }
    return bootstrap.service_part(
        "icagent",
        script_text=bootstrap.script("huaweicloud_icagent.sh"),
        env=env,
        unit=UNIT,
        summary="installs ICAgent, LTS's collector, with the node's IAM agency (monitoring.logs).",
        no_block=True,
    )


def label_part(label: str) -> Part:
    """The custom identifier in ICAgent's custom_tag file, before ICAgent starts; tested on stubs."""
    c = data()["customIdentifier"]
    env = {
        "LTS_LABEL": label,
        "LABEL_FILE": str(c["file"]),
        "DIR_MODE": str(c["dirMode"]),
        "FILE_MODE": str(c["fileMode"]),
    }
    return bootstrap.service_part(
        "lts-label",
        script_text=bootstrap.script("huaweicloud_lts_label.sh"),
        env=env,
        unit=LABEL_UNIT,
        summary="writes the node's LTS custom identifier, by which the AS group's nodes join the host group.",
    )


def _label_hosts(base: str) -> LabelHosts:
    """The identifier from the catalog's form, in the characters and length LTS takes."""
    c = data()["customIdentifier"]
    allowed = re.compile(str(c["labelPattern"]))
    label = "".join(ch if allowed.fullmatch(ch) else "-" for ch in str(c["label"]).format(base=base))
    return LabelHosts(
        agent_access_type=str(c["agentAccessType"]),
        access_config_type=str(c["accessConfigType"]),
        label=label[: int(c["labelMaxLength"])],
    )


def plan(spec: ClusterSpec) -> HuaweiLogs | None:
    """None with logs off; call after `logs_problems` found nothing."""
    logs = spec.monitoring.logs
    if not logs.enabled:
        return None
    base = _NAME.sub("-", f"{spec.name}-{spec.stack}")[:58]  # lts.Group group_name: at most 64 characters
    group = f"{base}-logs"
    cce = _cce() if spec.scheduler == "kubernetes" else None
    # an AS group's nodes are unknown at deploy: they join by the stack's identifier (managed_group: not with CCE)
    labels = _label_hosts(base) if managed_group(spec) is not None else None
    sources = data()["kubernetes"]["sources"] if cce else data()["sources"]
    files = (*(str(s["path"]) for s in sources), *slurm_files(spec))
    role = str(data()["credentials"]["role"])
    ingestion = data()["ingestion"]
    key = f"{CLUSTER_KEY}.monitoring.logs"
    warnings: list[str] = []
    if cce is not None and spec.login is not None:
        warnings.append(
            f"{key}: with scheduler kubernetes only the CCE nodes' files reach LTS (its CCE ingestion); the login "
            "node is an ECS outside CCE's host group and runs no ICAgent of ours, so its logs are not collected"
        )
    if spec.identity.existing and cce is None:
        warnings.append(
            f"{key}: identity.existing {spec.identity.existing} is not this stack's: it must carry the role "
            f"{role} for ICAgent ({one_line(data()['credentials']['source'])})"
        )
    if spec.network.egress != "nat" and cce is None:
        warnings.append(
            f"{key}: network.egress {spec.network.egress}: the nodes fetch ICAgent from OBS "
            f"({data()['install']['script'].format(region=spec.region)}) and report to the LTS access address; "
            "that these are reached without the NAT gateway is not verified here"
        )
    # every Huawei cluster has a DEW key (encryption.py: provider and auto both plan one), which the logs miss
    warnings.append(
        f"{key}: the log group is not under the cluster's DEW key ({one_line(data()['encryption']['source'])}); "
        "LTS keeps the logs in its own storage"
    )
    control_plane = _control_plane(spec) if cce else ()
    if control_plane:
        warnings.append(
            f"{key}.controlPlane: CCE writes {', '.join(control_plane)} to the LTS log group it chooses for the "
            f"cluster, not {group}, kept {logs.retention_days} days (the cluster's log configuration ttl_in_days) and "
            "not under the cluster's DEW key"
        )
    return HuaweiLogs(
        group=group,
        stream=STREAM,
        retention_days=logs.retention_days,
        files=files,
        host_group=f"{base}-hosts",
        access_config=f"{base}-nodes",
        single_line_mode=str(ingestion["singleLineMode"]),
        host_wait_minutes=int(ingestion["hostWaitMinutes"]),
        role=role,
        part=None if cce else icagent_part(spec.region),
        warnings=tuple(warnings),
        cce=cce,
        control_plane=control_plane,
        stdout=_stdout(spec, base) if cce else None,
        label_hosts=labels,
        label_part=label_part(labels.label) if labels else None,
    )


def _stdout(spec: ClusterSpec, base: str) -> CceStdout | None:
    """The GPU software: every in-cluster release but the monitoring chart's (None where none is installed)."""
    monitoring_chart = catalog_monitoring.kubernetes_chart()
    namespaces = sorted({r.namespace for r in releases(spec) if r.chart != monitoring_chart})
    if not namespaces:
        return None
    k = data()["kubernetes"]["stdout"]
    return CceStdout(
        stream=str(k["stream"]),
        host_group=f"{base}-stdout-hosts",
        access_config=f"{base}-stdout",
        namespaces=tuple(namespaces),
        path_type=str(k["pathType"]),
        stdout=bool(k["stdout"]),
        stderr=bool(k["stderr"]),
    )


def _control_plane(spec: ClusterSpec) -> tuple[str, ...]:
    """The spec's control plane types by CCE's names (catalog/monitoring.yaml logs.huaweicloud.kubernetes)."""
    plane = catalog_monitoring.control_plane_logs("huaweicloud")
    if plane is None:
        return ()
    return tuple(str(plane["names"][t]) for t in spec.monitoring.logs.control_plane)


def _cce() -> CceLogs:
    k = data()["kubernetes"]
    return CceLogs(
        agent_access_type=str(k["agentAccessType"]),
        host_group_label=str(k["hostGroupLabel"]),
        access_config_type=str(k["accessConfigType"]),
        path_type=str(k["pathType"]),
    )
