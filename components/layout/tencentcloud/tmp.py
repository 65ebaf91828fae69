"""monitoring.prometheus managed on Tencent Cloud, pure: TencentCloud Managed Service for Prometheus (TMP) in VM and
Slurm modes (catalog/monitoring.yaml managed.tencentcloud: why it is built this way, and its data).

Shaped as the other clouds' agent-mode route (bootstrap/monitoring.py login_part with a remote write): the login
node's Prometheus runs in agent mode and remote-writes to the TMP instance; Grafana stays on the login node with the
instance as its data source; TMP evaluates the alert rules (one monitor.TmpAlertRule per rule of
bootstrap/monitoring.py rule_list).

TMP takes remote write only with the instance's data-write token (basic auth: the account's APPID and the token),
and the provider does not output the token, so the login node reads it at boot with its CAM role
(bootstrap/tencentcloud_tmp_token.sh; the role may describe this instance only) before the agent and Grafana start:
their units require the token's. The APPID, the instance's addresses and id are known at deploy only: placeholders
the cloud package fills (user.get_info app_id; TmpInstance remote_write, api_root_path, id).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from ... import bootstrap
from ...bootstrap import File, Part
from ...bootstrap.monitoring import Discovery, RemoteWrite, Thresholds, rule_list
from ...catalog import monitoring as catalog_monitoring
from ...spec import ClusterSpec
from ..monitoring import login_part
from .logs import data as logs_data
from .slurm import TCCLI_LOCK

# known at deploy: the cloud package puts the provider's outputs in their place
APPID_PLACEHOLDER = "@@GPU_CLUSTER_TMP_APPID@@"
REMOTE_WRITE_PLACEHOLDER = "@@GPU_CLUSTER_TMP_REMOTE_WRITE@@"
QUERY_PLACEHOLDER = "@@GPU_CLUSTER_TMP_API_ROOT@@"
INSTANCE_PLACEHOLDER = "@@GPU_CLUSTER_TMP_INSTANCE@@"

TOKEN_FILE = "/etc/gpu-cluster/tmp-token"  # the remote write's password_file: the agent's group may read it
GRAFANA_ENV = "/etc/gpu-cluster/tmp-token.grafana"  # Grafana's EnvironmentFile: root only, read by systemd
TOKEN_ENV = "/etc/gpu-cluster/tmp-token.env"
TOKEN_SCRIPT = "/usr/local/sbin/gpu-cluster-tmp-token"
TOKEN_UNIT = "gpu-cluster-tmp-token.service"
# the units that read the token wait for it (and start it: it is enabled by nothing else)
READERS = ("gpu-cluster-prometheus.service", "grafana-server.service")


@dataclass(frozen=True)
class TmpRule:
    """One alert rule as monitor.TmpAlertRule takes it (bootstrap/monitoring.py rule_list, field by field)."""

    rule_name: str  # the cluster's name first: one account's rules say whose they are
    expr: str
    duration: str  # rule_list's `for`, "<minutes>m"
    labels: tuple[tuple[str, str], ...]
    annotations: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class TencentTmp:
    """The TMP instance, its rules, the login node's parts and the role's grant on the instance."""

    instance_name: str
    data_retention_time: int  # days: the smallest TMP takes at or above monitoring.retentionDays
    rules: tuple[TmpRule, ...]
    parts: tuple[Part, ...]  # the token's part first, then Prometheus (agent) and Grafana, then the targets' timer
    policy_name: str
    token_action: str
    token_resource: str  # with {region}, {account}, {instance} for the cloud package
    service: str

    def policy_document(self, resource: str) -> str:
        """The login node's grant: describe this instance only (`resource`: token_resource filled at deploy), in the
        role document's syntax (identity.allow_document)."""
        statement = {"action": [self.token_action], "effect": "allow", "resource": [resource]}
        return json.dumps({"statement": [statement], "version": "2.0"}, sort_keys=True)


def entry() -> dict[str, Any]:
    built = catalog_monitoring.managed("tencentcloud")
    assert built is not None  # catalog/monitoring.yaml managed.tencentcloud
    return built


def retention_days(days: int) -> int | None:
    """The smallest data_retention_time TMP takes at or above `days`; None past the longest (730)."""
    return next((d for d in sorted(entry()["retentionDays"]) if d >= days), None)


