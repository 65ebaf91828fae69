"""The self-hosted Prometheus and Grafana on Alibaba Cloud (monitoring.prometheus: selfHosted), pure: on the login node,
finding the GPU nodes through a file_sd list the login node writes itself (catalog/monitoring.yaml selfHosted.alicloud).

Prometheus 2.53 has no Alibaba Cloud discovery, so a systemd timer on the login node runs
bootstrap/alicloud_prometheus_targets.sh every minute: ECS DescribeInstances through ECS's VPC endpoint (the one the
Slurm power hook calls), signed with the login node's RAM role, lists this cluster's running instances by its tag and
writes them, without the login node and the Slurm head, as one target group per node; Prometheus rereads the file when
it changes. The role needs ecs:DescribeInstances, an action with no resource scope (Resource "*"): the only grant
added. The login node carries the nodes' role (cpu_node.py), so the grant is on that role, as on AWS.
"""

from __future__ import annotations

from dataclasses import dataclass

from ... import bootstrap
from ...bootstrap import Part
from ...bootstrap.metrics import endpoints
from ...bootstrap.monitoring import PASSWORD_FILE, Discovery, versions
from ...catalog import monitoring as catalog_monitoring
from ...catalog.slurm import cloud_data
from ...spec import ClusterSpec
from .. import file_sd
from ..file_sd import targets_file
from ..monitoring import login_hosted, login_part

TARGETS_FILE = targets_file("alicloud")


@dataclass(frozen=True)
class AlicloudMonitoring:
    parts: tuple[Part, ...]  # the login node's parts: Prometheus and Grafana, then the target list's timer
    vm_user_data: str  # VM mode: the login node's whole user data (Slurm mode appends `parts` to the Slurm login's)
    actions: tuple[str, ...]  # what the login node's role needs for the list (catalog/monitoring.yaml)
    scrape_ports: tuple[tuple[str, int], ...]  # (exporter, port) the nodes' group admits from the login node's group
    grafana_port: int
    prometheus_listen: str
    password_file: str


def discovery() -> Discovery:
    """file_sd on the list the timer writes; its __meta_alicloud_* labels become what the other clouds' relabelling
    yields: node (the hostname, Slurm's NodeName of an elastic node), instance_id, instance_type, pool (the ESS group,
    absent on instances and elastic Slurm nodes)."""
    relabel = (
        {"source_labels": ["__meta_alicloud_hostname"], "target_label": "node"},
        {"source_labels": ["__meta_alicloud_instance_id"], "target_label": "instance_id"},
        {"source_labels": ["__meta_alicloud_instance_type"], "target_label": "instance_type"},
        {"source_labels": ["__meta_alicloud_scaling_group_id"], "regex": "(.+)", "target_label": "pool"},
    )
    return Discovery("file", {"files": [TARGETS_FILE]}, "__meta_alicloud_private_ip", relabel)


def targets_env(spec: ClusterSpec) -> dict[str, str]:
    """The target list script's settings: ECS's VPC endpoint and API version as the Slurm power hook has them
    (catalog/slurm.yaml clouds.alicloud.powerSave), the cluster's tags, the instances that are not GPU nodes."""
    power = cloud_data("alicloud")["powerSave"]
    return {
        "ECS_ENDPOINT": str(power["endpoint"]).format(region=spec.region),
        "ECS_API_VERSION": str(power["apiVersion"]),
        "REGION": spec.region,
        "CLUSTER": spec.name,
        "CLUSTER_TAG": "gpu-cluster:cluster",
        "STACK": spec.stack,
        "STACK_TAG": "gpu-cluster:stack",
        # the CPU nodes' instance names (components/alicloud/cpu_node.py): not scraped
        "SKIP_NAMES": f"{spec.name}-login {spec.name}-head",
        "TARGETS_FILE": TARGETS_FILE,
    }


def targets_part(spec: ClusterSpec) -> Part:
    return file_sd.targets_part("alicloud", "ECS DescribeInstances", targets_env(spec))


def plan(spec: ClusterSpec) -> AlicloudMonitoring | None:
    if not login_hosted(spec):
        return None
    grant = catalog_monitoring.self_hosted("alicloud")
    assert grant is not None  # the spec refuses selfHosted where catalog/monitoring.yaml does not build it
    parts = (login_part(spec, discovery()), targets_part(spec))
    return AlicloudMonitoring(
        parts,
        bootstrap.cloud_init(parts),
        tuple(grant["grant"]),
        # the jobs prometheus.yml has (bootstrap/monitoring.py: no DCGM job on other vendors' GPUs)
        tuple(
            (e.name, e.port) for e in endpoints() if e.name != "dcgm-exporter" or spec.instance.gpu_vendor == "nvidia"
        ),
        grafana_port=int(versions()["grafana"]["port"]),
        prometheus_listen=str(versions()["prometheus"]["listen"]),
        password_file=PASSWORD_FILE,
    )
