"""The self-hosted Prometheus and Grafana on Tencent Cloud (monitoring.prometheus: selfHosted), pure: on the login node,
finding the GPU nodes through a file_sd list the login node writes itself (catalog/monitoring.yaml
selfHosted.tencentcloud), as on Alibaba (layout/alicloud/monitoring.py).

Prometheus 2.53 has no Tencent Cloud discovery, so a systemd timer on the login node runs
bootstrap/tencentcloud_prometheus_targets.sh every minute: CVM DescribeInstances on the VPC's internal endpoint,
TC3-signed with the login node's CAM role credentials from the metadata service, lists this cluster's running
instances by its tag and writes them, without the login node, as one target group per node. The role needs
cvm:DescribeInstances on "*": a custom policy with that one action (the preset read-only policies allow every
Describe*). The login node carries the nodes' role (tencentcloud/access.py), so the policy is attached to it.

The login node's security group has no egress rule without this (a Tencent group without rules rejects all traffic):
with Prometheus it gets the nodes' egress (all, to anywhere: the install from github.com and apt.grafana.com through
the NAT, the CVM API, the scrapes), and the nodes' group admits the exporters' ports from it.

No `pool` label: Tencent's nodes here are instances, in no node group.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ...bootstrap import Part
from ...bootstrap.metrics import endpoints
from ...bootstrap.monitoring import PASSWORD_FILE, Discovery, versions
from ...catalog import monitoring as catalog_monitoring
from ...spec import ClusterSpec
from .. import file_sd
from ..file_sd import targets_file
from ..monitoring import login_part
from .identity import allow_document
from .tmp import TencentTmp
from .tmp import plan as tmp_plan

TARGETS_FILE = targets_file("tencentcloud")
POLICY_NAME = re.compile(r"[^A-Za-z0-9+=,.@_-]")  # cam CreatePolicy PolicyName: letters, digits and +=,.@-_


@dataclass(frozen=True)
class TencentMonitoring:
    # the login node's parts (TencentLayout.login_user_data_b64): Prometheus and Grafana, then the list's timer
    parts: tuple[Part, ...]
    actions: tuple[str, ...]  # what the login node's role needs for the list (catalog/monitoring.yaml)
    policy_name: str
    scrape_ports: tuple[tuple[str, int], ...]  # (exporter, port) the nodes' group admits from the login node's group
    grafana_port: int
    prometheus_listen: str
    password_file: str
    tmp: TencentTmp | None = None  # monitoring.prometheus managed: TMP, its rules and the token's part (tmp.py)

    @property
    def policy_document(self) -> str:
        return allow_document(self.actions)


def discovery() -> Discovery:
    """file_sd on the list the timer writes; its __meta_tencentcloud_* labels become what the other clouds'
    relabelling yields: node (the hostname), instance_id, instance_type."""
    relabel = (
        {"source_labels": ["__meta_tencentcloud_hostname"], "target_label": "node"},
        {"source_labels": ["__meta_tencentcloud_instance_id"], "target_label": "instance_id"},
        {"source_labels": ["__meta_tencentcloud_instance_type"], "target_label": "instance_type"},
    )
    return Discovery("file", {"files": [TARGETS_FILE]}, "__meta_tencentcloud_private_ip", relabel)


def targets_env(spec: ClusterSpec) -> dict[str, str]:
    """The target list script's settings: CVM's internal endpoint and API version, where the role credentials are
    (catalog/monitoring.yaml selfHosted.tencentcloud), the cluster's tags, the login node's instance name."""
    entry = catalog_monitoring.self_hosted("tencentcloud")
    assert entry is not None
    return {
        "CVM_ENDPOINT": str(entry["endpoint"]),
        "CVM_API_VERSION": str(entry["apiVersion"]),
        "CREDENTIALS_URL": str(entry["credentials"]),
        "REGION": spec.region,
        "CLUSTER": spec.name,
        "CLUSTER_TAG": "gpu-cluster:cluster",
        "STACK": spec.stack,
        "STACK_TAG": "gpu-cluster:stack",
        "SKIP_NAMES": f"{spec.name}-login",  # components/tencentcloud/access.py build_login instance_name
        "TARGETS_FILE": TARGETS_FILE,
    }


def targets_part(spec: ClusterSpec) -> Part:
    return file_sd.targets_part("tencentcloud", "CVM DescribeInstances", targets_env(spec))


def plan(spec: ClusterSpec) -> TencentMonitoring | None:
    """The login node's Prometheus (selfHosted) or its agent writing to TMP (managed), with the target list's timer."""
    if spec.login is None or spec.kubernetes is not None or spec.prometheus not in ("selfHosted", "managed"):
        return None
    grant = catalog_monitoring.self_hosted("tencentcloud")
    assert grant is not None  # the spec refuses selfHosted where catalog/monitoring.yaml does not build it
    name = f"{spec.name}-{spec.stack}"  # one per account, as the role's name (layout/tencentcloud/identity.py)
    tmp = tmp_plan(spec, discovery(), targets_part(spec), POLICY_NAME.sub("-", f"{name}-tmp-token")[:128])
    return TencentMonitoring(
        tmp.parts if tmp is not None else (login_part(spec, discovery()), targets_part(spec)),
        tuple(grant["grant"]),
        POLICY_NAME.sub("-", f"{name}-prometheus-targets")[:128],
        # the jobs prometheus.yml has (bootstrap/monitoring.py: no DCGM job on other vendors' GPUs)
        tuple(
            (e.name, e.port) for e in endpoints() if e.name != "dcgm-exporter" or spec.instance.gpu_vendor == "nvidia"
        ),
        grafana_port=int(versions()["grafana"]["port"]),
        prometheus_listen=str(versions()["prometheus"]["listen"]),
        password_file=PASSWORD_FILE,
        tmp=tmp,
    )
