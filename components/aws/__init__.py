"""AWS resources for one GPU cluster: maps an `AwsLayout` onto pulumi-aws, nothing more.

Decisions (EFA scheme, subnets, image, market, identity, access) are made in
`components.layout.aws`; this package turns them into resources, one module per concern, every
resource a child of `CloudCluster` (so URNs do not depend on how the code is split):

- `network`: VPC, subnets, egress, the node security group;
- `identity`: the node IAM role, its managed policies and the instance profile;
- `access`: key pair, SSM interface endpoints (egress: none), the optional login node;
- `nodes`: placement group, image, launch template, Auto Scaling group or N instances;
- `storage`: the shared filesystem (FSx for Lustre or EFS) and its security group;
- `kubernetes`: scheduler kubernetes's EKS control plane, node groups and in-cluster releases;
- `slurm`: scheduler slurm's head node, MUNGE secret and Slurm ports;
- `scaling`: elastic fleets' target-tracking policy, scheduled actions and SQS queue;
- `budget`: the AWS Budgets budget of the cluster's tagged cost (`budget`);
- `serve`: the Network Load Balancer in front of the managed group (`serve:`);
- `encryption`: the customer-managed KMS key (`encryption.key`) the others read from `Context.kms_key`;
- `logs`: the CloudWatch Logs group every node's agent ships to (`monitoring.logs`) and the role's writes into it;
- `monitoring`: the SNS topic the login node's Alertmanager publishes to (`monitoring.notify`) and its emails;
- `amp`: the Amazon Managed Service for Prometheus workspace, its rules and alert manager (`prometheus: managed`);
- `managed_grafana`: Amazon Managed Grafana beside it with the dashboards (`monitoring.grafanaAdmins`).
"""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_aws as aws

from ..catalog.capabilities import capabilities
from ..layout.aws import AwsLayout
from ..layout.aws.monitoring import TOPIC_PLACEHOLDER, WORKSPACE_PLACEHOLDER
from ..layout.kubernetes import LABEL_PREFIX
from ..resources import fill
from .access import access_output, build_endpoints, build_key_pair, build_login, monitoring_output
from .amp import build_workspace, build_workspace_policy
from .budget import build_budget
from .eks_amp import build_scraper, collector_output
from .eks_logs import eks_logs_output
from .encryption import build_key
from .identity import (
    build_drain_policy,
    build_driver_policy,
    build_health_policy,
    build_identity,
    build_monitoring_policy,
    build_scaling_policy,
)
from .kubernetes import build_kubernetes, kubernetes_output
from .logs import build_log_group, build_logs_policy, logs_output
from .managed_grafana import build as build_managed_grafana
from .monitoring import build_alerts, build_alerts_policy
from .naming import Context
from .network import Network, build_network
from .nodes import build_nodes, build_partitions
from .scaling import build_queue, build_request_policy, build_scaling
from .serve import build_serving
from .slurm import build_head, build_power, connect, login_user_data, slurm_output
from .storage import build_shared

TYPE = "gpu-cluster:aws:Cluster"


def metrics_output(layout: AwsLayout, nodes: pulumi.Input[str]) -> dict[str, Any]:
    """`metrics`: the exporters' endpoints on every node and how to list the targets to scrape."""
    if not layout.metrics.endpoints:
        return {"endpoints": [], "scrape": None}
    endpoints = [{"name": n, "port": port, "path": path} for n, port, path in layout.metrics.endpoints]
    ports = " and ".join(f":{port}{path}" for _n, port, path in layout.metrics.endpoints)
    where = "a node or the login node" if layout.metrics.from_login else "a node of the cluster"
    scrape = pulumi.Output.concat(
        f"every node's private IP at {ports}, from {where} (the node security group admits only itself",
        " and the login node)" if layout.metrics.from_login else ")",
        "; list the IPs with: ",
        nodes,
    )
    return {"endpoints": endpoints, "scrape": scrape}


