"""scheduler: kubernetes on AWS: an EKS control plane, a CPU system node group and the GPU node group, and the
in-cluster software (`components.incluster`) through a provider built from the cluster's kubeconfig.

The GPU node group launches from a launch template carrying the VM mode's EFA interfaces (`layout.interfaces`,
one per network card), the cluster placement group, the encrypted gp3 root and IMDSv2; EKS picks the AMI by
`amiType` (no image id in the template), so it merges its own bootstrap (nodeadm) into our MIME user data.
What the template may not hold (EKS User Guide, launch-templates): the subnet, the IAM instance profile, the
shutdown behaviour; the node group takes the subnet, the role and the instance type instead, and no remote access.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_aws as aws

from ..incluster import InCluster, install
from ..layout.aws import EksPool
from ..layout.aws.kubernetes import EksAutoscaler, policy_document
from ..resources import invoke_options
from .access import LoginNode
from .eks_logs import EksLogging, build_control_plane_group, build_eks_logs
from .identity import Identity, service_role
from .launch_template import build_launch_template, network_interfaces
from .naming import Context
from .network import Network, other_zone


@dataclass(frozen=True)
class Eks:
    cluster: aws.eks.Cluster
    control_plane_subnet: aws.ec2.Subnet
    placement_group: aws.ec2.PlacementGroup | None
    launch_templates: dict[str, aws.ec2.LaunchTemplate]
    node_groups: dict[str, aws.eks.NodeGroup]
    kubeconfig: pulumi.Output[str]
    in_cluster: InCluster
    logging: EksLogging | None = None  # monitoring.logs: the Container Insights groups and the add-on

    @property
    def gpu_group(self) -> aws.eks.NodeGroup:
        return self.node_groups["gpu"]


def build_kubernetes(
    ctx: Context,
    net: Network,
    identity: Identity,
    key_pair: aws.ec2.KeyPair | None,
    login: LoginNode | None = None,
) -> Eks:
    eks = ctx.layout.kubernetes
    assert eks is not None and identity.role is not None  # the layout refuses identity.existing
    subnet = _control_plane_subnet(ctx, net)
    control_plane_logs = build_control_plane_group(ctx, eks.logs) if eks.logs is not None else None
    cluster = _cluster(ctx, net, subnet, control_plane_logs)
    if login is not None:
        # The private endpoint answers only what its security group admits: the login node is where kubectl runs
        # (EKS User Guide, cluster-endpoint "Amazon EC2 bastion host": allow ingress on 443 from the bastion).
        aws.vpc.SecurityGroupIngressRule(
            f"{ctx.name}-eks-api-from-login",
            security_group_id=cluster.vpc_config.cluster_security_group_id,
            referenced_security_group_id=login.security_group.id,
            ip_protocol="tcp",
            from_port=443,
            to_port=443,
            description="Kubernetes API from the login node",
            opts=ctx.child,
        )
    admin = _admin_access(ctx, cluster)
    placement_group = (
        aws.ec2.PlacementGroup(
            f"{ctx.name}-pg", strategy=ctx.layout.placement_strategy, tags=ctx.tagged("pg"), opts=ctx.child
        )
        if ctx.layout.placement_strategy
        else None
    )
    templates: dict[str, aws.ec2.LaunchTemplate] = {
        pool.key: _launch_template(ctx, net, cluster, pool, placement_group, key_pair) for pool in eks.pools
    }
    # EKS deletes a group's instances with the role's permissions: the attachments must outlive the groups
    # (pulumi-aws 7.51.1 eks/node_group.py, the docstring example: depends_on the role policy attachments).
    after_role = pulumi.ResourceOptions.merge(ctx.child, pulumi.ResourceOptions(depends_on=list(identity.attachments)))
    groups: dict[str, aws.eks.NodeGroup] = {
        pool.key: aws.eks.NodeGroup(
            f"{ctx.name}-{pool.key}",
            cluster_name=cluster.name,
            version=cluster.version,
            node_role_arn=identity.role.arn,
            subnet_ids=[net.subnet.id],  # one zone: the cluster's (EFA and the placement group need it)
            instance_types=[pool.instance_type],
            ami_type=pool.ami_type,
            capacity_type=pool.capacity_type,
            scaling_config=aws.eks.NodeGroupScalingConfigArgs(
                desired_size=pool.desired, min_size=pool.min_size, max_size=pool.max_size
            ),
            launch_template=aws.eks.NodeGroupLaunchTemplateArgs(
                id=templates[pool.key].id, version=templates[pool.key].latest_version.apply(str)
            ),
            labels=dict(pool.labels),
            taints=[aws.eks.NodeGroupTaintArgs(**t) for t in pool.taints] or None,
            # the group drains each node itself; update sizes its batches (layout.aws.kubernetes)
            update_config=aws.eks.NodeGroupUpdateConfigArgs(max_unavailable=pool.max_unavailable)
            if pool.max_unavailable is not None
            else None,
            tags={**ctx.tagged(f"{pool.key}-pool"), **pool.tags},
            # the Cluster Autoscaler moves desiredSize between minSize and maxSize: a later `pulumi up` keeps its
            # count (EKS API NodegroupScalingConfig.desiredSize: with CA "you shouldn't change the desiredSize value
            # directly"; as the VM mode's Auto Scaling group ignores desiredCapacity, components/aws/nodes.py)
            opts=pulumi.ResourceOptions.merge(
                after_role, pulumi.ResourceOptions(ignore_changes=["scalingConfig.desiredSize"])
            )
            if pool.autoscaled
            else after_role,
        )
        for pool in eks.pools
    }
    region = ctx.layout.spec.region
    rendered: pulumi.Output[str] = pulumi.Output.all(
        cluster.name, cluster.endpoint, cluster.certificate_authority.data
    ).apply(lambda args: render_kubeconfig(args[0], args[1], args[2], region))
    kubeconfig: pulumi.Output[str] = pulumi.Output.secret(rendered)
    # Charts with DaemonSets only settle once nodes exist; with a private endpoint Helm (run by `pulumi up`)
    # must reach the API server from inside the VPC (a login node, a VPN or a peered network).
    # ... and only once the caller's access entry grants it the cluster (Helm authenticates as the caller)
    at_deploy: dict[str, dict[str, Any]] = {}
    after: dict[str, list[pulumi.Resource]] = {}
    if eks.autoscaler is not None:
        ca = eks.autoscaler
        at_deploy[ca.release] = {"autoDiscovery": {"clusterName": cluster.name}}
        after[ca.release] = _autoscaler_identity(ctx, cluster, ca, list(groups.values()))
    in_cluster = install(
        ctx.name,
        kubeconfig,
        eks.releases,
        ctx.parent,
        depends_on=[*groups.values(), admin],
        at_deploy=at_deploy,
        after=after,
    )
    logging = (
        build_eks_logs(ctx, eks.logs, cluster, identity, list(groups.values()), control_plane_logs)
        if eks.logs is not None
        else None
    )
    return Eks(cluster, subnet, placement_group, templates, groups, kubeconfig, in_cluster, logging)


def _autoscaler_identity(
    ctx: Context, cluster: aws.eks.Cluster, ca: EksAutoscaler, groups: list[aws.eks.NodeGroup]
) -> list[pulumi.Resource]:
    """EKS Pod Identity for the Cluster Autoscaler: the agent add-on, a role only pods.eks.amazonaws.com may assume,
    its policy (Describe on `*`, scaling only on this cluster's tagged groups) and the association of the role with
    the autoscaler's service account. The release waits for all of them (its pod reads credentials at start)."""
    # the add-on's version: EKS's default for the cluster's Kubernetes version (addonVersion left out). A DaemonSet:
    # created once nodes exist (the provider waits for ACTIVE, addon.go waitAddonCreated)
    agent = aws.eks.Addon(
        f"{ctx.name}-pod-identity-agent",
        cluster_name=cluster.name,
        addon_name=ca.addon,
        tags=ctx.tagged("pod-identity-agent"),
        opts=pulumi.ResourceOptions.merge(ctx.child, pulumi.ResourceOptions(depends_on=list(groups))),
    )
    trust = {
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Principal": {"Service": ca.trust_service}, "Action": list(ca.trust_actions)}
        ],
    }
    role = aws.iam.Role(
        f"{ctx.name}-autoscaler-role",
        assume_role_policy=json.dumps(trust),
        description=f"gpu-cluster {ctx.layout.spec.name} Cluster Autoscaler (EKS Pod Identity)",
        tags=ctx.tagged("autoscaler-role"),
        opts=ctx.child,
    )
    # the cluster's node groups: arn:<partition>:eks:<region>:<account>:nodegroup/<cluster>/<group>/<uuid>
    nodegroups = cluster.arn.apply(lambda arn: arn.replace(":cluster/", ":nodegroup/", 1) + "/*")
    policy = aws.iam.RolePolicy(
        f"{ctx.name}-autoscaler-policy",
        role=role.id,
        policy=pulumi.Output.all(cluster.name, nodegroups).apply(
            lambda args: policy_document(ca.policy, args[0], args[1])
        ),
        opts=ctx.child,
    )
    association = aws.eks.PodIdentityAssociation(
        f"{ctx.name}-autoscaler-identity",
        cluster_name=cluster.name,
        namespace=ca.namespace,
        service_account=ca.service_account,
        role_arn=role.arn,
        tags=ctx.tagged("autoscaler-identity"),
        opts=ctx.child,
    )
    return [agent, policy, association]