def tmp_rules(spec: ClusterSpec) -> tuple[TmpRule, ...]:
    return tuple(
        TmpRule(
            rule_name=f"{spec.name}-{r['alert']}",
            expr=str(r["expr"]),
            duration=str(r["for"]),
            labels=tuple(sorted((str(k), str(v)) for k, v in {**r["labels"], "cluster": spec.name}.items())),
            annotations=tuple(sorted((str(k), str(v)) for k, v in r["annotations"].items())),
        )
        for r in rule_list(Thresholds(**spec.monitoring.alerts.model_dump()))
    )


def remote_write() -> RemoteWrite:
    """The agent's remote write and Grafana's data source: basic auth, the APPID and the token read at boot."""
    return RemoteWrite(
        url=REMOTE_WRITE_PLACEHOLDER,
        auth={"basic_auth": {"username": APPID_PLACEHOLDER, "password_file": TOKEN_FILE}},
        query_url=QUERY_PLACEHOLDER,
        datasource_auth={},
        grafana_env={},
        # Grafana expands $VAR in provisioning files from its environment (GRAFANA_ENV, through the drop-in)
        datasource_fields={
            "basicAuth": True,
            "basicAuthUser": APPID_PLACEHOLDER,
            "secureJsonData": {"basicAuthPassword": "$GF_TMP_TOKEN"},
        },
    )


def token_part(spec: ClusterSpec) -> Part:
    """The token's script, settings and unit, and the readers' drop-ins requiring it; tested on stubs."""
    tccli = logs_data()["credentials"]["tccli"]
    env = {
        "REGION": spec.region,
        "TMP_INSTANCE": INSTANCE_PLACEHOLDER,
        "MONITOR_ENDPOINT": str(entry()["monitorEndpoint"]),
        "TOKEN_FILE": TOKEN_FILE,
        "TOKEN_GROUP": "prometheus",  # the agent's (bootstrap/monitoring.py PROMETHEUS_UNIT Group)
        "GRAFANA_ENV": GRAFANA_ENV,
        "TCCLI_INDEX": str(tccli["index"]),
        "TCCLI_HOST": str(urlsplit(str(tccli["index"])).hostname),
        "TCCLI_VENV": str(tccli["venv"]),
        "TCCLI_LOCK": TCCLI_LOCK,
    }
    unit = f"""[Unit]
Description=gpu-cluster: this cluster's TMP instance's write token (DescribePrometheusInstances, the CVM role)
Wants=network-online.target
After=network-online.target

[Service]
Type=oneshot
RemainAfterExit=yes
EnvironmentFile={TOKEN_ENV}
ExecStart={TOKEN_SCRIPT}
"""
    requires = f"[Unit]\nRequires={TOKEN_UNIT}\nAfter={TOKEN_UNIT}\n"
    dropins = tuple(
        File(
            f"/etc/systemd/system/{reader}.d/gpu-cluster-tmp.conf",
            requires + (f"\n[Service]\nEnvironmentFile={GRAFANA_ENV}\n" if reader.startswith("grafana") else ""),
        )
        for reader in READERS
    )
    return Part(
        "tmp-token",
        files=(
            File(TOKEN_SCRIPT, bootstrap.script("tencentcloud_tmp_token.sh"), "0755"),
            File(TOKEN_ENV, bootstrap.env_file(env), "0600"),
            File(f"/etc/systemd/system/{TOKEN_UNIT}", unit),
            *dropins,
        ),
        summary="reads the TMP instance's write token with the CVM role before Prometheus and Grafana start.",
    )


def plan(spec: ClusterSpec, discovery: Discovery, targets: Part, policy_name: str) -> TencentTmp | None:
    """TMP for a login node's managed Prometheus (None otherwise); `discovery` and `targets`: the self-hosted
    Prometheus's (layout/tencentcloud/monitoring.py), which the agent keeps."""
    if spec.login is None or spec.prometheus != "managed" or spec.kubernetes is not None:
        return None
    data = entry()
    retention = retention_days(spec.monitoring.retention_days)
    assert retention is not None  # the spec refuses a retention TMP does not take
    return TencentTmp(
        instance_name=f"{spec.name}-{spec.stack}"[:60],
        data_retention_time=retention,
        rules=tmp_rules(spec),
        parts=(token_part(spec), login_part(spec, discovery, remote=remote_write()), targets),
        policy_name=policy_name,
        token_action=str(data["tokenAction"]),
        token_resource=str(data["tokenResource"]),
        service=str(data["service"]),
    )
