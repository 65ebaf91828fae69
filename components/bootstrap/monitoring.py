"""The self-hosted monitoring part (monitoring.prometheus: selfHosted): Prometheus and Grafana on the login node.

Private: both listen on 127.0.0.1 only (Prometheus :9090, Grafana :3000), so nothing but the login node itself
reaches them (Alibaba's managed route excepted: there Prometheus listens on the VPC for ARMS' collector, which only
the collector's security group may reach); people reach Grafana through the cloud's access path with port
forwarding (docs/monitoring.md).
Installed at every boot, idempotently, from pinned upstream releases (monitoring.yaml): the Prometheus tarball
checked against its sha256, Grafana from its apt repository at one version, held.

Prometheus finds the GPU nodes through the cloud's service discovery (`Discovery`, chosen by the cloud's layout:
filtered to this cluster's GPU nodes by tag) and scrapes their DCGM and node exporters (bootstrap/metrics.py);
the alert rules take their thresholds from `monitoring.alerts`. Grafana is provisioned with the Prometheus data
source and the dashboards of bootstrap/monitoring/ (every query names only metrics the pinned exporters emit:
tests/test_monitoring.py). Its admin password is generated on the node at first boot (openssl rand) into a file only
root and grafana read, handed to Grafana by GF_SECURITY_ADMIN_PASSWORD__FILE: it is never in user data, an input,
an output or the state, and needs no secret store nor grant; anonymous access stays off.

monitoring.prometheus managed (`RemoteWrite`): the same Prometheus runs in agent mode (--enable-feature=agent: it
scrapes and writes every sample to the cloud's workspace, keeps only its write-ahead log, and evaluates no rules:
the workspace's rule service does, from the same `rule_list`); Grafana reads the workspace instead, signing as the
cloud tells it (AWS: sigv4 with the instance role), with the same dashboards.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from ..datafile import load_yaml
from . import File, Part, env_file, script
from . import alertmanager as am
from .metrics import endpoints

_DATA = Path(__file__).resolve().parent / "monitoring"
CONF_DIR = "/etc/gpu-cluster/prometheus"
PROMETHEUS_YML = f"{CONF_DIR}/prometheus.yml"
RULES_YML = f"{CONF_DIR}/rules.yml"
PASSWORD_FILE = "/etc/gpu-cluster/grafana-admin-password"
DASHBOARD_DIR = "/var/lib/gpu-cluster/dashboards"
PROMETHEUS_DIR = "/opt/prometheus"
TSDB_DIR = "/var/lib/gpu-cluster/prometheus"
# managed: the agent's write-ahead log, apart from a server's TSDB (a login node switched from selfHosted keeps that)
AGENT_DIR = "/var/lib/gpu-cluster/prometheus-agent"
# the filesystems the disk rule and panel leave out: in memory or read-only images, never "full" in a way to act on
_FS_SELECTOR = 'fstype!~"tmpfs|overlay|squashfs|ramfs",mountpoint!=""'


@cache
def versions() -> dict[str, Any]:
    data: dict[str, Any] = load_yaml(Path(__file__).parent / "monitoring.yaml")
    return data


@cache
def exporter_metrics() -> frozenset[str]:
    """Every metric name the pinned exporters emit (monitoring/exporter_metrics.yaml, with sources)."""
    data: dict[str, Any] = load_yaml(_DATA / "exporter_metrics.yaml")
    return frozenset(name for block in data.values() for name in block["metrics"])


@cache
def dashboards() -> dict[str, dict[str, Any]]:
    """The provisioned dashboards by file name (monitoring/dashboard-*.json)."""
    return {p.name: json.loads(p.read_text()) for p in sorted(_DATA.glob("dashboard-*.json"))}


@dataclass(frozen=True)
class Discovery:
    """How Prometheus finds this cluster's GPU nodes on one cloud: `<kind>_sd_configs` with `config` (the port
    added per exporter), then `relabel` (after the address): `node`, `instance_id` and `pool` labels from the
    cloud's metadata."""

    kind: str  # ec2 | gce | azure | file (Prometheus' <kind>_sd_configs; file: a list the node writes)
    config: Mapping[str, Any]
    address_label: str  # the meta label holding the node's private IP
    relabel: tuple[Mapping[str, Any], ...]