class CloudCluster(pulumi.ComponentResource):
    """The AWS half of `GpuCluster`; children are parented here so the tree reads cloud-first."""

    outputs: dict[str, Any]

    def __init__(self, name: str, layout: AwsLayout, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(TYPE, name, {}, opts)
        self.layout = layout
        spec = layout.spec
        # encryption.key not provider: the key first, every disk, filesystem and secret below names it
        ctx, self.encryption = build_key(Context(name, layout, self))
        self.budget = build_budget(ctx)  # budget: counts the cluster's tag, whatever builds below
        # monitoring.logs and .notify: the group and the topic before any node boots and ships or publishes
        self.log_group = build_log_group(ctx)
        self.alerts = build_alerts(ctx)
        topic_arn = self.alerts[0].arn if self.alerts else None
        # prometheus managed: the workspace before the login node, whose agent and Grafana name its endpoint
        self.amp = build_workspace(ctx, self.alerts[0] if self.alerts else None)
        workspace = self.amp.workspace.prometheus_endpoint if self.amp else None
        self.managed_grafana = build_managed_grafana(ctx, self.amp)  # with grafanaAdmins: the dashboards there too

        net = build_network(ctx)
        self.vpc, self.subnet, self.route_table = net.vpc, net.subnet, net.route_table
        self.security_group = net.security_group
        self.identity = build_identity(ctx)
        key_pair = build_key_pair(ctx)
        self.endpoints = build_endpoints(ctx, net)
        # scheduler slurm: the head and the login node mount storage.shared too, so it comes first
        self.shared = build_shared(ctx, net) if layout.slurm else None
        source = self.shared.source if self.shared else None
        self.slurm = build_head(ctx, net, self.identity, key_pair, source)
        if self.slurm is not None and self.slurm.identity is not self.identity:  # the head's own role ships too
            build_logs_policy(ctx, self.slurm.identity, self.log_group, label="head-role")
        login_data = login_user_data(ctx, self.slurm, source, topic_arn, workspace)
        if login_data is None and layout.vm_login_user_data is not None:  # VM mode: monitoring, the logs' agent
            login_data = fill(
                layout.vm_login_user_data,
                {TOPIC_PLACEHOLDER: topic_arn, WORKSPACE_PLACEHOLDER: workspace},
                layout.user_data_b64_for,
            )
        self.login = build_login(ctx, net, self.identity, key_pair, login_data)
        if layout.slurm is None:
            self.shared = build_shared(ctx, net)
        if layout.shared_note:
            pulumi.log.warn(layout.shared_note, resource=self)
        if layout.kubernetes is not None:  # EKS node groups instead of the VM mode's nodes
            self._kubernetes(ctx, net, key_pair)
            return
        head_address = self.slurm.address if self.slurm else None
        if layout.partitions:  # elastic Slurm partitions: the head launches their nodes from their templates
            nodes, templates = build_partitions(ctx, net, self.identity, key_pair, source, head_address)
            self.slurm = build_power(ctx, self.slurm, templates, self.identity)
        else:
            nodes = build_nodes(
                ctx, net, self.identity, key_pair, self.shared.source if self.shared else None, head_address
            )
        connect(ctx, net, self.slurm, self.login)
        self.placement_group = nodes.placement_group
        self.image_id = nodes.image_id
        self.launch_template = nodes.launch_template
        self.group: aws.autoscaling.Group | None = nodes.group
        self.instances: list[aws.ec2.Instance] = nodes.instances

        self.health_policy = build_health_policy(ctx, self.identity, nodes.group)
        inline = [self.health_policy[1]] if self.health_policy else None
        self.drain_policy = build_drain_policy(ctx, self.identity, nodes.group)
        if self.drain_policy:
            inline = [*(inline or []), *self.drain_policy[1]]
        self.scaling = None
        if layout.scaling is not None and nodes.group is not None:
            queue = build_queue(ctx, layout.scaling)
            self.scaling = build_scaling(ctx, nodes.group, queue, nodes.drain_hook)
            self.scaling_policy = build_scaling_policy(ctx, self.identity, queue)
            if self.scaling_policy:
                inline = [*(inline or []), *self.scaling_policy[1]]
        self.monitoring_policy = build_monitoring_policy(ctx, self.identity)
        if self.monitoring_policy:
            inline = [*(inline or []), self.monitoring_policy[1]]
        self.driver_policy = build_driver_policy(ctx, self.identity)
        if self.driver_policy:
            inline = [*(inline or []), self.driver_policy[1]]
        self.logs_policy = build_logs_policy(ctx, self.identity, self.log_group)
        if self.logs_policy:
            inline = [*(inline or []), self.logs_policy[1]]
        # managed: the workspace's alert manager publishes, as AMP; the login node's role does not
        local_topic = self.alerts[0] if self.alerts and self.amp is None else None
        self.alerts_policy = build_alerts_policy(ctx, self.identity, local_topic)
        if self.alerts_policy:
            inline = [*(inline or []), self.alerts_policy[1]]
        self.amp_policy = build_workspace_policy(ctx, self.identity, self.amp)
        if self.amp_policy:
            inline = [*(inline or []), self.amp_policy[1]]
        self.serving = build_serving(ctx, net, nodes.group) if nodes.group is not None else None
        if self.serving is not None and nodes.group is not None:  # serve.requestsPerNode: the ALB's request policy
            s = self.serving
            build_request_policy(ctx, nodes.group, s.load_balancer, s.target_group, s.attachment, nodes.drain_hook)
        access = access_output(ctx, self.login, nodes.group, nodes.instances)

        node_ids: pulumi.Output[Any]
        if nodes.group is not None:
            node_ids = nodes.group.name
        else:
            node_ids = pulumi.Output.all(*[inst.id for inst in nodes.instances])
        self.outputs = {
            "vpcId": self.vpc.id,
            "subnetIds": pulumi.Output.all(self.subnet.id),
            "securityGroupId": self.security_group.id,
            "imageId": self.image_id,
            "nodeGroup" if spec.node_group == "managed" else "instanceIds": node_ids,
            "placementGroup": self.placement_group.name if self.placement_group else None,
            "identity": self.identity.output(capabilities("aws").identity.kind, inline),
            "access": access,
            "placementApplied": layout.placement_applied,
            "metrics": metrics_output(layout, access["nodes"]),
            "monitoring": {
                **monitoring_output(ctx, self.login, workspace),
                **self._shipping(layout),
                **self._managed_grafana(layout),
            },
        }
        if layout.gpu_driver is not None:  # a vGPU slice installs its GRID driver at boot
            self.outputs["gpuDriver"] = layout.gpu_driver
        if self.scaling is not None and layout.scaling is not None:
            self.outputs["scaling"] = self.scaling.output(layout.scaling)
        if self.serving is not None and layout.serve is not None:
            self.outputs["serve"] = self.serving.output(layout.serve)
        if self.encryption is not None:
            self.outputs["encryption"] = self.encryption.output()
        logs = logs_output(self.log_group, ctx)
        if logs is not None:
            self.outputs["logs"] = logs
        if self.alerts is not None:
            self.outputs["alerts"] = self._alerts_output(layout)
        if self.shared is not None and layout.shared is not None:
            self.outputs["sharedFilesystem"] = self.shared.output(layout.shared)
        if self.slurm is not None:
            self.outputs["slurm"] = slurm_output(self.slurm, access)
        if nodes.group is None:
            # a hostfile for mpirun / torchrun: one private IP per node, in node order
            self.outputs["privateIps"] = [inst.private_ip for inst in nodes.instances]
        if self.login is not None:
            self.outputs["loginNode"] = self.login.output()
        self.register_outputs(self.outputs)

    def _alerts_output(self, layout: AwsLayout) -> dict[str, Any]:
        assert self.alerts is not None
        return {
            "topic": self.alerts[0].arn,
            "emails": list(layout.notify),
            "confirm": "each address gets a confirmation mail from SNS and receives alerts once it confirms",
        }

    def _managed_grafana(self, layout: AwsLayout) -> dict[str, Any]:
        """With monitoring.grafanaAdmins: Amazon Managed Grafana's endpoint and dashboards (the plan's row)."""
        managed = layout.amp
        if self.managed_grafana is None or managed is None or managed.grafana is None:
            return {}
        return {"managedGrafana": self.managed_grafana.output(managed.grafana)}

    def _shipping(self, layout: AwsLayout) -> dict[str, Any]:
        """The plan's monitoring row: where the logs go and who the alerts reach (monitoring.logs, .notify)."""
        out: dict[str, Any] = {}
        if layout.logs is not None:
            key = ", the cluster's key" if layout.encryption is not None else ""
            out["logs"] = (
                f"CloudWatch Logs {layout.logs.group_name} ({layout.logs.retention_days} days{key}), one stream "
                "per node and file"
            )
        if layout.notify and layout.amp is not None:
            out["alerts"] = (
                f"{layout.amp.service}'s alert manager to SNS, email to "
                f"{', '.join(layout.notify)} (each address confirms SNS's subscription mail first)"
            )
        elif layout.monitoring is not None and layout.monitoring.notify:
            out["alerts"] = (
                f"Alertmanager on the login node to SNS, email to {', '.join(layout.monitoring.notify)} (each "
                "address confirms SNS's subscription mail first)"
            )
        return out

    def _kubernetes(self, ctx: Context, net: Network, key_pair: aws.ec2.KeyPair | None) -> None:
        """scheduler kubernetes: the EKS cluster, its node groups and releases (`kubernetes.py`), and the outputs."""
        layout = ctx.layout
        assert layout.kubernetes is not None
        self.eks = build_kubernetes(ctx, net, self.identity, key_pair, self.login)
        self.scraper = build_scraper(ctx, net, self.eks, self.amp)  # prometheus managed: AMP's collector
        self.placement_group = self.eks.placement_group
        self.group = None
        self.instances = []
        access = access_output(ctx, self.login, None, [])
        # the nodes are Kubernetes nodes: list them with kubectl (the GPU pool carries the gpu-cluster labels)
        access["nodes"] = f"kubectl get nodes -l {LABEL_PREFIX}/gpus -o wide"
        logging, eks_logs = self.eks.logging, layout.kubernetes.logs
        inline = (
            [{"action": list(eks_logs.actions), "resource": [g.arn for g in logging.groups.values()]}]
            if logging is not None and eks_logs is not None
            else None
        )
        self.outputs = {
            "vpcId": self.vpc.id,
            "subnetIds": pulumi.Output.all(self.subnet.id),
            "securityGroupId": self.security_group.id,
            "imageId": f"EKS-optimized {layout.kubernetes.gpu.ami_type} AMI (EKS picks the release for "
            f"{layout.kubernetes.version})",
            "nodeGroup": self.eks.gpu_group.node_group_name,
            "placementGroup": self.placement_group.name if self.placement_group else None,
            "identity": self.identity.output(capabilities("aws").identity.kind, inline),
            "access": access,
            "placementApplied": layout.placement_applied,
            "metrics": metrics_output(layout, access["nodes"]),
            "kubernetes": kubernetes_output(ctx, self.eks),
            "kubeconfig": self.eks.kubeconfig,
        }
        if logging is not None and eks_logs is not None:
            self.outputs["logs"] = eks_logs_output(logging, eks_logs)
            key = ", the cluster's key" if layout.encryption is not None else ""
            self.outputs["monitoring"] = {
                "logs": f"CloudWatch Logs /aws/containerinsights/<EKS cluster>/{{{','.join(eks_logs.groups)}}} "
                f"({eks_logs.retention_days} days{key}) from the EKS add-on {eks_logs.addon} (Fluent Bit)"
                + (
                    f"; the control plane's {', '.join(eks_logs.control_plane)} to {eks_logs.control_plane_group}"
                    if eks_logs.control_plane_group
                    else ""
                )
            }
        collector = collector_output(ctx, self.amp, self.scraper)
        if collector or self.alerts is not None:
            alerts = {k: v for k, v in self._shipping(layout).items() if k == "alerts"}
            self.outputs["monitoring"] = {
                **(self.outputs.get("monitoring") or {}),
                **collector,
                **alerts,
                **self._managed_grafana(layout),
            }
        if self.alerts is not None:
            self.outputs["alerts"] = self._alerts_output(layout)
        if self.encryption is not None:
            self.outputs["encryption"] = self.encryption.output()
        if self.login is not None:
            self.outputs["loginNode"] = self.login.output()
        self.register_outputs(self.outputs)
