"""Secure-default rules over registered resources, shared by the policy pack and the offline plan.

The rules are pure functions of (type token, camelCase props), so the same code runs under
`pulumi preview --policy-pack policy` (see `policy/__main__.py`, which wraps each rule in a
pulumi-policy `StackValidationPolicy`) and in `gpu-cluster plan`, on the recorded resources.
Stack-level facts (did the stack opt into public IPs or spot, its price and ceiling) come from the
props of the `gpu-cluster:index:GpuCluster` component, so the rules need no other input.

Policy config has pulumi-policy's `--policy-pack-config` format: `{"all": "advisory",
"no-public-ip": "disabled", "spot-nodes": {"enforcementLevel": "mandatory", "allowSpot": false},
"cost-ceiling": {"maxHourlyUsd": 500}}`.

A check yields a plain message, or an `Issue` that also says what kind of problem it is and how to fix
it: the plan prints one line per rule, kind and fix (`group_violations`) instead of one per resource.
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Literal

import yaml  # a dependency of the pulumi SDK, so the pack's own environment has it too

Level = Literal["mandatory", "advisory", "disabled"]
LEVELS: tuple[Level, ...] = ("mandatory", "advisory", "disabled")
CLUSTER_TYPE = "gpu-cluster:index:GpuCluster"
OPEN_RANGES = {"0.0.0.0/0", "::/0", "*", "internet", "any"}
REQUIRED_TAGS = ("gpu-cluster:cluster", "environment")
OWNED_TAGS = {"gpu-cluster:cluster"}  # set by the toolkit itself; a user cannot (and need not) set it
CONFIG = "gpu-cluster:cluster"  # the config key the fixes name (components.errors.CLUSTER_KEY; rules import no package)

# Resources that are (or define) GPU nodes, per cloud: where public IPs, passwords, spot and
# metadata settings live.
NODE_TYPES = {
    "aws:ec2/launchTemplate:LaunchTemplate",
    "aws:ec2/instance:Instance",
    "aws:autoscaling/group:Group",
    "azure-native:compute:VirtualMachineScaleSet",
    "azure-native:compute:VirtualMachine",
    "gcp:compute/instance:Instance",
    "gcp:compute/instanceTemplate:InstanceTemplate",
    "alicloud:ecs/instance:Instance",
    "alicloud:ess/scalingConfiguration:ScalingConfiguration",
    "tencentcloud:Instance/instance:Instance",
}

# Managed Kubernetes: the node pools are nodes too (public IPs, spot, tags); the control planes are
# read by the Kubernetes rules (endpoint, secrets encryption), described in `kubernetes.yaml`.
K8S_POOL_TYPES = {
    "aws:eks/nodeGroup:NodeGroup",
    "gcp:container/nodePool:NodePool",
    "azure-native:containerservice:AgentPool",
    "alicloud:cs/nodePool:NodePool",
}
NODE_TYPES |= K8S_POOL_TYPES
RELEASE_TYPE = "kubernetes:helm.sh/v3:Release"
# Kubernetes resources whose content is rendered by the provider plugin, out of the policy's sight:
# what they install cannot be checked, so they are not used (a chart goes through a pinned Release).
K8S_UNCHECKABLE_TYPES = {
    "kubernetes:helm.sh/v3:Chart",
    "kubernetes:helm.sh/v4:Chart",
    "kubernetes:yaml:ConfigFile",
    "kubernetes:yaml:ConfigGroup",
    "kubernetes:yaml/v2:ConfigFile",
    "kubernetes:yaml/v2:ConfigGroup",
    "kubernetes:kustomize:Directory",
    "kubernetes:kustomize/v2:Directory",
}
_HERE = Path(__file__).resolve().parent
CHARTS_FILE = _HERE.parent / "catalog" / "kubernetes" / "charts.yaml"
KUBERNETES_FILE = _HERE / "kubernetes.yaml"

# Resources that hand out node addresses without being nodes themselves.
NIC_TYPES = {"aws:ec2/subnet:Subnet", "azure-native:network:NetworkInterface"}


@dataclass(frozen=True)
class Resource:
    type: str
    props: Mapping[str, Any]
    urn: str
    name: str
    protect: bool = False  # the resource option (the pack: `opts.protect`; the plan: protect or retainOnDelete)


@dataclass(frozen=True)
class Facts:
    """What the stack asked for, read from the GpuCluster component's props, plus policy config."""

    public_ip: bool = False
    spot: bool = False
    instance_type: str | None = None
    hourly_usd: float | None = None  # at maxNodes: what the cluster can cost once scaled
    max_hourly_usd: float | None = None
    allow_spot: bool = True
    login_public_ip: bool = False  # the stack opted its login node (only) into a public IP
    k8s_public_endpoint: bool = False  # kubernetes.publicEndpoint: the API server may be public ...
    k8s_public_cidrs: tuple[str, ...] = ()  # ... from these ranges only (kubernetes.publicCidrs)
    cloud: str | None = None
    compliance: str = "none"  # the stack's profile (profiles.yaml): its levels override the rules' defaults
    plain_transit: frozenset[str] = frozenset()  # filesystem types that could refuse plain NFS and do not (transit)


@dataclass(frozen=True)
class Issue:
    """What a check found on one resource, with what groups it with the same finding elsewhere.

    `kind` reads after "N resources" (`lack environment`), `kind_one` after "1 resource" (`lacks environment`);
    `fix` names what to change. Findings without a kind group by their message.
    """

    message: str
    kind: str = ""
    kind_one: str = ""
    fix: str = ""


@dataclass(frozen=True)
class Violation:
    rule: str
    level: Level
    urn: str
    message: str
    detail: str = ""  # the check's own words, without the resource's name
    kind: str = ""
    kind_one: str = ""
    fix: str = ""

    def as_json(self) -> dict[str, str]:
        return {"rule": self.rule, "level": self.level, "urn": self.urn, "message": self.message}


@dataclass(frozen=True)
class ViolationGroup:
    """The violations of one rule that share a kind (or a message) and a fix: one line in the plan."""

    rule: str
    level: Level
    violations: tuple[Violation, ...]

    @property
    def fix(self) -> str:
        return self.violations[0].fix

    @property
    def summary(self) -> str:
        first, count = self.violations[0], len(self.violations)
        if first.kind:
            text = f"{count} resource{'s' if count != 1 else ''} {first.kind if count != 1 else first.kind_one}"
        elif count == 1:
            text = first.message
        else:
            text = f"{count} resources: {first.detail}"
        return text + (f"; {first.fix}" if first.fix else "")

    def as_json(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "level": self.level,
            "count": len(self.violations),
            "summary": self.summary,
            "fix": self.fix or None,
            "urns": [v.urn for v in self.violations],
        }