def _control_plane_subnet(ctx: Context, net: Network) -> aws.ec2.Subnet:
    """EKS needs its control plane's subnets in two zones: a small private subnet in another zone, used by the
    control plane's interfaces only (no node group uses it)."""
    eks = ctx.layout.kubernetes
    assert eks is not None and net.zone is not None and net.route_table is not None
    other = other_zone(ctx, net, "EKS's control plane")
    subnet = aws.ec2.Subnet(
        f"{ctx.name}-control-plane",
        vpc_id=net.vpc.id,
        cidr_block=eks.control_plane_subnet_cidr,
        availability_zone=other,
        map_public_ip_on_launch=False,
        tags=ctx.tagged("control-plane"),
        # "another available zone" may answer differently later: the first deploy's stays
        opts=pulumi.ResourceOptions.merge(ctx.child, pulumi.ResourceOptions(ignore_changes=["availabilityZone"])),
    )
    aws.ec2.RouteTableAssociation(
        f"{ctx.name}-control-plane-rta", subnet_id=subnet.id, route_table_id=net.route_table.id, opts=ctx.child
    )
    return subnet


def _cluster(
    ctx: Context, net: Network, subnet: aws.ec2.Subnet, control_plane_logs: aws.cloudwatch.LogGroup | None
) -> aws.eks.Cluster:
    eks = ctx.layout.kubernetes
    assert eks is not None
    name, spec = ctx.name, ctx.layout.spec
    key = aws.kms.Key(
        f"{name}-eks-secrets",
        description=f"gpu-cluster {spec.name}: EKS secrets encryption",
        enable_key_rotation=True,
        tags=ctx.tagged("eks-secrets"),
        opts=ctx.child,
    )
    role = service_role(ctx, "eks-role", eks.cluster_trust_service, f"gpu-cluster {spec.name} EKS control plane")
    attachments = [
        aws.iam.RolePolicyAttachment(
            f"{name}-eks-role-{arn.rsplit('/', 1)[-1].lower()}", role=role.name, policy_arn=arn, opts=ctx.child
        )
        for arn in eks.cluster_policies
    ]
    logs = eks.logs
    return aws.eks.Cluster(
        f"{name}-eks",
        # kubernetes.clusterName, else Pulumi's auto-name (None: the input stays as deployed clusters have it)
        name=eks.cluster_name,
        role_arn=role.arn,
        version=eks.version,
        vpc_config=aws.eks.ClusterVpcConfigArgs(
            subnet_ids=[net.subnet.id, subnet.id],
            endpoint_private_access=True,
            endpoint_public_access=eks.public_endpoint,
            # without a public endpoint there is nothing to allow; EKS would default the list to 0.0.0.0/0
            public_access_cidrs=list(eks.public_cidrs) if eks.public_endpoint else None,
        ),
        encryption_config=aws.eks.ClusterEncryptionConfigArgs(
            provider=aws.eks.ClusterEncryptionConfigProviderArgs(key_arn=key.arn), resources=["secrets"]
        ),
        # access entries only (no aws-auth ConfigMap); the caller's entry is explicit, not the creator's bootstrap
        # one (both would be the same principal: the second create fails)
        access_config=aws.eks.ClusterAccessConfigArgs(
            authentication_mode=eks.authentication_mode, bootstrap_cluster_creator_admin_permissions=False
        ),
        # monitoring.logs.controlPlane; None without types, as deployed clusters have it (no diff)
        enabled_cluster_log_types=list(logs.control_plane) if logs is not None and logs.control_plane else None,
        tags=ctx.tagged("eks"),
        # EKS cleans up its network interfaces with the role's permissions (pulumi-aws eks/cluster.py role_arn); the
        # control plane's group first, or EKS creates it without retention or key
        opts=pulumi.ResourceOptions.merge(
            ctx.child,
            pulumi.ResourceOptions(
                depends_on=[*attachments, *([control_plane_logs] if control_plane_logs is not None else [])]
            ),
        ),
    )


