"""Alertmanager beside the login node's Prometheus (monitoring.notify): what Prometheus fires goes to people.

Private like Prometheus: it listens on 127.0.0.1 only and runs no gossip listener (`--cluster.listen-address=`, one
Alertmanager), so only the login node's Prometheus reaches it. The receiver is the cloud's (`Receiver`: on AWS an SNS
topic signed with the instance role's credentials, sigv4); the topic's identifier is known at deploy, so the cloud's
package fills it in the user data. Installed by alertmanager.sh (its own unit, after gpu-cluster-monitoring: a login
node without notify boots exactly as before) from the release pinned in monitoring.yaml, checked against its sha256,
and its configuration by `amtool check-config` before it starts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from ..datafile import load_yaml
from . import File, env_file, script

ALERTMANAGER_DIR = "/opt/alertmanager"
ALERTMANAGER_YML = "/etc/gpu-cluster/alertmanager/alertmanager.yml"
ALERTMANAGER_DATA = "/var/lib/gpu-cluster/alertmanager"
ENV_PATH = "/etc/gpu-cluster/alertmanager.env"
INSTALL = "gpu-cluster-alertmanager-install.service"
COMMANDS = (("systemctl", "enable", "--now", "--no-block", INSTALL),)
RECEIVER = "cluster-alerts"


@dataclass(frozen=True)
class Receiver:
    """Where the alerts go: `<kind>_configs` of Alertmanager's receiver (kind sns: topic_arn and sigv4; kind webhook:
    the url of a handler the cloud installs beside Alertmanager, its `files` and `commands`)."""

    kind: str
    config: Mapping[str, Any]
    label: str = ""  # how the login node's summary names it (default: the kind)
    files: tuple[File, ...] = ()
    commands: tuple[tuple[str, ...], ...] = ()

    @property
    def titled(self) -> bool:
        """Whether its configs take a `subject` (sns_configs does; webhook_configs has none: amtool refuses it)."""
        return self.kind != "webhook"


@cache
def pin() -> dict[str, Any]:
    """monitoring.yaml `alertmanager`."""
    data: dict[str, Any] = load_yaml(Path(__file__).parent / "monitoring.yaml")["alertmanager"]
    return data


def prometheus_alerting() -> dict[str, Any]:
    """prometheus.yml's `alerting`: the local Alertmanager."""
    return {"alertmanagers": [{"static_configs": [{"targets": [str(pin()["listen"])]}]}]}


def alertmanager_config(cluster: str, receiver: Receiver) -> str:
    """alertmanager.yml: every alert to the one receiver, grouped per alert and cluster, resolved ones too."""
    subject = f"[{{{{ .Status | toUpper }}}}] {{{{ .CommonLabels.alertname }}}} on {cluster}"
    body = {
        "route": {
            "receiver": RECEIVER,
            "group_by": ["alertname", "cluster"],
            # Alertmanager's documented defaults, written out so the file says when mail comes
            "group_wait": "30s",
            "group_interval": "5m",
            "repeat_interval": "4h",
        },
        "receivers": [
            {
                "name": RECEIVER,
                f"{receiver.kind}_configs": [
                    {**receiver.config, **({"subject": subject} if receiver.titled else {}), "send_resolved": True}
                ],
            }
        ],
    }
    return yaml.safe_dump(body, sort_keys=False, width=1000)


UNIT = """[Unit]
Description=Alertmanager (gpu-cluster: the login node's alerts to {receiver}, on {listen} only)
Wants=network-online.target
After=network-online.target

[Service]
User=prometheus
Group=prometheus
ExecStart={bin}/alertmanager --config.file={config} --storage.path={data} --web.listen-address={listen} \
--cluster.listen-address=
Restart=always
RestartSec=10

[Install]
WantedBy=multi-user.target
"""


INSTALL_UNIT = f"""[Unit]
Description=gpu-cluster: install the pinned Alertmanager, check its configuration, then start it
Wants=network-online.target gpu-cluster-monitoring.service
After=network-online.target gpu-cluster-monitoring.service

[Service]
Type=oneshot
RemainAfterExit=yes
EnvironmentFile={ENV_PATH}
ExecStart=/usr/local/sbin/gpu-cluster-alertmanager

[Install]
WantedBy=multi-user.target
"""


def files(cluster: str, receiver: Receiver) -> tuple[File, ...]:
    unit = UNIT.format(
        receiver=receiver.kind,
        listen=pin()["listen"],
        bin=ALERTMANAGER_DIR,
        config=ALERTMANAGER_YML,
        data=ALERTMANAGER_DATA,
    )
    return (
        File("/usr/local/sbin/gpu-cluster-alertmanager", script("alertmanager.sh"), "0755"),
        File(ENV_PATH, env_file(install_env())),
        File(f"/etc/systemd/system/{INSTALL}", INSTALL_UNIT),
        File(ALERTMANAGER_YML, alertmanager_config(cluster, receiver)),
        File("/etc/systemd/system/gpu-cluster-alertmanager.service", unit),
        *receiver.files,
    )


def install_env() -> dict[str, str]:
    """alertmanager.sh's settings (alertmanager.env)."""
    a = pin()
    return {
        "ALERTMANAGER_VERSION": str(a["version"]),
        "ALERTMANAGER_URL": str(a["url"]),
        "ALERTMANAGER_SHA256_AMD64": str(a["sha256"]["amd64"]),
        "ALERTMANAGER_SHA256_ARM64": str(a["sha256"]["arm64"]),
        "ALERTMANAGER_DIR": ALERTMANAGER_DIR,
        "ALERTMANAGER_CONFIG": ALERTMANAGER_YML,
        "ALERTMANAGER_DATA": ALERTMANAGER_DATA,
    }
