"""The self-hosted Prometheus and Grafana on GCP (monitoring.prometheus: selfHosted), pure: on the login node, finding
the GPU nodes with gce_sd_configs (catalog/monitoring.yaml selfHosted.gcp).

Prometheus' GCE discovery lists the instances of the cluster's project and zone carrying this cluster's and this
stack's labels, running; the login node and the Slurm head (label gpu-cluster_role) are dropped. It needs
compute.instances.list: the nodes' service account (which the login node carries) gets roles/compute.viewer on the
project. The host VPC's internal rule already admits every port between the login node and the GPU nodes.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...bootstrap import Part
from ...bootstrap.monitoring import PASSWORD_FILE, Discovery, versions
from ...spec import ClusterSpec
from ..monitoring import login_hosted, login_part
from .identity import monitoring_roles
from .labels import label_value
from .nodes import startup_script


@dataclass(frozen=True)
class GcpMonitoring:
    part: Part  # the login node's part (bootstrap/monitoring.py)
    vm_script: str  # VM mode: the login node's whole startup-script (Slurm mode appends `part` to the Slurm login's)
    roles: tuple[str, ...]  # what the nodes' service account needs for gce_sd (catalog/monitoring.yaml)
    grafana_port: int
    prometheus_listen: str
    password_file: str


def discovery(spec: ClusterSpec, project: str, zone: str) -> Discovery:
    cluster, stack = label_value(spec.name), label_value(spec.stack)
    config = {
        "project": project,
        "zone": zone,
        # instances.list filter: each expression in parentheses, joined with AND (Compute Engine API reference)
        "filter": f'(labels.gpu-cluster_cluster = "{cluster}") AND (labels.gpu-cluster_stack = "{stack}") '
        'AND (status = "RUNNING")',
    }
    relabel = (
        # the login node, the Slurm head: not GPU nodes (the GPU nodes carry no role label)
        {"source_labels": ["__meta_gce_label_gpu_cluster_role"], "regex": ".+", "action": "drop"},
        {"source_labels": ["__meta_gce_instance_name"], "target_label": "node"},
        {"source_labels": ["__meta_gce_instance_id"], "target_label": "instance_id"},
        {"source_labels": ["__meta_gce_machine_type"], "regex": ".*/([^/]+)", "target_label": "instance_type"},
    )
    return Discovery("gce", config, "__meta_gce_private_ip", relabel)


def plan(spec: ClusterSpec, project: str, zone: str) -> GcpMonitoring | None:
    if not login_hosted(spec):
        return None
    part = login_part(spec, discovery(spec, project, zone))
    script = startup_script((part,))
    assert script is not None
    return GcpMonitoring(
        part,
        script,
        monitoring_roles(spec),
        grafana_port=int(versions()["grafana"]["port"]),
        prometheus_listen=str(versions()["prometheus"]["listen"]),
        password_file=PASSWORD_FILE,
    )