@dataclass(frozen=True)
class RemoteWrite:
    """monitoring.prometheus managed: where the agent writes and how Grafana reads the cloud's workspace."""

    url: str  # the remote_write URL (the cloud package may fill a placeholder at deploy)
    auth: Mapping[str, Any]  # <remote_write>'s authentication block, e.g. {"sigv4": {"region": ...}}
    query_url: str  # Grafana's data source URL (the workspace's Prometheus-compatible query endpoint)
    datasource_auth: Mapping[str, Any]  # the data source's jsonData authentication settings
    grafana_env: Mapping[str, str]  # GF_* settings the data source's authentication needs
    # the data source's top-level settings beside jsonData (basicAuth, basicAuthUser, secureJsonData: Tencent's TMP)
    datasource_fields: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Thresholds:
    """monitoring.alerts as the rules take them (the spec's AlertsConfig, field by field)."""

    gpu_idle_percent: float
    gpu_idle_minutes: int
    gpu_memory_percent: float
    gpu_temperature_celsius: int | None
    disk_full_percent: float
    node_missing_minutes: int


@dataclass(frozen=True)
class Monitoring:
    """What the part renders: the discovery, the cluster's static labels, retention and thresholds."""

    cluster: str
    discovery: Discovery
    retention_days: int
    alerts: Thresholds
    partition: str | None = None  # scheduler slurm: the GPU partition, a label on every series
    gpu_metrics: bool = True  # NVIDIA GPUs: the DCGM exporter runs (other vendors' nodes run the node exporter only)
    notify: am.Receiver | None = None  # monitoring.notify: an Alertmanager beside Prometheus sends to this receiver
    remote: RemoteWrite | None = None  # managed: agent mode, writing to the cloud's workspace (no rules, no notify)
    # managed by federation (Alibaba): the address Prometheus listens on so the cloud's collector can federate it
    # (None: the pinned private listen address, 127.0.0.1)
    listen: str | None = None
    # False: the cloud's managed Prometheus evaluates the rules (Alibaba's federated route), so none here and the
    # thresholds stay out of the login node's boot data
    local_rules: bool = True


def prometheus_config(m: Monitoring) -> str:
    """prometheus.yml: one job per exporter (bootstrap/metrics.py), discovered and relabelled."""
    interval = f"{int(versions()['scrapeIntervalSeconds'])}s"
    static = {"cluster": m.cluster, **({"partition": m.partition} if m.partition else {})}
    jobs = []
    for e in endpoints():
        if e.name == "dcgm-exporter" and not m.gpu_metrics:
            continue  # not running on these nodes (bootstrap/metrics.py): every target would be "missing"
        relabel: list[dict[str, Any]] = [
            {
                "source_labels": [m.discovery.address_label],
                "regex": "(.+)",
                "target_label": "__address__",
                "replacement": f"${{1}}:{e.port}",
            },
            *(dict(r) for r in m.discovery.relabel),
            *({"target_label": k, "replacement": v} for k, v in static.items()),
        ]
        jobs.append(
            {
                "job_name": e.name,
                "metrics_path": e.path,
                # file_sd_config takes no port: its targets are bare addresses, the relabelling above adds it
                f"{m.discovery.kind}_sd_configs": [
                    {**m.discovery.config, **({"port": e.port} if m.discovery.kind != "file" else {})}
                ],
                "relabel_configs": relabel,
            }
        )
    if m.remote is not None:  # agent mode: no rule_files, alerting nor evaluation (promtool check config --agent)
        body: dict[str, Any] = {
            "global": {"scrape_interval": interval},
            "scrape_configs": jobs,
            "remote_write": [{"url": m.remote.url, **m.remote.auth}],
        }
    else:
        body = {
            "global": {"scrape_interval": interval, "evaluation_interval": interval},
            **({"alerting": am.prometheus_alerting()} if m.notify else {}),
            **({"rule_files": [RULES_YML]} if m.local_rules else {}),
            "scrape_configs": jobs,
        }
    # a copy without shared objects: the YAML stays plain (no &anchors for the jobs' common filters)
    return yaml.safe_dump(json.loads(json.dumps(body)), sort_keys=False, width=1000)