def _admin_access(ctx: Context, cluster: aws.eks.Cluster) -> aws.eks.AccessPolicyAssociation:
    """Cluster admin for whoever runs `pulumi up`. An assumed-role caller (arn:aws:sts::...:assumed-role/R/session)
    is entered as its role (arn:aws:iam::...:role/R): EKS access entries take IAM principals, not sessions.
    `issuer_arn` is that role for an assumed role and the ARN itself otherwise (an IAM user): pulumi-aws 7.51.1
    iam/get_session_context.py."""
    eks = ctx.layout.kubernetes
    assert eks is not None
    caller = aws.get_caller_identity_output(opts=invoke_options(ctx.parent))
    principal = aws.iam.get_session_context_output(arn=caller.arn, opts=invoke_options(ctx.parent)).issuer_arn
    entry = aws.eks.AccessEntry(
        f"{ctx.name}-eks-admin",
        cluster_name=cluster.name,
        principal_arn=principal,
        type="STANDARD",
        tags=ctx.tagged("eks-admin"),
        opts=ctx.child,
    )
    return aws.eks.AccessPolicyAssociation(
        f"{ctx.name}-eks-admin-policy",
        cluster_name=cluster.name,
        principal_arn=entry.principal_arn,
        policy_arn=eks.admin_policy_arn,
        access_scope=aws.eks.AccessPolicyAssociationAccessScopeArgs(type="cluster"),
        opts=ctx.child,
    )


