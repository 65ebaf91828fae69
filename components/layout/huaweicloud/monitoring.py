"""The self-hosted Prometheus and Grafana on Huawei Cloud (monitoring.prometheus: selfHosted), pure: on the login
node, finding the GPU nodes through a file_sd list the login node writes itself (catalog/monitoring.yaml
selfHosted.huaweicloud), as on Alibaba and Tencent.

Prometheus 2.53 has no Huawei Cloud discovery, so a systemd timer on the login node runs
bootstrap/huaweicloud_prometheus_targets.sh every minute: ECS ListServersDetails, SDK-HMAC-SHA256-signed with the
temporary credentials of the login node's agency from the metadata service, lists this cluster's running servers by
its tag and writes them, without the login node, as one target group per node. The login node carries the nodes'
agency (huaweicloud/access.py), and pulumi-huaweicloud grants an agency only system roles by name, so the agency gets
the role catalog/monitoring.yaml names (identity.py adds it); an existing agency is warned about instead.

The login node's security group already lets everything out (network.security_group's egress rule); the nodes' group
admits the exporters' ports from it.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...bootstrap import Part
from ...bootstrap.huaweicloud_smn import receiver
from ...bootstrap.metrics import endpoints
from ...bootstrap.monitoring import PASSWORD_FILE, Discovery, versions
from ...catalog import monitoring as catalog_monitoring
from ...spec import ClusterSpec
from .. import file_sd
from ..file_sd import targets_file
from ..monitoring import login_hosted, login_part
from . import alerts as alerts_layout
from .alerts import HuaweiAlerts

TARGETS_FILE = targets_file("huaweicloud")


@dataclass(frozen=True)
class HuaweiMonitoring:
    parts: tuple[Part, ...]  # the login node's user data: Prometheus and Grafana, then the list's timer
    roles: tuple[str, ...]  # what the agency needs for the list (catalog/monitoring.yaml grant)
    scrape_ports: tuple[tuple[str, int], ...]  # (exporter, port) the nodes' group admits from the login node's group
    grafana_port: int
    prometheus_listen: str
    password_file: str
    alerts: HuaweiAlerts | None = None  # monitoring.notify: the SMN topic, its emails, the agency's publish policy


def discovery() -> Discovery:
    """file_sd on the list the timer writes; its __meta_huaweicloud_* labels become what the other clouds'
    relabelling yields: node (the hostname), instance_id, instance_type (the flavor)."""
    relabel = (
        {"source_labels": ["__meta_huaweicloud_hostname"], "target_label": "node"},
        {"source_labels": ["__meta_huaweicloud_instance_id"], "target_label": "instance_id"},
        {"source_labels": ["__meta_huaweicloud_instance_type"], "target_label": "instance_type"},
    )
    return Discovery("file", {"files": [TARGETS_FILE]}, "__meta_huaweicloud_private_ip", relabel)


def targets_env(spec: ClusterSpec) -> dict[str, str]:
    """The target list script's settings: the region's ECS endpoint, the metadata service (catalog/monitoring.yaml
    selfHosted.huaweicloud), the cluster's tags, the login node's server name."""
    entry = catalog_monitoring.self_hosted("huaweicloud")
    assert entry is not None
    return {
        "ECS_ENDPOINT": str(entry["endpoint"]).format(region=spec.region),
        "METADATA_URL": str(entry["credentials"]),
        "CLUSTER": spec.name,
        "CLUSTER_TAG": "gpu-cluster:cluster",
        "STACK": spec.stack,
        "STACK_TAG": "gpu-cluster:stack",
        "SKIP_NAMES": f"{spec.name}-login",  # components/huaweicloud/access.py build_login name
        "TARGETS_FILE": TARGETS_FILE,
    }


def targets_part(spec: ClusterSpec) -> Part:
    return file_sd.targets_part("huaweicloud", "ECS ListServersDetails", targets_env(spec))


def plan(spec: ClusterSpec) -> HuaweiMonitoring | None:
    if not login_hosted(spec) or spec.login is None:
        return None
    grant = catalog_monitoring.self_hosted("huaweicloud")
    assert grant is not None  # the spec refuses selfHosted where catalog/monitoring.yaml does not build it
    alerts = alerts_layout.plan(spec)
    notify = receiver(alerts_layout.webhook(spec)) if alerts else None
    return HuaweiMonitoring(
        (login_part(spec, discovery(), notify), targets_part(spec)),
        tuple(grant["grant"]),
        # the jobs prometheus.yml has (bootstrap/monitoring.py: no DCGM job on other vendors' GPUs)
        tuple(
            (e.name, e.port) for e in endpoints() if e.name != "dcgm-exporter" or spec.instance.gpu_vendor == "nvidia"
        ),
        grafana_port=int(versions()["grafana"]["port"]),
        prometheus_listen=str(versions()["prometheus"]["listen"]),
        password_file=PASSWORD_FILE,
        alerts=alerts,
    )