def _rule(name: str, expr: str, minutes: int, severity: str, summary: str) -> dict[str, Any]:
    return {
        "alert": name,
        "expr": expr,
        "for": f"{minutes}m",
        "labels": {"severity": severity},
        "annotations": {"summary": summary},
    }


def alert_rules(m: Monitoring) -> str:
    """rules.yml: the alerts of docs/monitoring.md, thresholds from monitoring.alerts."""
    return alert_rules_text(m.alerts)


def alert_rules_text(a: Thresholds) -> str:
    """The rule file (Prometheus' format: what `promtool check rules` and AMP's rule groups namespaces take)."""
    return yaml.safe_dump({"groups": [{"name": "gpu-cluster", "rules": rule_list(a)}]}, sort_keys=False, width=1000)


def rule_list(a: Thresholds) -> list[dict[str, Any]]:
    """The alert rules as Prometheus writes them (alert, expr, for, labels, annotations): the one list every
    evaluator takes, the login node's Prometheus and the clouds' managed rule services alike."""
    fb_total = "(DCGM_FI_DEV_FB_USED + DCGM_FI_DEV_FB_FREE + DCGM_FI_DEV_FB_RESERVED)"
    rules = [
        _rule(
            "GpuIdle",
            f"avg_over_time(DCGM_FI_DEV_GPU_UTIL[5m]) < {a.gpu_idle_percent:g}",
            a.gpu_idle_minutes,
            "warning",
            f"GPU {{{{ $labels.gpu }}}} of {{{{ $labels.node }}}} below {a.gpu_idle_percent:g}% for "
            f"{a.gpu_idle_minutes} minutes while its node runs (and bills)",
        ),
        _rule(
            "GpuMemoryHigh",
            f"100 * DCGM_FI_DEV_FB_USED / {fb_total} > {a.gpu_memory_percent:g}",
            5,
            "warning",
            f"GPU {{{{ $labels.gpu }}}} of {{{{ $labels.node }}}} uses over {a.gpu_memory_percent:g}% of its memory",
        ),
        _rule(
            "GpuXidError",
            "DCGM_FI_DEV_XID_ERRORS > 0",
            0,
            "critical",
            "GPU {{ $labels.gpu }} of {{ $labels.node }} reported XID {{ $value }} (NVIDIA's XID catalog: what to do)",
        ),
        # The default counters export no ECC double-bit counter (DCGM_FI_DEV_ECC_DBE_* are commented out); an
        # uncorrectable error remaps a row (A100, H100 and later), which they do export.
        _rule(
            "GpuUncorrectableMemoryError",
            "increase(DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS[1h]) > 0 or DCGM_FI_DEV_ROW_REMAP_FAILURE > 0",
            0,
            "critical",
            "GPU {{ $labels.gpu }} of {{ $labels.node }}: an uncorrectable (double-bit) memory error remapped a row, "
            "or remapping failed: drain the node and reset or replace the GPU",
        ),
        _rule(
            "NodeMissing",
            "up == 0",
            a.node_missing_minutes,
            "critical",
            f"{{{{ $labels.job }}}} of {{{{ $labels.node }}}} unreachable for {a.node_missing_minutes} minutes while "
            "the instance runs",
        ),
        _rule(
            "FabricLinkDown",
            "node_infiniband_state_id != 4 or increase(node_infiniband_link_downed_total[10m]) > 0",
            5,
            "critical",
            "fabric port {{ $labels.device }}/{{ $labels.port }} of {{ $labels.node }} is not active or went down",
        ),
        _rule(
            "DiskNearlyFull",
            f"100 * (1 - node_filesystem_avail_bytes{{{_FS_SELECTOR}}} / node_filesystem_size_bytes{{{_FS_SELECTOR}}})"
            f" > {a.disk_full_percent:g} and node_filesystem_readonly{{{_FS_SELECTOR}}} == 0",
            30,
            "warning",
            f"{{{{ $labels.mountpoint }}}} of {{{{ $labels.node }}}} is over {a.disk_full_percent:g}% full",
        ),
    ]
    if a.gpu_temperature_celsius is not None:
        rules.append(
            _rule(
                "GpuTemperatureHigh",
                f"DCGM_FI_DEV_GPU_TEMP > {a.gpu_temperature_celsius}",
                5,
                "warning",
                f"GPU {{{{ $labels.gpu }}}} of {{{{ $labels.node }}}} above {a.gpu_temperature_celsius} C",
            )
        )
    return rules


