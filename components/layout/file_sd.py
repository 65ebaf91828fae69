"""The login node's target list where Prometheus has no discovery for the cloud (catalog/monitoring.yaml): a systemd
timer runs the cloud's listing script (bootstrap/<cloud>_prometheus_targets.sh: the cloud's API, signed with the
login node's own role) and the script writes a file_sd list that Prometheus watches."""

from __future__ import annotations

from collections.abc import Mapping

from .. import bootstrap
from ..bootstrap import File, Part, env_file
from ..bootstrap.monitoring import CONF_DIR

TARGETS_SCRIPT = "/usr/local/sbin/gpu-cluster-prometheus-targets"
TARGETS_ENV = "/etc/gpu-cluster/prometheus-targets.env"
TARGETS_UNIT = "gpu-cluster-prometheus-targets"
# the list is rewritten every minute: a node the cloud's group or the Slurm power program starts is scraped within
# about a minute (plus Prometheus' file watch), beside the 30 s scrape interval (chosen here)
REFRESH_SECONDS = 60


def targets_file(cloud: str) -> str:
    return f"{CONF_DIR}/{cloud}-targets.json"


def targets_part(cloud: str, api: str, env: Mapping[str, str]) -> Part:
    """The script for `cloud`, its settings and the timer; `api`: the call that lists the nodes, as the units and the
    boot summary name it."""
    listed = targets_file(cloud)
    service = f"""[Unit]
Description=gpu-cluster: this cluster's GPU nodes as Prometheus targets ({api} to {listed})
Wants=network-online.target
After=network-online.target

[Service]
Type=oneshot
EnvironmentFile={TARGETS_ENV}
ExecStart={TARGETS_SCRIPT}
"""
    timer = f"""[Unit]
Description=gpu-cluster: refresh this cluster's Prometheus targets every {REFRESH_SECONDS} s

[Timer]
OnBootSec=30
OnUnitActiveSec={REFRESH_SECONDS}
AccuracySec=5

[Install]
WantedBy=timers.target
"""
    return Part(
        "prometheus-targets",
        files=(
            File(TARGETS_SCRIPT, bootstrap.script(f"{cloud}_prometheus_targets.sh"), "0755"),
            File(TARGETS_ENV, env_file(env)),
            File(f"/etc/systemd/system/{TARGETS_UNIT}.service", service),
            File(f"/etc/systemd/system/{TARGETS_UNIT}.timer", timer),
        ),
        commands=(
            ("systemctl", "daemon-reload"),
            ("systemctl", "enable", "--now", "--no-block", f"{TARGETS_UNIT}.timer"),
        ),
        summary=f"lists this cluster's GPU nodes for Prometheus every {REFRESH_SECONDS} s ({api}, file_sd {listed}).",
    )
