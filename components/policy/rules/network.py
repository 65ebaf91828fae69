"""Network rules: no public address on a node, no inbound rule open to the internet."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ...cidr import wide_public
from ..model import CONFIG, Facts, Issue, Resource, find, truthy
from ..readers import ingress_sources
from ..types import LOAD_BALANCERS, NIC_TYPES, NODE_TYPES


def is_login(res: Resource) -> bool:
    """The login node and its own NIC / address (logical names `<cluster>-login...`), never a GPU node."""
    return "-login" in res.name


def no_public_ip(res: Resource, facts: Facts) -> Iterator[str]:
    if facts.public_ip:
        return
    if res.type == "gcp:container/cluster:Cluster":
        # GKE nodes get external IPs unless the cluster is private (node pools inherit it)
        if not truthy((res.props.get("privateClusterConfig") or {}).get("enablePrivateNodes")):
            yield "gives its nodes external IPs (privateClusterConfig.enablePrivateNodes is not true)"
        return
    if res.type == "azure-native:containerservice:ManagedCluster":
        # the pools declared inline (the system pool) carry their own enableNodePublicIP
        if any(truthy(p.get("enableNodePublicIP")) for p in res.props.get("agentPoolProfiles") or []):
            yield "assigns a public IP to nodes of an inline agent pool (enableNodePublicIP)"
        return
    if res.type not in NODE_TYPES | NIC_TYPES:
        return
    if res.type == "gcp:container/nodePool:NodePool" and (res.props.get("networkConfig") or {}).get(
        "enablePrivateNodes"
    ) in (False, "false"):
        yield "gives its nodes external IPs (networkConfig.enablePrivateNodes is false)"
    if facts.login_public_ip and is_login(res):
        return
    if any(
        truthy(v)
        for v in find(
            res.props,
            # AKS agent pools: enableNodePublicIP; ACK node pools: scalingConfig.isBondEip (an EIP per node)
            # Tencent launch configurations: publicIpAssigned
            {
                "associatePublicIpAddress",
                "mapPublicIpOnLaunch",
                "allocatePublicIp",
                "enableNodePublicIP",
                "isBondEip",
                "publicIpAssigned",
            },
        )
    ):
        yield "assigns a public IP to nodes"
    if any(v for v in find(res.props, {"publicIPAddressConfiguration", "publicIPAddress", "accessConfigs"})):
        yield "attaches a public IP address to node network interfaces"
    for bandwidth in find(res.props, {"internetMaxBandwidthOut"}):
        if isinstance(bandwidth, int | float) and bandwidth > 0:
            yield f"gives nodes public bandwidth (internetMaxBandwidthOut={bandwidth:g})"


def open_sources(res: Resource) -> Iterator[Any]:
    props, kind = res.props, res.type
    if kind == "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule":
        yield from (props.get(k) for k in ("cidrIpv4", "cidrIpv6") if props.get(k))
    elif kind in ("aws:ec2/securityGroup:SecurityGroup", "aws:ec2/securityGroupRule:SecurityGroupRule"):
        rules = props.get("ingress") or ([props] if props.get("type") == "ingress" else [])
        for rule in rules:
            yield from (rule.get("cidrBlocks") or []) + (rule.get("ipv6CidrBlocks") or [])
    elif kind in ("azure-native:network:NetworkSecurityGroup", "azure-native:network:SecurityRule"):
        rules = props.get("securityRules") or [props.get("properties", props)]
        for rule in rules:
            if str(rule.get("direction", "")).lower() == "inbound" and str(rule.get("access", "")).lower() == "allow":
                yield from [rule.get("sourceAddressPrefix"), *(rule.get("sourceAddressPrefixes") or [])]
    elif kind == "gcp:compute/firewall:Firewall":
        if str(props.get("direction", "INGRESS")).upper() == "INGRESS" and props.get("allows"):
            yield from props.get("sourceRanges") or []
    else:  # the plain rule shapes: resource_types.yaml ingressRules
        yield from ingress_sources(kind, props)


def no_open_ingress(res: Resource, facts: Facts) -> Iterator[str | Issue]:
    if res.type == "aws:eks/nodeGroup:NodeGroup":
        remote = res.props.get("remoteAccess") or {}
        # pulumi_aws eks NodeGroupRemoteAccessArgs: an ec2SshKey without sourceSecurityGroupIds opens
        # port 22 on the nodes to 0.0.0.0/0
        if remote.get("ec2SshKey") and not remote.get("sourceSecurityGroupIds"):
            yield Issue(
                "opens SSH to 0.0.0.0/0 (remoteAccess.ec2SshKey without sourceSecurityGroupIds)",
                "open SSH to 0.0.0.0/0 through remoteAccess",
                "opens SSH to 0.0.0.0/0 through remoteAccess",
                "give the node group a launch template instead of remoteAccess",
            )
    for source in open_sources(res):
        if isinstance(source, str) and wide_public(source):
            yield Issue(
                f"allows inbound traffic from {source}",
                f"allow inbound traffic from {source}",
                f"allows inbound traffic from {source}",
                f"remove {source} from {CONFIG}.network.sshCidrs",
            )


def serve_private(res: Resource, facts: Facts) -> Iterator[str | Issue]:
    """A load balancer faces the internet only where the stack sets serve.public (its clients: serve.allowedCidrs)."""
    entry = LOAD_BALANCERS.get(res.type)
    if entry is None or facts.serve_public:
        return
    if "list" in entry:  # public when one of its frontends carries the public key (Azure: publicIPAddress)
        frontends = res.props.get(entry["list"]) or []
        public = any(isinstance(f, dict) and f.get(entry["publicKey"]) for f in frontends)
        what = f"a frontend has {entry['publicKey']}"
    else:
        key, private = entry["key"], entry["private"]
        public = res.props.get(key) not in (private if isinstance(private, list) else [private])
        what = f"{key} is {res.props.get(key)!r}"
    if public:
        yield Issue(
            f"faces the internet ({what}) although serve.public is false",
            "face the internet although serve.public is false",
            "faces the internet although serve.public is false",
            f"keep the load balancer internal, or set {CONFIG}.serve.public and serve.allowedCidrs",
        )