PROMETHEUS_UNIT = """[Unit]
Description=Prometheus (gpu-cluster: the GPU nodes' exporters, on {listen} only)
Wants=network-online.target
After=network-online.target

[Service]
User=prometheus
Group=prometheus
ExecStart={bin}/prometheus --config.file={config} {storage} --web.listen-address={listen}
Restart=always
RestartSec=10

[Install]
WantedBy=multi-user.target
"""

INSTALL_UNIT = """[Unit]
Description=gpu-cluster: install the pinned Prometheus and Grafana, then start them
Wants=network-online.target
After=network-online.target

[Service]
Type=oneshot
RemainAfterExit=yes
EnvironmentFile=/etc/gpu-cluster/monitoring.env
ExecStart=/usr/local/sbin/gpu-cluster-monitoring

[Install]
WantedBy=multi-user.target
"""


def _storage_flags(m: Monitoring) -> str:
    """Where Prometheus keeps samples: its TSDB for `retention_days`, or (agent mode) only its write-ahead log until
    the remote end has them (the server's --storage.tsdb.* flags are refused in agent mode)."""
    if m.remote is not None:
        return f"--enable-feature=agent --storage.agent.path={AGENT_DIR}"
    return f"--storage.tsdb.path={TSDB_DIR} --storage.tsdb.retention.time={m.retention_days}d"


def _grafana_files(remote: RemoteWrite | None) -> tuple[File, ...]:
    g = versions()["grafana"]
    source: dict[str, Any] = {
        "name": "Prometheus",
        "type": "prometheus",
        "uid": "prometheus",  # the dashboards' datasource uid
        "access": "proxy",
        "url": f"http://{versions()['prometheus']['listen']}" if remote is None else remote.query_url,
        "isDefault": True,
        "editable": False,
    }
    if remote is not None:
        source["jsonData"] = dict(remote.datasource_auth)
        source.update(remote.datasource_fields)
    datasource = {"apiVersion": 1, "datasources": [source]}
    provider = {
        "apiVersion": 1,
        "providers": [
            {
                "name": "gpu-cluster",
                "type": "file",
                "disableDeletion": True,
                "allowUiUpdates": False,
                "options": {"path": DASHBOARD_DIR},
            }
        ],
    }
    # Grafana reads GF_<SECTION>_<KEY> over grafana.ini, and a __FILE suffix reads the value from that file
    dropin = (
        "[Service]\n"
        f"Environment=GF_SERVER_HTTP_ADDR={g['listen']}\n"
        f"Environment=GF_SERVER_HTTP_PORT={g['port']}\n"
        "Environment=GF_AUTH_ANONYMOUS_ENABLED=false\n"
        "Environment=GF_USERS_ALLOW_SIGN_UP=false\n"
        "Environment=GF_ANALYTICS_REPORTING_ENABLED=false\n"
        f"Environment=GF_SECURITY_ADMIN_PASSWORD__FILE={PASSWORD_FILE}\n"
        + "".join(f"Environment={k}={v}\n" for k, v in (remote.grafana_env if remote else {}).items())
    )
    return (
        File("/etc/grafana/provisioning/datasources/gpu-cluster.yaml", yaml.safe_dump(datasource, sort_keys=False)),
        File("/etc/grafana/provisioning/dashboards/gpu-cluster.yaml", yaml.safe_dump(provider, sort_keys=False)),
        File("/etc/systemd/system/grafana-server.service.d/gpu-cluster.conf", dropin),
        *(
            File(f"{DASHBOARD_DIR}/{name}", json.dumps(body, separators=(",", ":")))
            for name, body in dashboards().items()
        ),
    )


