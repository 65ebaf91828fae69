"""How people reach the nodes: key pair, SSM interface endpoints, the optional login node, and the
`access` output (the exact command to log in and the one that lists the nodes).

`access: ssm` (the default) opens no inbound port: sessions go out through the NAT, the nodes'
public IPs, or (egress: none) the ssm/ssmmessages/ec2messages interface endpoints built here.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_aws as aws

from ..layout.monitoring import NO_PATH, login_summary, ssh_forward
from ..resources import from_config, invoke_options
from .identity import Identity
from .naming import Context
from .network import Network

SSH_PORT = 22


def build_key_pair(ctx: Context) -> aws.ec2.KeyPair | None:
    spec = ctx.layout.spec
    if not spec.ssh_public_key:
        return None
    return aws.ec2.KeyPair(
        f"{ctx.name}-key",
        public_key=from_config(spec, spec.ssh_public_key),
        tags=ctx.tagged("key"),
        opts=ctx.child,
    )


def build_endpoints(ctx: Context, net: Network) -> list[aws.ec2.VpcEndpoint]:
    """SSM without a NAT: interface endpoints in the node subnet, reachable on 443 from the VPC only."""
    access, layout = ctx.layout.access, ctx.layout
    if not access.endpoint_services:
        return []
    port = access.endpoint_port
    sg = aws.ec2.SecurityGroup(
        f"{ctx.name}-endpoints-sg",
        vpc_id=net.vpc.id,
        description=f"gpu-cluster {layout.spec.name} SSM endpoints",
        tags=ctx.tagged("endpoints-sg"),
        opts=ctx.child,
    )
    aws.vpc.SecurityGroupIngressRule(
        f"{ctx.name}-endpoints-sg-https-in",
        security_group_id=sg.id,
        cidr_ipv4=layout.vpc_cidr,
        ip_protocol="tcp",
        from_port=port,
        to_port=port,
        description="HTTPS from the cluster VPC (SSM agent)",
        opts=ctx.child,
    )
    # With egress: none the nodes' group lets nothing out but to itself: open HTTPS to the VPC.
    aws.vpc.SecurityGroupEgressRule(
        f"{ctx.name}-sg-endpoints-out",
        security_group_id=net.security_group.id,
        cidr_ipv4=layout.vpc_cidr,
        ip_protocol="tcp",
        from_port=port,
        to_port=port,
        description="HTTPS to the SSM interface endpoints",
        opts=ctx.child,
    )
    return [
        aws.ec2.VpcEndpoint(
            f"{ctx.name}-vpce-{service}",
            vpc_id=net.vpc.id,
            service_name=f"com.amazonaws.{layout.spec.region}.{service}",
            vpc_endpoint_type="Interface",
            private_dns_enabled=True,
            subnet_ids=[net.subnet.id],
            security_group_ids=[sg.id],
            tags=ctx.tagged(f"vpce-{service}"),
            opts=ctx.child,
        )
        for service in access.endpoint_services
    ]


@dataclass(frozen=True)
class LoginNode:
    instance: aws.ec2.Instance
    security_group: aws.ec2.SecurityGroup
    public_ip: bool

    def output(self) -> dict[str, Any]:
        """The `loginNode` stack output."""
        return {
            "instanceId": self.instance.id,
            "privateIp": self.instance.private_ip,
            "publicIp": self.instance.public_ip if self.public_ip else None,
        }


def build_login(
    ctx: Context,
    net: Network,
    identity: Identity,
    key_pair: aws.ec2.KeyPair | None,
    user_data: pulumi.Input[str] | None = None,  # gzip+base64 (scheduler slurm: the Slurm client part)
) -> LoginNode | None:
    layout = ctx.layout
    login = layout.access.login
    if login is None:
        return None
    name, child = ctx.name, ctx.child
    sg = aws.ec2.SecurityGroup(
        f"{name}-login-sg",
        vpc_id=net.vpc.id,
        description=f"gpu-cluster {layout.spec.name} login node",
        tags=ctx.tagged("login-sg"),
        opts=child,
    )
    for cidr in layout.access.login_ssh_cidrs:
        aws.vpc.SecurityGroupIngressRule(
            f"{name}-login-sg-ssh-{cidr.replace('/', '_')}",
            security_group_id=sg.id,
            cidr_ipv4=cidr,
            ip_protocol="tcp",
            from_port=SSH_PORT,
            to_port=SSH_PORT,
            description="SSH to the login node",
            opts=child,
        )
    # Out: the internet through the NAT or its public IP (SSM, packages); with egress: none, the VPC.
    aws.vpc.SecurityGroupEgressRule(
        f"{name}-login-sg-out",
        security_group_id=sg.id,
        cidr_ipv4="0.0.0.0/0" if layout.spec.network.egress == "nat" else layout.vpc_cidr,
        ip_protocol="-1",
        description="outbound from the login node",
        opts=child,
    )
    # The nodes accept SSH from the login node (and only from it, besides themselves).
    aws.vpc.SecurityGroupIngressRule(
        f"{name}-sg-ssh-from-login",
        security_group_id=net.security_group.id,
        referenced_security_group_id=sg.id,
        ip_protocol="tcp",
        from_port=SSH_PORT,
        to_port=SSH_PORT,
        description="SSH from the login node",
        opts=child,
    )
    # A Prometheus on the login node may scrape the exporters; nothing outside the cluster may.
    if layout.metrics.from_login:
        for exporter, port, _path in layout.metrics.endpoints:
            aws.vpc.SecurityGroupIngressRule(
                f"{name}-sg-{exporter}-from-login",
                security_group_id=net.security_group.id,
                referenced_security_group_id=sg.id,
                ip_protocol="tcp",
                from_port=port,
                to_port=port,
                description=f"{exporter} metrics from the login node",
                opts=child,
            )
    image = aws.ssm.get_parameter_output(name=str(login.image.ssm_parameter), opts=invoke_options(ctx.parent)).value
    subnet = net.public_subnet if login.public_ip and net.public_subnet is not None else net.subnet
    instance = aws.ec2.Instance(
        f"{name}-login",
        ami=image,
        instance_type=login.instance_type,
        subnet_id=subnet.id,
        vpc_security_group_ids=[sg.id],
        associate_public_ip_address=login.public_ip,
        iam_instance_profile=identity.profile_name,
        key_name=key_pair.key_name if key_pair else None,
        metadata_options=aws.ec2.InstanceMetadataOptionsArgs(http_endpoint="enabled", http_tokens="required"),
        root_block_device=aws.ec2.InstanceRootBlockDeviceArgs(
            volume_type="gp3", volume_size=30, encrypted=True, kms_key_id=ctx.kms_key
        ),
        user_data_base64=user_data,
        tags=ctx.tagged("login"),
        # the SSM parameter follows Canonical's newest image: a new AMI id must not replace the login node on an
        # unrelated `pulumi up` (as the Slurm head, slurm.py)
        opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(ignore_changes=["ami"])),
    )
    return LoginNode(instance, sg, login.public_ip)


def access_output(
    ctx: Context,
    login: LoginNode | None,
    group: aws.autoscaling.Group | None,
    instances: list[aws.ec2.Instance],
) -> dict[str, Any]:
    """`access`: the method, the exact command a user types, and the command that lists the nodes."""
    spec = ctx.layout.spec
    region = spec.region
    method = ctx.layout.access.method
    query = "--query 'Reservations[].Instances[].PrivateIpAddress' --output text"
    nodes: pulumi.Input[str]
    if group is not None:
        nodes = group.name.apply(
            lambda asg: (
                f"aws ec2 describe-instances --region {region} "
                f"--filters Name=tag:aws:autoscaling:groupName,Values={asg} Name=instance-state-name,Values=running "
                + query
            )
        )
    else:
        tag = shlex.quote(f"Name=tag:gpu-cluster:cluster,Values={spec.name}")
        nodes = (
            f"aws ec2 describe-instances --region {region} --filters {tag} "
            f"'Name=tag:Name,Values={spec.name}-node-*' Name=instance-state-name,Values=running " + query
        )
    # Whom to log in to: the login node when there is one, else a node (known only after deploy
    # for a managed group: `nodes` lists them).
    target: pulumi.Input[str] = "<instance id>"
    if login is not None:
        target = login.instance.id
    elif instances:
        target = instances[0].id
    command: pulumi.Input[str]
    if method == "ssm":
        command = pulumi.Output.concat(f"aws ssm start-session --region {region} --target ", target)
    elif method == "ssh":
        key = "-i <private key> " if spec.ssh_public_key else ""
        host: pulumi.Input[str] = "<node public ip>" if spec.network.public_ip else "<node private ip>"
        if login is not None:
            host = login.instance.public_ip if login.public_ip else "<login node private ip>"
        command = pulumi.Output.concat(f"ssh {key}{spec.admin_user}@", host)
    else:
        command = "none: access is none, no login path is built"
    return {"method": method, "command": command, "nodes": nodes}


def monitoring_output(
    ctx: Context, login: LoginNode | None, workspace: pulumi.Input[str] | None = None
) -> dict[str, Any]:
    """`monitoring`: where Prometheus and Grafana run and the exact command that forwards Grafana to this machine."""
    layout = ctx.layout
    if layout.monitoring is None or login is None:
        return {"prometheus": "none", "grafana": None}
    spec, port = layout.spec, layout.monitoring.grafana_port
    forward: pulumi.Input[str]
    if layout.access.method == "ssm":
        # AWS-StartPortForwardingSession forwards to the port on the instance's localhost, where Grafana listens
        forward = pulumi.Output.concat(
            f"aws ssm start-session --region {spec.region} --target ",
            login.instance.id,
            f" --document-name AWS-StartPortForwardingSession --parameters "
            f'\'{{"portNumber":["{port}"],"localPortNumber":["{port}"]}}\'',
        )
    elif layout.access.method == "ssh":
        host: pulumi.Input[str] = login.instance.public_ip if login.public_ip else "<login node private ip>"
        forward = pulumi.Output.concat(ssh_forward(port, spec.admin_user), host)
    else:
        forward = NO_PATH
    m = layout.monitoring
    summary = login_summary(forward, port, m.password_file, m.prometheus_listen)
    if m.managed is not None:  # the agent writes there; the rules and alerts live there
        summary.update(
            prometheus="managed",
            service=m.managed.service,
            workspace=m.managed.alias,
            endpoint=workspace,
            grafanaNote=m.managed.grafana_note,
        )
    return summary