def group_violations(violations: list[Violation]) -> list[ViolationGroup]:
    """One group per rule, level, kind (or message, when a finding has no kind) and fix, in first-seen order."""
    groups: dict[tuple[str, str, str, str], list[Violation]] = {}
    for v in violations:
        groups.setdefault((v.rule, v.level, v.kind or v.detail or v.message, v.fix), []).append(v)
    return [ViolationGroup(key[0], members[0].level, tuple(members)) for key, members in groups.items()]


Check = Callable[[Resource, Facts], Iterator[str | Issue]]


@dataclass(frozen=True)
class Rule:
    name: str
    description: str
    level: Level
    check: Check


def _find(value: Any, keys: set[str]) -> Iterator[Any]:
    """Every value stored under one of `keys`, at any depth of a props tree."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            if key in keys:
                yield item
            yield from _find(item, keys)
    elif isinstance(value, list):
        for item in value:
            yield from _find(item, keys)


def _truthy(value: Any) -> bool:
    return value is True or (isinstance(value, str) and value.lower() == "true")


def _is_login(res: Resource) -> bool:
    """The login node and its own NIC / address (logical names `<cluster>-login...`), never a GPU node."""
    return "-login" in res.name


def _no_public_ip(res: Resource, facts: Facts) -> Iterator[str]:
    if facts.public_ip:
        return
    if res.type == "gcp:container/cluster:Cluster":
        # GKE nodes get external IPs unless the cluster is private (node pools inherit it)
        if not _truthy((res.props.get("privateClusterConfig") or {}).get("enablePrivateNodes")):
            yield "gives its nodes external IPs (privateClusterConfig.enablePrivateNodes is not true)"
        return
    if res.type == "azure-native:containerservice:ManagedCluster":
        # the pools declared inline (the system pool) carry their own enableNodePublicIP
        if any(_truthy(p.get("enableNodePublicIP")) for p in res.props.get("agentPoolProfiles") or []):
            yield "assigns a public IP to nodes of an inline agent pool (enableNodePublicIP)"
        return
    if res.type not in NODE_TYPES | NIC_TYPES:
        return
    if res.type == "gcp:container/nodePool:NodePool" and (res.props.get("networkConfig") or {}).get(
        "enablePrivateNodes"
    ) in (False, "false"):
        yield "gives its nodes external IPs (networkConfig.enablePrivateNodes is false)"
    if facts.login_public_ip and _is_login(res):
        return
    if any(
        _truthy(v)
        for v in _find(
            res.props,
            # AKS agent pools: enableNodePublicIP; ACK node pools: scalingConfig.isBondEip (an EIP per node)
            {"associatePublicIpAddress", "mapPublicIpOnLaunch", "allocatePublicIp", "enableNodePublicIP", "isBondEip"},
        )
    ):
        yield "assigns a public IP to nodes"
    if any(v for v in _find(res.props, {"publicIPAddressConfiguration", "publicIPAddress", "accessConfigs"})):
        yield "attaches a public IP address to node network interfaces"
    for bandwidth in _find(res.props, {"internetMaxBandwidthOut"}):
        if isinstance(bandwidth, int | float) and bandwidth > 0:
            yield f"gives nodes public bandwidth (internetMaxBandwidthOut={bandwidth:g})"


def _open_sources(res: Resource) -> Iterator[Any]:
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
    elif (
        kind == "alicloud:ecs/securityGroupRule:SecurityGroupRule"
        and props.get("type") == "ingress"
        and props.get("policy", "accept") == "accept"
    ):
        yield from (props.get(k) for k in ("cidrIp", "ipv6CidrIp") if props.get(k))
    elif kind == "tencentcloud:Security/groupRuleSet:GroupRuleSet":
        for rule in props.get("ingresses") or []:
            if str(rule.get("action", "")).upper() == "ACCEPT":
                yield from (rule.get(k) for k in ("cidrBlock", "ipv6CidrBlock") if rule.get(k))


def wide_public(source: str) -> bool:
    """0.0.0.0/0 and its spellings, or any public range of /8 or wider (0.0.0.0/1 + 128.0.0.0/1 is open too)."""
    if source.lower() in OPEN_RANGES:
        return True
    try:
        net = ipaddress.ip_network(source, strict=False)
    except ValueError:
        return False
    return net.prefixlen <= (8 if net.version == 4 else 16) and not net.is_private


def _no_open_ingress(res: Resource, facts: Facts) -> Iterator[str | Issue]:
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
    for source in _open_sources(res):
        if isinstance(source, str) and wide_public(source):
            yield Issue(
                f"allows inbound traffic from {source}",
                f"allow inbound traffic from {source}",
                f"allows inbound traffic from {source}",
                f"remove {source} from {CONFIG}.network.sshCidrs",
            )


def _encrypted_disks(res: Resource, facts: Facts) -> Iterator[str]:
    # Azure managed disks and GCP persistent disks are always encrypted at rest with
    # platform-managed keys (server-side encryption cannot be turned off), so only AWS EBS
    # and Alibaba ESSD, where encryption is a per-disk choice, are checked; so AKS agent pools and GKE
    # node pools pass, EKS node groups through their launch template, ACK node pools by their own flags.
    props, kind = res.props, res.type
    if kind == "aws:ec2/launchTemplate:LaunchTemplate":
        for mapping in props.get("blockDeviceMappings") or []:
            ebs = mapping.get("ebs")
            if ebs is not None and not _truthy(ebs.get("encrypted")):
                yield f"EBS volume {mapping.get('deviceName')} is not encrypted"
    elif kind == "aws:ec2/instance:Instance":
        disks = [props.get("rootBlockDevice") or {}, *(props.get("ebsBlockDevices") or [])]
        if "launchTemplate" not in props or props.get("rootBlockDevice"):
            yield from ("an EBS volume is not encrypted" for d in disks if d and not _truthy(d.get("encrypted")))
    elif kind == "aws:ebs/volume:Volume" and not _truthy(props.get("encrypted")):
        yield "EBS volume is not encrypted"
    elif kind == "aws:eks/nodeGroup:NodeGroup" and not props.get("launchTemplate"):
        # without a launch template, EKS builds the nodes' volume itself (diskSize) and nothing here
        # asks for encryption: the nodes' disks are encrypted only if the account's EBS default is
        yield "node disks are not encrypted (no launch template with encrypted EBS volumes)"
    elif kind in (
        "alicloud:ecs/instance:Instance",
        "alicloud:ess/scalingConfiguration:ScalingConfiguration",
        "alicloud:cs/nodePool:NodePool",
    ):
        if not _truthy(props.get("systemDiskEncrypted")):
            yield "system disk is not encrypted"
        for disk in props.get("dataDisks") or []:
            if not _truthy(disk.get("encrypted")):
                yield f"data disk {disk.get('name') or disk.get('device') or ''} is not encrypted".replace("  ", " ")
    elif kind == "alicloud:ecs/ecsDisk:EcsDisk" and not _truthy(props.get("encrypted")):
        yield "disk is not encrypted"
    elif kind == "tencentcloud:Instance/instance:Instance":
        # tencentcloud-iac-pulumi 0.2.3 takes no system-disk encryption flag: data disks are checked
        for disk in props.get("dataDisks") or []:
            if not _truthy(disk.get("encrypt")):
                yield f"data disk {disk.get('dataDiskName') or ''} is not encrypted".replace("  ", " ")


def _node_login(res: Resource, facts: Facts) -> Iterator[str]:
    props, kind = res.props, res.type
    if kind in ("aws:ec2/launchTemplate:LaunchTemplate", "aws:ec2/instance:Instance"):
        if "launchTemplate" in props and kind == "aws:ec2/instance:Instance":
            return  # the template carries the metadata options
        if (props.get("metadataOptions") or {}).get("httpTokens") != "required":
            yield "IMDSv2 is not required (metadataOptions.httpTokens must be 'required')"
    elif kind in ("azure-native:compute:VirtualMachineScaleSet", "azure-native:compute:VirtualMachine"):
        if not any(v is True for v in _find(props, {"disablePasswordAuthentication"})):
            yield "password authentication is not disabled (linuxConfiguration.disablePasswordAuthentication)"
        if any(v for v in _find(props, {"adminPassword"})):
            yield "sets an admin password"
    elif kind in ("gcp:compute/instance:Instance", "gcp:compute/instanceTemplate:InstanceTemplate"):
        metadata = props.get("metadata") or {}
        if str(metadata.get("enable-oslogin", "")).upper() != "TRUE":
            yield "OS Login is not enabled (metadata enable-oslogin=TRUE)"
        if str(metadata.get("block-project-ssh-keys", "")).upper() != "TRUE":
            yield "project-wide SSH keys are not blocked (metadata block-project-ssh-keys=TRUE)"
    elif (
        kind in ("alicloud:ecs/instance:Instance", "alicloud:ess/scalingConfiguration:ScalingConfiguration")
        and (props.get("password") or props.get("kmsEncryptedPassword") or _truthy(props.get("passwordInherit")))
    ) or (kind == "tencentcloud:Instance/instance:Instance" and props.get("password")):
        yield "allows password login"


def _normal(key: str) -> str:
    return re.sub(r"[^a-z0-9]", "", key.lower())


def _tag_keys(res: Resource) -> set[str] | None:
    # GCP keeps key/value metadata in `labels`; its `tags` are network tags (a list of strings).
    # GKE: `labels` of a node pool are Kubernetes node labels; the GCP labels are `resourceLabels`
    # (the cluster's) and `nodeConfig.resourceLabels` (a pool's).
    if res.type == "gcp:container/cluster:Cluster":
        labels = res.props.get("resourceLabels")
        return {_normal(k) for k in labels} if isinstance(labels, Mapping) else None
    if res.type == "gcp:container/nodePool:NodePool":
        labels = (res.props.get("nodeConfig") or {}).get("resourceLabels")
        return {_normal(k) for k in labels} if isinstance(labels, Mapping) else None
    if res.type == "aws:eks/nodeGroup:NodeGroup":  # `labels` are Kubernetes node labels; AWS tags are `tags`
        tags = res.props.get("tags")
        return {_normal(k) for k in tags} if isinstance(tags, Mapping) else None
    labels = res.props.get("labels")
    if isinstance(labels, Mapping):
        return {_normal(k) for k in labels}
    tags = res.props.get("tags")
    if isinstance(tags, Mapping):
        return {_normal(k) for k in tags}
    if isinstance(tags, list) and all(isinstance(t, Mapping) for t in tags) and tags:
        return {_normal(t.get("key", "")) for t in tags}  # AWS Auto Scaling group: [{key, value, propagateAtLaunch}]
    return None


def _required_tags(res: Resource, facts: Facts) -> Iterator[str | Issue]:
    keys = _tag_keys(res)
    if keys is None:
        if res.type in NODE_TYPES:
            yield Issue("has no tags/labels", "have no tags/labels", "has no tags/labels")
        return
    # GCP label keys cannot hold ':' and are lowercase: compare normalised keys.
    missing = [tag for tag in REQUIRED_TAGS if _normal(tag) not in keys]
    if missing:
        names = ", ".join(missing)
        settable = [tag for tag in missing if tag not in OWNED_TAGS]
        fix = "set " + ", ".join(f"{CONFIG}.tags.{tag}" for tag in settable) if settable else ""
        yield Issue(f"is missing required tag(s): {names}", f"lack {names}", f"lacks {names}", fix)


def _is_spot(res: Resource) -> bool:
    props = res.props
    if any(v == "spot" for v in _find(props, {"marketType"})):
        return True
    policy = props.get("mixedInstancesPolicy") or {}
    dist = policy.get("instancesDistribution") or {}
    if policy and dist.get("onDemandPercentageAboveBaseCapacity", 100) < 100:
        return True
    if any(str(v).lower() == "spot" for v in _find(props, {"priority", "provisioningModel"})):
        return True
    if any(v is True for v in _find(props, {"preemptible"})):
        return True
    # EKS node groups: capacityType SPOT; AKS agent pools: scaleSetPriority Spot; GKE: nodeConfig.spot
    if any(str(v).lower() == "spot" for v in _find(props, {"capacityType", "scaleSetPriority"})):
        return True
    if res.type == "gcp:container/nodePool:NodePool" and _truthy((props.get("nodeConfig") or {}).get("spot")):
        return True
    if any(v == "SPOTPAID" for v in _find(props, {"instanceChargeType"})):
        return True
    return any(v not in (None, "", "NoSpot") for v in _find(props, {"spotStrategy"}))


def _spot_nodes(res: Resource, facts: Facts) -> Iterator[str | Issue]:
    if res.type not in NODE_TYPES or not _is_spot(res):
        return
    if not facts.allow_spot:
        yield Issue(
            "runs spot nodes, which this policy does not allow (spot-nodes.allowSpot=false)",
            "run spot nodes, which this policy does not allow (spot-nodes.allowSpot=false)",
            "runs spot nodes, which this policy does not allow (spot-nodes.allowSpot=false)",
            f"set {CONFIG}.spot to false",
        )
    elif not facts.spot:
        yield "runs spot nodes although the stack did not ask for spot"


def _cost_ceiling(res: Resource, facts: Facts) -> Iterator[str | Issue]:
    if res.type != CLUSTER_TYPE or facts.max_hourly_usd is None or facts.hourly_usd is None:
        return  # no price: the cost-ceiling-unchecked rule says so
    if facts.hourly_usd > facts.max_hourly_usd:
        yield Issue(
            f"costs about ${facts.hourly_usd:,.2f}/h, over the ceiling ${facts.max_hourly_usd:,.2f}/h",
            fix=f"lower {CONFIG}.maxNodes or raise gpu-cluster:maxHourlyUsd",
        )


def _cost_ceiling_unchecked(res: Resource, facts: Facts) -> Iterator[str | Issue]:
    """A ceiling that cannot be judged is said, never skipped silently (advisory by default)."""
    if res.type != CLUSTER_TYPE or facts.max_hourly_usd is None or facts.hourly_usd is not None:
        return
    yield Issue(
        f"has no reference price for {facts.instance_type or 'its instance type'}: "
        f"the cost ceiling ${facts.max_hourly_usd:,.2f}/h cannot be checked",
        fix="check the cloud's price for that type at maxNodes yourself",
    )


# Grants that make a node an administrator of the account / project / subscription: a stolen node
# credential must not be able to do everything. Per cloud, the built-in admin roles by their ids.
ADMIN_GRANTS = {
    "aws:iam/rolePolicyAttachment:RolePolicyAttachment": (
        "policyArn",
        {"arn:aws:iam::aws:policy/AdministratorAccess", "arn:aws:iam::aws:policy/IAMFullAccess"},
    ),
    "gcp:projects/iAMMember:IAMMember": ("role", {"roles/owner", "roles/editor", "roles/iam.securityAdmin"}),
    "azure-native:authorization:RoleAssignment": (
        "roleDefinitionId",
        {  # Azure built-in roles Owner, Contributor, User Access Administrator
            "8e3af657-a8ff-443c-a75c-2fe8c4bcb635",
            "b24988ac-6180-42a0-ab88-20f7382dd24c",
            "18d7d88d-d35e-4fb5-a5c3-7773c20a72d9",
        },
    ),
    "alicloud:ram/rolePolicyAttachment:RolePolicyAttachment": (
        "policyName",
        {"AdministratorAccess", "AliyunRAMFullAccess"},
    ),
    "tencentcloud:Cam/rolePolicyAttachmentByName:RolePolicyAttachmentByName": (
        "policyName",
        {"AdministratorAccess", "QcloudCamFullAccess"},
    ),
}
WILDCARD_POLICY_TYPES = {"aws:iam/rolePolicy:RolePolicy", "aws:iam/policy:Policy"}


def _wildcard_statements(document: Any) -> bool:
    """An IAM policy document (JSON text or a mapping) allowing every action on every resource."""
    if isinstance(document, str):
        try:
            document = json.loads(document)
        except ValueError:
            return False
    statements = document.get("Statement", []) if isinstance(document, Mapping) else []
    for st in statements if isinstance(statements, list) else [statements]:
        if not isinstance(st, Mapping) or st.get("Effect") != "Allow":
            continue
        actions = st.get("Action", [])
        resources = st.get("Resource", [])
        actions = [actions] if isinstance(actions, str) else actions
        resources = [resources] if isinstance(resources, str) else resources
        if "*" in actions and "*" in resources:
            return True
    return False


def _no_admin_on_nodes(res: Resource, facts: Facts) -> Iterator[str | Issue]:
    fix = f"grant the nodes only what they need in {CONFIG}.identity.policies"
    if res.type in ADMIN_GRANTS:
        key, admin = ADMIN_GRANTS[res.type]
        value = str(res.props.get(key) or "")
        if value in admin or value.rsplit("/", 1)[-1] in admin:
            yield Issue(
                f"grants the nodes {value}, an administrator role", "grant admin rights", "grants admin rights", fix
            )
    elif res.type in WILDCARD_POLICY_TYPES and _wildcard_statements(res.props.get("policy")):
        yield Issue('allows "Action": "*" on "Resource": "*"', "allow every action", "allows every action", fix)


@cache
def _kubernetes_data() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(KUBERNETES_FILE.read_text())["controlPlanes"]
    return data


@cache
def _pinned_charts() -> dict[tuple[str, str], str]:
    """(chart, repo) -> the pinned version, from the one charts file the clusters install from."""
    charts = yaml.safe_load(CHARTS_FILE.read_text())["charts"]
    return {(c["chart"], c["repo"]): str(c["version"]) for c in charts.values()}


@cache
def _fabric_workloads() -> dict[str, tuple[str, frozenset[str]]]:
    """The fabric plugins a cloud ships as raw workloads (not charts), by name: (namespace, their images).

    Read from `fabricWorkloads.daemonSets` of catalog/kubernetes/<cloud>.yaml, where each is pinned
    with its source (GKE's NCCL installers and device injector: no chart exists for them).
    """
    allowed: dict[str, tuple[str, frozenset[str]]] = {}
    for path in sorted(CHARTS_FILE.parent.glob("*.yaml")):
        block = (yaml.safe_load(path.read_text()) or {}).get("fabricWorkloads") or {}
        for name, entry in (block.get("daemonSets") or {}).items():
            images = {entry["image"]}
            if entry.get("hostSetup"):
                images.add(entry["hostSetup"]["image"])
            if not entry.get("daemon") and block.get("pause"):
                images.add(block["pause"])  # an installer ends on the pause container
            allowed[name] = (str(block.get("namespace", "")), frozenset(images))
    return allowed


def _is_fabric_workload(res: Resource) -> bool:
    meta = res.props.get("metadata") or {}
    known = _fabric_workloads().get(str(meta.get("name", "")))
    if known is None or str(meta.get("namespace", "")) != known[0]:
        return False
    images = {str(i) for i in _find(res.props.get("spec") or {}, {"image"})}
    return bool(images) and images <= known[1]


def _at(props: Mapping[str, Any], path: str) -> Any:
    """The value at a dotted path of a props tree ('' is the props themselves), None where absent."""
    value: Any = props
    for key in filter(None, path.split(".")):
        value = value.get(key) if isinstance(value, Mapping) else None
    return value


def _outside(cidrs: list[Any], allowed: tuple[str, ...]) -> list[str]:
    """The ranges not inside any allowed range, and any wide public one whatever the stack allows."""
    nets = [ipaddress.ip_network(a, strict=False) for a in allowed]
    out = []
    for cidr in cidrs:
        text = str(cidr)
        try:
            net = ipaddress.ip_network(text, strict=False)
        except ValueError:
            out.append(text)
            continue
        if wide_public(text) or not any(net.version == a.version and net.subnet_of(a) for a in nets):  # type: ignore[arg-type]
            out.append(text)
    return out


def endpoint_state(res: Resource) -> tuple[bool, list[Any] | None, list[str]] | None:
    """(public?, the CIDRs a public endpoint admits (None: the cloud cannot say), other findings)."""
    props, kind = res.props, res.type
    if kind == "aws:eks/cluster:Cluster":
        vpc = props.get("vpcConfig") or {}
        # pulumi_aws ClusterVpcConfigArgs: endpointPublicAccess "Default is `true`", endpointPrivateAccess
        # "Default is `false`"; publicAccessCidrs unset: "EKS defaults this to a list with `0.0.0.0/0`"
        public = vpc.get("endpointPublicAccess") not in (False, "false")
        found = (
            []
            if _truthy(vpc.get("endpointPrivateAccess"))
            else ["has no private API endpoint (vpcConfig.endpointPrivateAccess)"]
        )
        return public, list(vpc.get("publicAccessCidrs") or ["0.0.0.0/0"]), found
    if kind == "gcp:container/cluster:Cluster":
        private = props.get("privateClusterConfig") or {}
        endpoints = props.get("controlPlaneEndpointsConfig") or {}
        ip_on = (endpoints.get("ipEndpointsConfig") or {}).get("enabled") not in (False, "false")
        dns_public = _truthy((endpoints.get("dnsEndpointConfig") or {}).get("allowExternalTraffic"))
        public = (ip_on and not _truthy(private.get("enablePrivateEndpoint"))) or dns_public
        networks = props.get("masterAuthorizedNetworksConfig") or {}
        found = []
        if _truthy(networks.get("gcpPublicCidrsAccessEnabled")):
            found.append(
                "admits every Google Cloud public IP (masterAuthorizedNetworksConfig.gcpPublicCidrsAccessEnabled)"
            )
        # without authorized networks, a public GKE endpoint answers from any address
        cidrs = [b.get("cidrBlock") for b in networks.get("cidrBlocks") or []] or ["0.0.0.0/0"]
        return public, cidrs, found
    if kind == "azure-native:containerservice:ManagedCluster":
        access = props.get("apiServerAccessProfile") or {}
        public = not _truthy(access.get("enablePrivateCluster"))
        return public, list(access.get("authorizedIPRanges") or ["0.0.0.0/0"]), []
    if kind == "alicloud:cs/managedKubernetes:ManagedKubernetes":
        # slbInternetEnabled: "Whether to create internet load balancer for API Server. Default to true."
        lbs = (props.get("controlPlaneEndpointsConfig") or {}).get("loadBalancersConfigs") or []
        public = props.get("slbInternetEnabled") not in (False, "false") or any(
            str(lb.get("endpointType", "")).lower() == "public" for lb in lbs
        )
        # the allow-list of an ACK public endpoint is an ACL on its load balancer, not a cluster input
        return public, None, []
    return None


def control_plane_service(kind: str) -> str | None:
    """EKS, GKE, AKS or ACK for a managed control plane's type token, else None."""
    entry = _kubernetes_data().get(kind)
    return None if entry is None else str(entry["service"])


def _private_endpoint(res: Resource, facts: Facts) -> Iterator[str | Issue]:
    state = endpoint_state(res)
    if state is None:
        return
    public, cidrs, found = state
    yield from found
    if public and not facts.k8s_public_endpoint:
        yield Issue(
            "exposes the Kubernetes API server on the internet although kubernetes.publicEndpoint is false",
            "expose the Kubernetes API server on the internet",
            "exposes the Kubernetes API server on the internet",
            f"keep the endpoint private, or set {CONFIG}.kubernetes.publicEndpoint and publicCidrs",
        )
    elif public and cidrs is not None:
        outside = _outside(cidrs, facts.k8s_public_cidrs)
        if outside:
            yield Issue(
                f"admits {', '.join(outside)} to the public API server, outside kubernetes.publicCidrs",
                fix=f"list the ranges in {CONFIG}.kubernetes.publicCidrs",
            )


def _secrets_encryption(res: Resource, facts: Facts) -> Iterator[str | Issue]:
    entry = _kubernetes_data().get(res.type)
    if entry is None:
        return
    rule = entry["secrets"]
    block = _at(res.props, rule["path"])
    if isinstance(block, list):  # a block is one mapping in the SDK, a list of one in some serialisations
        block = block[0] if block else None
    fix = f"set {rule['fix']} (see components/policy/kubernetes.yaml)"
    message = f"does not envelope-encrypt Kubernetes Secrets with a key ({entry['service']})"
    issue = Issue(
        message, "do not envelope-encrypt Kubernetes Secrets", "does not envelope-encrypt Kubernetes Secrets", fix
    )
    if not isinstance(block, Mapping) or not block:
        since = rule.get("defaultFromVersion")
        version = str(res.props.get("version") or "")
        # no version: the service's newest, which is later than any default's start
        if since is not None and (not version or _version(version) >= _version(since)):
            return
        yield issue
        return
    if not _secrets_on(block, rule):
        yield issue


def _secrets_on(block: Mapping[str, Any], rule: Mapping[str, Any]) -> bool:
    """Every condition the data names holds: the resources list, the state, the switch, the key."""
    if "resourcesMust" in rule and rule["resourcesMust"] not in (block.get(rule["resourcesKey"]) or []):
        return False
    if "stateMust" in rule and str(block.get(rule["stateKey"], "")).upper() != rule["stateMust"]:
        return False
    if "enabledKey" in rule and not _truthy(block.get(rule["enabledKey"])):
        return False
    if "disabledKey" in rule and _truthy(block.get(rule["disabledKey"])):
        return False
    return bool(_at(block, rule["keyPath"]))


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", text)[:2])


PRIVILEGED_KEYS = {"privileged", "hostPID", "hostIPC", "hostNetwork", "allowPrivilegeEscalation"}


def _allowed_workloads(res: Resource, facts: Facts) -> Iterator[str | Issue]:
    if res.type == RELEASE_TYPE:
        chart = str(res.props.get("chart") or "")
        repo = str((res.props.get("repositoryOpts") or {}).get("repo") or "")
        version = str(res.props.get("version") or "")
        pinned = _pinned_charts().get((chart, repo))
        if pinned is None:
            yield Issue(
                f"installs chart {chart or '?'} from {repo or 'no repository'}, not one of the GPU/fabric charts",
                "install a chart that is not one of the GPU/fabric charts",
                "installs a chart that is not one of the GPU/fabric charts",
                "install only the charts of components/catalog/kubernetes/charts.yaml",
            )
        elif version != pinned:
            yield Issue(
                f"installs chart {chart} version {version or 'unpinned'}, not the pinned {pinned}",
                fix="install the version pinned in components/catalog/kubernetes/charts.yaml",
            )
    elif res.type in K8S_UNCHECKABLE_TYPES:
        yield Issue(
            "installs manifests rendered out of the policy's sight",
            "install manifests rendered out of the policy's sight",
            "installs manifests rendered out of the policy's sight",
            "install a pinned chart of components/catalog/kubernetes/charts.yaml as a helm.v3.Release",
        )
    elif res.type.startswith("kubernetes:") and not res.type.startswith("kubernetes:helm.sh/"):
        keys = sorted({k for k in PRIVILEGED_KEYS for v in _find(res.props, {k}) if _truthy(v)})
        added = [c for caps in _find(res.props, {"add"}) if isinstance(caps, list) for c in caps]
        keys += [f"capabilities {c}" for c in added if str(c).upper() in ("SYS_ADMIN", "ALL", "NET_ADMIN")]
        if keys and not _is_fabric_workload(res):
            yield Issue(
                f"runs a privileged workload ({', '.join(keys)}) that is not a GPU/fabric plugin",
                "run a privileged workload that is not a GPU/fabric plugin",
                "runs a privileged workload that is not a GPU/fabric plugin",
                "ship it as a chart of components/catalog/kubernetes/charts.yaml, or as a pinned "
                "fabricWorkloads entry of catalog/kubernetes/<cloud>.yaml",
            )


# --- Rules a compliance profile turns on (default level: disabled, so stacks without a profile plan as before) ---


# Where each cloud's disks and filesystems name a customer-managed key (the provider SDKs' input names).
def _key_missing(res: Resource) -> Iterator[str]:
    props, kind = res.props, res.type
    if kind == "aws:ec2/launchTemplate:LaunchTemplate":
        for mapping in props.get("blockDeviceMappings") or []:
            ebs = mapping.get("ebs")
            if ebs is not None and not ebs.get("kmsKeyId"):
                yield f"EBS volume {mapping.get('deviceName')} has no kmsKeyId"
    elif kind == "aws:ec2/instance:Instance" and ("launchTemplate" not in props or props.get("rootBlockDevice")):
        for disk in [props.get("rootBlockDevice") or {}, *(props.get("ebsBlockDevices") or [])]:
            if not disk.get("kmsKeyId"):
                yield "an EBS volume has no kmsKeyId"
    elif kind in (
        "aws:ebs/volume:Volume",
        "aws:efs/fileSystem:FileSystem",
        "aws:fsx/lustreFileSystem:LustreFileSystem",
    ):
        if not props.get("kmsKeyId"):
            yield "has no kmsKeyId (an AWS managed key)"
    elif kind == "aws:eks/nodeGroup:NodeGroup" and not props.get("launchTemplate"):
        yield "node disks take the account's default key (no launch template naming a kmsKeyId)"
    elif kind == "gcp:compute/instanceTemplate:InstanceTemplate":
        for i, disk in enumerate(props.get("disks") or []):
            # local SSD cannot take a customer-managed key (catalog/encryption/gcp.yaml notes.localSsd)
            if str(disk.get("type", "")).upper() != "SCRATCH" and not (disk.get("diskEncryptionKey") or {}).get(
                "kmsKeySelfLink"
            ):
                yield f"disk {i} has no diskEncryptionKey.kmsKeySelfLink"
    elif kind == "gcp:compute/instance:Instance":
        if not (props.get("bootDisk") or {}).get("kmsKeySelfLink"):
            yield "boot disk has no kmsKeySelfLink"
    elif kind == "gcp:filestore/instance:Instance" and not props.get("kmsKeyName"):
        yield "has no kmsKeyName (a Google-managed key)"
    elif kind == "gcp:lustre/instance:Instance" and not props.get("kmsKey"):
        yield "has no kmsKey (a Google-managed key)"
    elif kind == "gcp:container/nodePool:NodePool" and not (props.get("nodeConfig") or {}).get("bootDiskKmsKey"):
        yield "node boot disks have no nodeConfig.bootDiskKmsKey"
    elif kind in ("azure-native:compute:VirtualMachineScaleSet", "azure-native:compute:VirtualMachine"):
        storage = (props.get("virtualMachineProfile") or props).get("storageProfile") or {}
        disks = [storage.get("osDisk") or {}, *(storage.get("dataDisks") or [])]
        if any(not ((d.get("managedDisk") or {}).get("diskEncryptionSet") or {}).get("id") for d in disks):
            yield "a managed disk has no diskEncryptionSet (a platform-managed key)"
    elif kind == "azure-native:containerservice:ManagedCluster" and not props.get("diskEncryptionSetID"):
        yield "node disks have no diskEncryptionSetID (a platform-managed key)"
    elif kind == "azure-native:storagecache:AmlFilesystem" and not (props.get("encryptionSettings") or {}).get(
        "keyEncryptionKey"
    ):
        yield "has no encryptionSettings.keyEncryptionKey (a platform-managed key)"
    elif (
        kind == "azure-native:storage:StorageAccount"
        and str((props.get("encryption") or {}).get("keySource", "Microsoft.Storage")) != "Microsoft.Keyvault"
    ):
        yield "encrypts with a Microsoft-managed key (encryption.keySource is not Microsoft.Keyvault)"
    elif kind in ("alicloud:ecs/instance:Instance", "alicloud:ess/scalingConfiguration:ScalingConfiguration"):
        if not props.get("systemDiskKmsKeyId"):
            yield "system disk has no systemDiskKmsKeyId"
        yield from ("a data disk has no kmsKeyId" for d in props.get("dataDisks") or [] if not d.get("kmsKeyId"))
    elif kind == "alicloud:cs/nodePool:NodePool":
        if not props.get("systemDiskKmsKey"):
            yield "system disk has no systemDiskKmsKey"
        yield from ("a data disk has no kmsKeyId" for d in props.get("dataDisks") or [] if not d.get("kmsKeyId"))
    elif kind == "alicloud:nas/fileSystem:FileSystem" and props.get("encryptType") != 2:
        yield "is not encrypted with a KMS key of the account (encryptType is not 2)"
    elif kind == "tencentcloud:Instance/instance:Instance":
        # capabilities/tencentcloud.yaml encryption: provider only (the toolkit takes no Tencent KMS key)
        yield "disks use Tencent Cloud's managed keys (the toolkit takes encryption.key provider only here)"


def _customer_managed_keys(res: Resource, facts: Facts) -> Iterator[str | Issue]:
    # Tencent Cloud: no customer-managed key to set (capabilities: encryption provider only)
    fix = "" if res.type.startswith("tencentcloud:") else f"set {CONFIG}.encryption.key auto"
    for message in _key_missing(res):
        yield Issue(message, "use a provider-managed key", "uses a provider-managed key", fix)


def _metadata_protection(res: Resource, facts: Facts) -> Iterator[str | Issue]:
    """The node's credentials in the metadata service, where a setting protects them beyond node-login's IMDSv2."""
    props, kind = res.props, res.type
    if kind in ("alicloud:ecs/instance:Instance",) and props.get("httpTokens") != "required":
        # pulumi-alicloud ecs.Instance http_tokens: "required" is the metadata security-hardening (token) mode
        yield "metadata access is not in security-hardening mode (httpTokens must be 'required')"
    elif kind == "gcp:container/nodePool:NodePool":
        mode = ((props.get("nodeConfig") or {}).get("workloadMetadataConfig") or {}).get("mode")
        if mode != "GKE_METADATA":  # Workload Identity's metadata server hides the node's service account
            yield "pods can read the node's metadata (nodeConfig.workloadMetadataConfig.mode is not GKE_METADATA)"


def _in_transit(res: Resource, facts: Facts) -> Iterator[str | Issue]:
    """TLS 1.2 or later where the resource takes a minimum (the endpoints the nodes reach beyond themselves)."""
    props, kind = res.props, res.type
    if kind == "azure-native:storage:StorageAccount" and props.get("minimumTlsVersion") not in ("TLS1_2", "TLS1_3"):
        yield f"accepts TLS below 1.2 (minimumTlsVersion {props.get('minimumTlsVersion')!r})"
    if kind in facts.plain_transit:
        yield "accepts NFS without TLS: no file system policy denies requests where aws:SecureTransport is false"


# What holds data that outlives a node: the shared filesystems (storage.shared). The keys of encryption.key auto
# protect themselves (their cloud packages); keys of a control plane's or a Slurm secret go with what they encrypt.
DATA_TYPES = {
    "aws:efs/fileSystem:FileSystem",
    "aws:fsx/lustreFileSystem:LustreFileSystem",
    "azure-native:storage:FileShare",
    "azure-native:storagecache:AmlFilesystem",
    "gcp:filestore/instance:Instance",
    "gcp:lustre/instance:Instance",
    "alicloud:nas/fileSystem:FileSystem",
}


def _deletion_protection(res: Resource, facts: Facts) -> Iterator[str | Issue]:
    if res.type in DATA_TYPES and not res.protect:
        yield Issue(
            "is deleted with the stack (not protected)",
            "are deleted with the stack (not protected)",
            "is deleted with the stack (not protected)",
            f"set {CONFIG}.storage.shared.retain true",
        )


RULES: tuple[Rule, ...] = (
    Rule(
        "no-public-ip", "GPU nodes get no public IP unless the stack sets network.publicIp", "mandatory", _no_public_ip
    ),
    Rule(
        "no-open-ingress",
        "No security group / NSG / firewall rule admits 0.0.0.0/0 or ::/0 inbound",
        "mandatory",
        _no_open_ingress,
    ),
    Rule(
        "encrypted-disks",
        "Every disk is encrypted (EBS, ESSD, EKS node groups through a launch template, ACK node pools; "
        "Azure and GCP disks always are)",
        "mandatory",
        _encrypted_disks,
    ),
    Rule(
        "node-login",
        "AWS IMDSv2 required; Azure password auth disabled; GCP OS Login on and project SSH keys "
        "blocked; Alibaba no password login",
        "mandatory",
        _node_login,
    ),
    Rule(
        "no-admin-on-nodes",
        "The nodes' identity holds no administrator role and no policy allowing every action on every resource",
        "mandatory",
        _no_admin_on_nodes,
    ),
    Rule("required-tags", f"Taggable resources carry the tags {', '.join(REQUIRED_TAGS)}", "mandatory", _required_tags),
    Rule(
        "spot-nodes",
        "Spot nodes only where the stack asks for them and the policy allows them",
        "mandatory",
        _spot_nodes,
    ),
    Rule(
        "kubernetes-private-endpoint",
        "The Kubernetes API server has a private endpoint, and no public one unless the stack sets "
        "kubernetes.publicEndpoint (then only from kubernetes.publicCidrs)",
        "mandatory",
        _private_endpoint,
    ),
    Rule(
        "kubernetes-secrets-encryption",
        "Kubernetes Secrets are envelope-encrypted with a key before etcd (EKS from 1.28 by default; GKE, AKS, "
        "ACK with a KMS key)",
        "mandatory",
        _secrets_encryption,
    ),
    Rule(
        "kubernetes-workloads",
        "In-cluster software is only the pinned GPU/fabric charts (helm.v3.Release of charts.yaml); no "
        "privileged workload but the clouds' pinned fabric plugins (fabricWorkloads)",
        "mandatory",
        _allowed_workloads,
    ),
    Rule(
        "cost-ceiling",
        "The cluster's reference hourly price stays under gpu-cluster:maxHourlyUsd",
        "mandatory",
        _cost_ceiling,
    ),
    Rule(
        "cost-ceiling-unchecked",
        "A cost ceiling is set but the instance type has no reference price to check it against",
        "advisory",
        _cost_ceiling_unchecked,
    ),
    Rule(
        "customer-managed-keys",
        "Every disk and filesystem is encrypted with a customer-managed key (encryption.key auto or a key id)",
        "disabled",
        _customer_managed_keys,
    ),
    Rule(
        "metadata-protection",
        "The node's credentials in the metadata service: Alibaba ECS in security-hardening mode, GKE pools behind "
        "the GKE metadata server (AWS IMDSv2: node-login)",
        "disabled",
        _metadata_protection,
    ),
    Rule(
        "in-transit",
        "Endpoints that take a minimum TLS version require 1.2 or later (Azure storage accounts)",
        "disabled",
        _in_transit,
    ),
    Rule(
        "deletion-protection",
        "Shared filesystems (storage.shared) are protected from deletion with the stack (retain)",
        "disabled",
        _deletion_protection,
    ),
)
PROFILE_ONLY = {"customer-managed-keys", "metadata-protection", "in-transit", "deletion-protection"}
PROFILES_FILE = _HERE / "profiles.yaml"
PROFILES = ("cis", "mlps3")


@cache
def _profiles() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(PROFILES_FILE.read_text())
    return loaded


def profile_levels(profile: str) -> dict[str, Level]:
    """The levels a profile gives its rules (none: no override)."""
    if profile == "none":
        return {}
    return {name: entry["level"] for name, entry in _profiles()["profiles"][profile]["rules"].items()}


def profile_variants(profile: str) -> dict[str, Level]:
    """The rules to which a profile gives a level other than the rule's default, with that level."""
    defaults = {rule.name: rule.level for rule in RULES}
    return {name: level for name, level in profile_levels(profile).items() if level != defaults[name]}


def variant_levels() -> dict[str, set[Level]]:
    """Per rule, every level a profile gives it beyond its default (the pack registers a policy for each)."""
    found: dict[str, set[Level]] = {}
    for profile in PROFILES:
        for name, level in profile_variants(profile).items():
            found.setdefault(name, set()).add(level)
    return found


def policy_names() -> set[str]:
    """The pack's policies: one per rule (but the profile-only ones), and `<rule>-<level>` per level a profile gives a
    rule beyond its default."""
    variants = {f"{name}-{level}" for name, levels in variant_levels().items() for level in levels}
    return {rule.name for rule in RULES if rule.name not in PROFILE_ONLY} | variants


@dataclass(frozen=True)
class ProfileRow:
    """One rule of a profile on one stack: the control it serves and what the stack's resources gave."""

    rule: str
    level: Level
    control: str | None  # None: no control of the benchmark asks for it (the toolkit's baseline)
    findings: int

    @property
    def result(self) -> str:
        if self.level == "disabled":
            return "not checked (disabled by the policy config)"
        if not self.findings:
            return "pass"
        return "fail" if self.level == "mandatory" else f"advisory ({self.findings})"

    def as_json(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "level": self.level,
            "control": self.control,
            "result": self.result,
            "findings": self.findings,
        }


def benchmark(profile: str, cloud: str) -> str | None:
    entry = _profiles()["benchmarks"][profile]
    return entry.get(cloud) if isinstance(entry, Mapping) else entry


def profile_rows(
    profile: str, cloud: str, violations: list[Violation], config: Mapping[str, Any] | None = None
) -> list[ProfileRow]:
    """The profile's rules in its order, each with its control on this cloud, the level it ran at (a policy config
    may still change the profile's) and the violations found."""
    levels = rule_levels(config or {}, profile)
    rows = []
    for name, entry in _profiles()["profiles"][profile]["rules"].items():
        control = entry["control"] if "control" in entry else (entry.get("controls") or {}).get(cloud)
        found = sum(1 for v in violations if v.rule == name)
        rows.append(ProfileRow(name, levels[name], control, found))
    return rows


class PolicyConfigError(ValueError):
    """Bad policy config; the message names the key."""


def rule_levels(config: Mapping[str, Any], profile: str = "none") -> dict[str, Level]:
    """Enforcement level per rule, as the engine sets the pack's: the rule's default, then `all`, then the rule's
    own entry. A rule the stack's profile gives another level L is the pack's `<rule>-<L>` policy: L, then `all`,
    then that policy's entry. A rule only profiles use (PROFILE_ONLY) has no policy of its own in the pack: without
    a profile only its own entry turns it on here (`all` does not)."""
    names = {rule.name for rule in RULES} | policy_names()
    for key in config:
        if key != "all" and key not in names:
            raise PolicyConfigError(f"{key}: unknown policy; known: all, {', '.join(sorted(names))}")
    levels: dict[str, Level] = {}
    variants = profile_variants(profile)
    for rule in RULES:
        level: Any = variants.get(rule.name, rule.level)
        if rule.name in variants:
            keys: tuple[str, ...] = ("all", f"{rule.name}-{variants[rule.name]}")
        elif rule.name in PROFILE_ONLY:
            keys = (rule.name,)
        else:
            keys = ("all", rule.name)
        for key in keys:
            entry = config.get(key)
            if isinstance(entry, Mapping):
                entry = entry.get("enforcementLevel")
            if entry is not None:
                if entry not in LEVELS:
                    raise PolicyConfigError(f"{key}: enforcement level {entry!r}; allowed: {', '.join(LEVELS)}")
                level = entry
        levels[rule.name] = level
    return levels


def _settings(config: Mapping[str, Any], rule: str) -> Mapping[str, Any]:
    entry = config.get(rule)
    return entry if isinstance(entry, Mapping) else {}


def facts_from(resources: list[Resource], config: Mapping[str, Any]) -> Facts:
    cluster: Mapping[str, Any] = next(
        (r.props.get("stackFacts") or {} for r in resources if r.type == CLUSTER_TYPE), {}
    )
    spot_cfg = _settings(config, "spot-nodes")
    # the ceiling: the policy's own setting (the pack hands each rule only its own config), else the stack's
    cost_cfg = {**_settings(config, "cost-ceiling-unchecked"), **_settings(config, "cost-ceiling")}
    ceiling = cost_cfg.get("maxHourlyUsd", cluster.get("maxHourlyUsd"))
    from .transit import unenforced  # transit reads this module's Resource

    return Facts(
        public_ip=bool(cluster.get("publicIp", False)),
        spot=bool(cluster.get("spot", False)),
        instance_type=cluster.get("instanceType"),
        hourly_usd=cluster.get("hourlyUsdAtMaxNodes", cluster.get("hourlyUsd")),
        max_hourly_usd=float(ceiling) if ceiling is not None else None,
        allow_spot=bool(spot_cfg.get("allowSpot", True)),
        login_public_ip=bool(cluster.get("loginPublicIp", False)),
        k8s_public_endpoint=bool(cluster.get("kubernetesPublicEndpoint", False)),
        k8s_public_cidrs=tuple(str(c) for c in cluster.get("kubernetesPublicCidrs") or ()),
        cloud=cluster.get("cloud"),
        compliance=str(cluster.get("compliance", "none")),
        plain_transit=unenforced(resources),
    )


def check_rule(rule: Rule, resources: list[Resource], facts: Facts, level: Level) -> list[Violation]:
    violations = []
    for res in resources:
        for found in rule.check(res, facts):
            issue = found if isinstance(found, Issue) else Issue(found)
            violations.append(
                Violation(
                    rule.name,
                    level,
                    res.urn,
                    f"{res.name} ({res.type}) {issue.message}",
                    issue.message,
                    issue.kind,
                    issue.kind_one,
                    issue.fix,
                )
            )
    return violations


def evaluate(resources: list[Resource], config: Mapping[str, Any] | None = None) -> list[Violation]:
    """All violations of the enabled rules, in rule order, then resource order."""
    config = config or {}
    facts = facts_from(resources, config)
    levels = rule_levels(config, facts.compliance)
    return [
        violation
        for rule in RULES
        if levels[rule.name] != "disabled"
        for violation in check_rule(rule, resources, facts, levels[rule.name])
    ]