def install_env(agent: bool = False) -> dict[str, str]:
    """The install script's settings (monitoring.env); `agent`: the agent's write-ahead log directory. (The script's
    `promtool check config` needs no --agent: the agent's configuration has no rule_files or alerting, so it is a
    valid server configuration too, and monitoring.sh stays byte-identical for every self-hosted login node.)"""
    p, g = versions()["prometheus"], versions()["grafana"]
    return {
        "PROMETHEUS_VERSION": str(p["version"]),
        "PROMETHEUS_URL": str(p["url"]),
        "PROMETHEUS_SHA256_AMD64": str(p["sha256"]["amd64"]),
        "PROMETHEUS_SHA256_ARM64": str(p["sha256"]["arm64"]),
        "PROMETHEUS_DIR": PROMETHEUS_DIR,
        "PROMETHEUS_CONFIG": PROMETHEUS_YML,
        "TSDB_DIR": AGENT_DIR if agent else TSDB_DIR,
        "GRAFANA_VERSION": str(g["version"]),
        "GRAFANA_REPOSITORY": f"{g['repository']} {g['suite']} {g['component']}",
        "GRAFANA_KEY_URL": str(g["key"]),
        "PASSWORD_FILE": PASSWORD_FILE,
    }


def monitoring_part(m: Monitoring | None) -> Part:
    """The login node's part: the files, and the install unit started without blocking the boot."""
    if m is None:
        return Part("monitoring")
    p, grafana = versions()["prometheus"], versions()["grafana"]
    listen = m.listen or str(p["listen"])
    unit = PROMETHEUS_UNIT.format(listen=listen, bin=PROMETHEUS_DIR, config=PROMETHEUS_YML, storage=_storage_flags(m))
    agent = m.remote is not None
    # managed: the workspace evaluates the rules and sends the alerts, so neither rules.yml nor Alertmanager is here
    local_alerts = m.notify if not agent else None
    files = (
        File("/usr/local/sbin/gpu-cluster-monitoring", script("monitoring.sh"), "0755"),
        File("/etc/gpu-cluster/monitoring.env", env_file(install_env(agent))),
        File("/etc/systemd/system/gpu-cluster-monitoring.service", INSTALL_UNIT),
        File("/etc/systemd/system/gpu-cluster-prometheus.service", unit),
        File(PROMETHEUS_YML, prometheus_config(m)),
        *(() if agent or not m.local_rules else (File(RULES_YML, alert_rules(m)),)),
        *_grafana_files(m.remote),
        *(am.files(m.cluster, local_alerts) if local_alerts else ()),
    )
    commands = (
        ("systemctl", "daemon-reload"),
        ("systemctl", "enable", "--now", "--no-block", "gpu-cluster-monitoring.service"),
        *((*local_alerts.commands, *am.COMMANDS) if local_alerts else ()),
    )
    grafana_at = f"Grafana {grafana['version']} ({grafana['listen']}:{grafana['port']})"
    if agent:
        summary = (
            f"runs a Prometheus {p['version']} agent ({p['listen']}) scraping the GPU nodes' exporters and writing "
            f"every sample to the managed workspace, and {grafana_at} reading it, private."
        )
    else:
        summary = f"runs Prometheus {p['version']} ({listen}) and {grafana_at}, private, scraping the GPU nodes' " + (
            f"exporters; Alertmanager {am.pin()['version']} ({am.pin()['listen']}) sends the alerts to "
            f"{local_alerts.label or local_alerts.kind}."
            if local_alerts
            else "exporters."
        )
    return Part("monitoring", files=files, commands=commands, summary=summary)
