"""Azure health self-removal: the Application Health extension on the scale set, automatic repairs, and the
endpoint part the extension probes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ... import bootstrap
from ...bootstrap import File, Part
from ...bootstrap.health import RESULT_PATH
from ...errors import CLUSTER_KEY, ConfigError
from ...spec import ClusterSpec
from .data import health_data
from .nodes import Group

# --- health self-removal: Application Health extension + automatic repairs ---------------------------

HEALTH_HTTP_SOCKET = """[Unit]
Description=gpu-cluster health endpoint for the Azure Application Health extension (127.0.0.1:{port})

[Socket]
ListenStream=127.0.0.1:{port}
Accept=yes

[Install]
WantedBy=sockets.target
"""

HEALTH_HTTP_SERVICE = """[Unit]
Description=gpu-cluster health endpoint: one probe answered from {result}

[Service]
ExecStart=/usr/local/sbin/gpu-cluster-health-http
Environment=HEALTH_RESULT={result}
StandardInput=socket
StandardOutput=socket
StandardError=journal
DynamicUser=yes
RuntimeMaxSec=15
"""


@dataclass(frozen=True)
class HealthExtension:
    """The Application Health extension on the scale set (catalog/capabilities/azure.yaml `health.extension`)."""

    name: str
    publisher: str
    type: str
    type_handler_version: str
    settings: Mapping[str, Any]  # protocol, port, requestPath, gracePeriod


@dataclass(frozen=True)
class AutomaticRepairs:
    """The scale set's automatic instance repairs (`health.action: replace`)."""

    grace_period: str
    repair_action: str


def health_endpoint_part(port: int) -> Part:
    return Part(
        "health-endpoint",
        files=(
            File("/usr/local/sbin/gpu-cluster-health-http", bootstrap.script("azure_health_http.sh"), "0755"),
            File("/etc/systemd/system/gpu-cluster-health-http.socket", HEALTH_HTTP_SOCKET.format(port=port)),
            File(
                "/etc/systemd/system/gpu-cluster-health-http@.service", HEALTH_HTTP_SERVICE.format(result=RESULT_PATH)
            ),
        ),
        commands=(
            ("systemctl", "daemon-reload"),
            ("systemctl", "enable", "--now", "gpu-cluster-health-http.socket"),
        ),
        summary=f"answers the Application Health extension on 127.0.0.1:{port} from {RESULT_PATH}.",
    )


def plan_health(spec: ClusterSpec, group: Group) -> tuple[HealthExtension | None, AutomaticRepairs | None]:
    """Scale sets: the extension whenever the health check runs (its state shows in the instance view), automatic
    repairs only with action replace. Single VMs: report only (no Azure service replaces a lone VM)."""
    action = spec.health_action
    if action is None:
        return None, None
    if group != "scale-set":
        if action == "replace":
            raise ConfigError(
                f"{CLUSTER_KEY}.health.action",
                "replace with nodeGroup: instances: on Azure only a scale set replaces an unhealthy VM (Application "
                "Health extension + automatic instance repairs); use action: report (the check logs and writes "
                f"{RESULT_PATH}) or nodeGroup: managed",
            )
        return None, None
    data = health_data()
    ext = data["extension"]
    settings = {
        "protocol": ext["protocol"],
        "port": int(ext["port"]),
        "requestPath": ext["requestPath"],
        "gracePeriod": int(ext["gracePeriod"]),
    }
    extension = HealthExtension(ext["name"], ext["publisher"], ext["type"], str(ext["typeHandlerVersion"]), settings)
    repairs = data["repairs"]
    automatic = (
        AutomaticRepairs(str(repairs["gracePeriod"]), str(repairs["repairAction"])) if action == "replace" else None
    )
    return extension, automatic


def endpoint_part(extension: HealthExtension | None) -> Part:
    """The part the extension probes; an empty part of the same name without the extension (cloud-init order)."""
    return health_endpoint_part(int(extension.settings["port"])) if extension is not None else Part("health-endpoint")
