"""The self-hosted Prometheus and Grafana part of the login node, the same on every cloud but for how Prometheus
finds the GPU nodes (each cloud's `discovery`: components/layout/<cloud>/monitoring.py)."""

from __future__ import annotations

from typing import Any

from ..bootstrap import Part
from ..bootstrap.alertmanager import Receiver
from ..bootstrap.monitoring import Discovery, Monitoring, RemoteWrite, Thresholds, monitoring_part
from ..spec import ClusterSpec


def login_hosted(spec: ClusterSpec) -> bool:
    """monitoring.prometheus selfHosted on the login node: with scheduler kubernetes it is the in-cluster release
    (layout.kubernetes_monitoring), and the login node's part, discovery and grants are not built."""
    return spec.prometheus == "selfHosted" and spec.kubernetes is None


def login_part(
    spec: ClusterSpec,
    discovery: Discovery,
    notify: Receiver | None = None,
    remote: RemoteWrite | None = None,
    listen: str | None = None,
) -> Part:
    """The login node's monitoring part: the spec's retention and alert thresholds, the Slurm partition to label by,
    the DCGM metrics only on NVIDIA GPUs; `notify`: an Alertmanager sending the alerts to the cloud's receiver;
    `remote`: managed, Prometheus in agent mode writing to the cloud's workspace, Grafana reading it; `listen`:
    managed by federation, where Prometheus listens for the cloud's collector (and no local rules: the cloud
    evaluates them)."""
    return monitoring_part(
        Monitoring(
            cluster=spec.name,
            discovery=discovery,
            retention_days=spec.monitoring.retention_days,
            alerts=Thresholds(**spec.monitoring.alerts.model_dump()),
            partition=spec.slurm.partition if spec.slurm is not None else None,
            gpu_metrics=spec.instance.gpu_vendor == "nvidia",
            notify=notify,
            remote=remote,
            listen=listen,
            local_rules=listen is None,  # federated by the cloud's managed Prometheus: it evaluates the rules
        )
    )


NO_PATH = "none: access is none, no path to the login node is built"  # the Grafana row when nothing reaches it


def ssh_forward(port: int, user: str) -> str:
    """The SSH command forwarding Grafana's port, up to the login node's address (the cloud package appends it)."""
    return f"ssh -N -L {port}:127.0.0.1:{port} {user}@"


def login_summary(forward: Any, port: int, password_file: str, prometheus_listen: str) -> dict[str, Any]:
    """The plan's `monitoring` summary of the login node's Prometheus and Grafana; `forward`: the cloud's command
    (text, or a Pulumi output the cloud package builds) that forwards Grafana's port to the user's machine."""
    return {
        "prometheus": "selfHosted",
        "host": "login node",
        "grafana": {
            "forward": forward,
            "url": f"http://localhost:{port}",
            "user": "admin",
            "password": f"on the login node: sudo cat {password_file}",
        },
        "prometheusListen": prometheus_listen,
    }


def point_at(node: Any, uid: str) -> Any:
    """The dashboard model with every Prometheus datasource reference naming `uid` (panels, targets, variables)."""
    if isinstance(node, dict):
        out = {k: point_at(v, uid) for k, v in node.items()}
        ref = out.get("datasource")
        if isinstance(ref, dict) and ref.get("type") == "prometheus":
            out["datasource"] = {**ref, "uid": uid}
        return out
    if isinstance(node, list):
        return [point_at(v, uid) for v in node]
    return node
