"""MIG autohealing on GCP: the HTTP health check on the node's own health endpoint, and the part that serves it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ... import bootstrap
from ...bootstrap import File, Part
from ...bootstrap.health import RESULT_PATH
from ...spec import ClusterSpec

HEALTH_HTTP_SCRIPT = "/usr/local/sbin/gpu-cluster-health-http"
HEALTH_HTTP_UNIT = """[Unit]
Description=gpu-cluster health endpoint for the MIG's autohealing (:{port}{path})
Wants=network-online.target
After=network-online.target

[Service]
Restart=always
RestartSec=5
Environment=HEALTH_PORT={port} HEALTH_PATH={path} HEALTH_RESULT={result}
ExecStart={script}

[Install]
WantedBy=multi-user.target
"""


@dataclass(frozen=True)
class HealthProbe:
    """The MIG's autohealing: an HTTP health check on the node's own health endpoint (catalog rules `healthCheck`)."""

    port: int
    path: str
    check_interval_sec: int
    timeout_sec: int
    healthy_threshold: int
    unhealthy_threshold: int
    initial_delay_sec: int
    source_ranges: tuple[str, ...]  # Google's health-check probers, admitted to `port` only


def health_probe(spec: ClusterSpec, rules: Mapping[str, Any]) -> HealthProbe | None:
    """MIG autohealing on the node's health result: managed groups with health.action replace."""
    if spec.node_group != "managed" or spec.health_action != "replace":
        return None
    hc = rules["healthCheck"]
    return HealthProbe(
        port=int(hc["port"]),
        path=str(hc["path"]),
        check_interval_sec=int(hc["checkIntervalSec"]),
        timeout_sec=int(hc["timeoutSec"]),
        healthy_threshold=int(hc["healthyThreshold"]),
        unhealthy_threshold=int(hc["unhealthyThreshold"]),
        initial_delay_sec=int(hc["initialDelaySec"]),
        source_ranges=tuple(hc["sourceRanges"]),
    )


def health_http_part(probe: HealthProbe | None) -> Part:
    if probe is None:
        return Part("health-http")
    unit = HEALTH_HTTP_UNIT.format(port=probe.port, path=probe.path, result=RESULT_PATH, script=HEALTH_HTTP_SCRIPT)
    return Part(
        "health-http",
        files=(
            File(HEALTH_HTTP_SCRIPT, bootstrap.script("gcp_health_http.sh"), "0755"),
            File("/etc/systemd/system/gpu-cluster-health-http.service", unit),
        ),
        commands=(
            ("systemctl", "daemon-reload"),
            ("systemctl", "enable", "--now", "--no-block", "gpu-cluster-health-http.service"),
        ),
        summary=f"serves the health result on :{probe.port}{probe.path} for the MIG's autohealing.",
    )
