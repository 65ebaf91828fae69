"""`monitoring.logs` with `scheduler: kubernetes` on Tencent Cloud (pure): TKE's own log collection into the
cluster's CLS logset.

The node pools run no gpu-cluster boot data, so no LogListener part: the cluster's `log_agent` installs TKE's log
components (tke-log-agent on every node, cls-provisioner), and one `kubernetes.LogConfig` per source turns into a CLS
collection config: the nodes' syslog (kubelet, containerd, the kernel) and the stdout of the GPU software's
namespaces. Each LogConfig writes to a topic of its own (TKE takes no topic another collection config uses), kept
`retentionDays`. TKE's components write with TKE's service role (TKE_QCSRole): no key and no grant of the stack's.
Facts and sources: catalog/logs/tencentcloud.yaml `kubernetes`; components/tencentcloud/logs.py builds it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ...catalog import monitoring as catalog_monitoring
from ...spec import ClusterSpec
from ..kubernetes import releases

API_VERSION = "cls.cloud.tencent.com/v1"
TOPIC_PREFIX = "tke-"
NAME_MAX = 63  # a LogConfig is a Kubernetes object: its metadata.name is a DNS subdomain label here (63)


def _data() -> dict[str, Any]:
    """catalog/logs/tencentcloud.yaml `kubernetes`."""
    kube: dict[str, Any] = catalog_monitoring.cloud_logs("tencentcloud")["kubernetes"]
    return kube


@dataclass(frozen=True)
class TkeLogConfig:
    """One LogConfig CRD and the topic it writes to."""

    name: str  # metadata.name and log_config_name, unique in the cluster
    topic: str  # the CLS topic's name in the cluster's logset
    input_detail: dict[str, Any]  # spec.inputDetail
    log_type: str

    def body(self, region: str, topic_id: str) -> str:
        """The LogConfig as the JSON kubernetes.LogConfig `log_config` takes, writing to `topic_id`."""
        spec = {
            "clsDetail": {"topicId": topic_id, "logType": self.log_type, "region": region},
            "inputDetail": self.input_detail,
        }
        doc = {"apiVersion": API_VERSION, "kind": "LogConfig", "metadata": {"name": self.name}, "spec": spec}
        return json.dumps(doc, sort_keys=True)


@dataclass(frozen=True)
class TkeLogs:
    log_agent: bool  # the cluster's log_agent.enabled
    cluster_type: str
    identity: str  # who writes: TKE's service role (no key, no grant of the stack's)
    configs: tuple[TkeLogConfig, ...]


def _name(spec: ClusterSpec, source: str) -> str:
    return f"{spec.name}-{source}"[:NAME_MAX].rstrip("-")


def gpu_namespaces(spec: ClusterSpec) -> tuple[str, ...]:
    """The namespaces the GPU software's releases run in, in release order, each once."""
    charts = set(_data()["stdoutCharts"])
    return tuple(dict.fromkeys(r.namespace for r in releases(spec) if r.chart in charts))


def plan(spec: ClusterSpec) -> TkeLogs:
    kube = _data()
    log_type = str(kube["logType"])
    host = [
        TkeLogConfig(
            name=_name(spec, str(h["name"])),
            topic=f"{TOPIC_PREFIX}{h['name']}",
            input_detail={"type": "host_file", "hostFile": {"logPath": h["logPath"], "filePattern": h["filePattern"]}},
            log_type=log_type,
        )
        for h in kube["host"]
    ]
    stdout = [
        TkeLogConfig(
            name=_name(spec, f"stdout-{namespace}"),
            topic=f"{TOPIC_PREFIX}stdout-{namespace}",
            input_detail={
                "type": "container_stdout",
                "containerStdout": {"namespace": namespace, "allContainers": True},
            },
            log_type=log_type,
        )
        for namespace in gpu_namespaces(spec)
    ]
    return TkeLogs(
        log_agent=bool(kube["logAgent"]["enabled"]),
        cluster_type=str(kube["clusterType"]),
        identity=str(kube["identity"]),
        configs=(*host, *stdout),
    )