def _launch_template(
    ctx: Context,
    net: Network,
    cluster: aws.eks.Cluster,
    pool: EksPool,
    placement_group: aws.ec2.PlacementGroup | None,
    key_pair: aws.ec2.KeyPair | None,
) -> aws.ec2.LaunchTemplate:
    layout = ctx.layout
    eks = layout.kubernetes
    assert eks is not None
    gpu = pool.key == "gpu"
    interfaces = None
    if gpu:
        # Our security groups on the interfaces replace the cluster security group EKS would add: list it too,
        # so the nodes reach the control plane (EKS User Guide, launch-templates "Using custom security groups").
        groups: list[pulumi.Input[str]] = [cluster.vpc_config.cluster_security_group_id, *net.node_security_groups]
        interfaces = network_interfaces(ctx, groups, None, public_ip=False)  # no subnet: the node group's
    # Spot is the node group's capacityType; a Capacity Block also needs the template's market and target
    # (EKS User Guide, capacity-blocks-mng); an ODCR is targeted by the template alone.
    market = (
        aws.ec2.LaunchTemplateInstanceMarketOptionsArgs(market_type="capacity-block")
        if gpu and layout.market == "capacity-block"
        else None
    )
    suffix = "node" if gpu else "system"
    return build_launch_template(
        ctx,
        f"{ctx.name}-{pool.key}-lt",
        root_device=eks.root_device,
        root_gb=pool.root_gb,
        scratch=gpu and layout.scratch.kind == "disk",
        key_pair=key_pair,
        interfaces=interfaces,
        market=market,
        reservation_id=layout.capacity_reservation_id if gpu else None,
        placement_group=placement_group if gpu else None,
        user_data=eks.gpu_user_data_b64 if gpu else None,
        launch_names=(suffix, f"{suffix}-volume", f"{suffix}-eni"),
        tags_name=f"{pool.key}-lt",
    )


def render_kubeconfig(cluster: str, endpoint: str, ca_data: str, region: str) -> str:
    """A kubeconfig whose user runs `aws eks get-token` (the caller's AWS credentials, nothing stored)."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": cluster, "cluster": {"server": endpoint, "certificate-authority-data": ca_data}}],
        "contexts": [{"name": cluster, "context": {"cluster": cluster, "user": cluster}}],
        "current-context": cluster,
        "users": [
            {
                "name": cluster,
                "user": {
                    "exec": {
                        "apiVersion": "client.authentication.k8s.io/v1beta1",
                        "command": "aws",
                        "args": ["eks", "get-token", "--region", region, "--cluster-name", cluster, "--output", "json"],
                    }
                },
            }
        ],
    }
    return json.dumps(config, indent=2)  # JSON is YAML: kubectl and the provider read it


def kubernetes_output(ctx: Context, eks: Eks) -> dict[str, Any]:
    """`kubernetes`: the cluster, its pools, how to get credentials, and what is installed in it."""
    layout = ctx.layout.kubernetes
    assert layout is not None
    region = ctx.layout.spec.region
    return {
        "service": layout.service,
        "clusterName": eks.cluster.name,
        "endpoint": eks.cluster.endpoint,
        "version": layout.version,
        "publicEndpoint": layout.public_endpoint,
        "nodePools": [group.node_group_name for group in eks.node_groups.values()],
        "credentials": eks.cluster.name.apply(lambda n: f"aws eks update-kubeconfig --region {region} --name {n}"),
        "releases": [
            {"name": r.name, "chart": r.chart, "version": r.version, "namespace": r.namespace} for r in layout.releases
        ],
    }
