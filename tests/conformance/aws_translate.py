"""Registered AWS inputs -> the API requests the Terraform AWS provider makes (the translators of `conformance.aws`).

`TF` is hashicorp/terraform-provider-aws `internal/service/`; each translator names the create function it follows.
Values known only at deploy stay placeholders (`aws_api.is_unknown`), except what this module can say in the form AWS
gives it (`known`): Pulumi's autonames, the invoke answers of the mocks (account id, partition, zones), and an image id.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .aws_api import Refusal, Request

TF = "terraform-provider-aws internal/service/"
BRIDGE = "pulumi-terraform-bridge pkg/tfbridge/info/autonaming.go ComputeAutoNameDefault"
RANDOM = "a1b2c3d"  # the 7 random hex characters of a Pulumi autoname (Randlen 7)

# What the mocks' invoke answers are at deploy, in the form AWS gives them (components/plan/mocks/aws.yaml).
_KNOWN: tuple[tuple[re.Pattern[str], Callable[[re.Match[str]], str]], ...] = (
    (re.compile(r"<account id>"), lambda m: "123456789012"),
    (re.compile(r"<partition of [^<>]+>"), lambda m: "aws"),
    (re.compile(r"<dns suffix of [^<>]+>"), lambda m: "amazonaws.com"),
    (re.compile(r"<first available zone in ([^<>]+)>"), lambda m: f"{m.group(1)}a"),
    (re.compile(r"<second available zone in ([^<>]+)>"), lambda m: f"{m.group(1)}b"),
    (re.compile(r"<iam role arn the caller session was issued by>"), lambda m: "arn:aws:iam::123456789012:role/deploy"),
    # an SSM image parameter holds an AMI id (ec2 RegisterImage: ami- and 17 hex)
    (re.compile(r"<resolved at deploy: ssm:[^<>]+>"), lambda m: "ami-0123456789abcdef0"),
    # a pinned release looked up by name (aws.ec2.get_ami) is an AMI id too
    (re.compile(r"<resolved at deploy: ami [^<>]+>"), lambda m: "ami-0123456789abcdef0"),
    (re.compile(r"<autoname:([^<>]+)>"), lambda m: f"{m.group(1)}-{RANDOM}"),
)


def known(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: known(v) for k, v in value.items()}
    if isinstance(value, list):
        return [known(v) for v in value]
    if isinstance(value, str) and "<" in value:
        for pattern, replace in _KNOWN:
            value = pattern.sub(replace, value)
    return value


def _prune(value: Any) -> Any:
    """What the SDK serialises: unset (None) members are left out."""
    if isinstance(value, dict):
        return {k: _prune(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_prune(v) for v in value]
    return value


def _bool(value: Any) -> bool | None:
    """Terraform's tri-state string booleans ("true"/"false"/""): `nullable.Bool(...).ValueBool()`."""
    if value is None or value == "":
        return None
    return value if isinstance(value, bool) else str(value).lower() == "true"


class Inputs:
    """A resource's registered inputs; what a translator reads (or skips, with a reason) is recorded."""

    def __init__(self, data: dict[str, Any], path: str = "") -> None:
        self._data = data
        self._path = path
        self._read: set[str] = set()
        self._children: list[Inputs] = []

    def get(self, key: str, default: Any = None) -> Any:
        self._read.add(key)
        value = self._data.get(key)
        return default if value is None else known(value)

    def obj(self, key: str) -> Inputs | None:
        self._read.add(key)
        value = self._data.get(key)
        if not isinstance(value, dict):
            return None
        child = Inputs(value, f"{self._path}{key}.")
        self._children.append(child)
        return child

    def objs(self, key: str) -> list[Inputs]:
        self._read.add(key)
        children = [Inputs(v, f"{self._path}{key}[{i}].") for i, v in enumerate(self._data.get(key) or [])]
        self._children += children
        return children

    def skip(self, *keys: str, reason: str) -> None:
        assert reason
        self._read.update(keys)

    def unread(self) -> list[str]:
        own = [f"{self._path}{k}" for k in self._data if k not in self._read]
        return own + [p for child in self._children for p in child.unread()]


@dataclass
class Translated:
    requests: list[Request] = field(default_factory=list)
    problems: list[Refusal] = field(default_factory=list)  # refused before any request (a Pulumi autoname)
    unread: list[str] = field(default_factory=list)


class Resource:
    def __init__(self, resource: dict[str, Any]) -> None:
        self.urn: str = resource["urn"]
        self.name: str = resource["name"]
        self.inputs = Inputs(resource["inputs"])
        self.out = Translated()

    @property
    def id(self) -> str:
        return f"<id of {self.name}>"

    def physical(self, key: str = "name", maxlen: int = 255) -> str:
        """The input `key`, or the name Pulumi generates for it: `<logical name>-<7 hex>`, at most `maxlen`."""
        given = self.inputs.get(key)
        if given is not None:
            return str(given)
        name = f"{self.name}-{RANDOM}"
        if len(name) > maxlen:
            problem = f"{name!r} has {len(name)} characters: the autoname is refused above {maxlen}"
            self.out.problems.append(Refusal(self.urn, "pulumi", "autoname", key, problem, BRIDGE))
        return name

    def call(self, service: str, operation: str, params: dict[str, Any], source: str, phase: str = "create") -> None:
        self.out.requests.append(Request(service, operation, _prune(params), self.urn, TF + source, phase))


TRANSLATORS: dict[str, Callable[[dict[str, Any]], Translated]] = {}


def translates(token: str) -> Callable[[Callable[[Resource], None]], Callable[[Resource], None]]:
    def register(fn: Callable[[Resource], None]) -> Callable[[Resource], None]:
        def run(resource: dict[str, Any]) -> Translated:
            res = Resource(resource)
            fn(res)
            res.out.unread = res.inputs.unread()
            return res.out

        TRANSLATORS[token] = run
        return fn

    return register


def tag_list(tags: dict[str, str] | None, key: str = "Key", value: str = "Value") -> list[dict[str, str]] | None:
    """`getTagsIn(ctx)`: the resource's tags (no provider default tags in these stacks) as the service's list."""
    return [{key: k, value: v} for k, v in tags.items()] if tags else None


def tag_specs(resource_type: str, tags: dict[str, str] | None) -> list[dict[str, Any]] | None:
    """`getTagSpecificationsIn(ctx, resourceType)` (TF ec2/tags.go): nil without tags."""
    return [{"ResourceType": resource_type, "Tags": tag_list(tags)}] if tags else None


# ---------------------------------------------------------------------------------------------------------------
# EC2: network


@translates("aws:ec2/vpc:Vpc")
def _vpc(r: Resource) -> None:
    i = r.inputs
    params = {"CidrBlock": i.get("cidrBlock"), "InstanceTenancy": i.get("instanceTenancy")}
    r.call(
        "ec2",
        "CreateVpc",
        {**params, "TagSpecifications": tag_specs("vpc", i.get("tags"))},
        "ec2/vpc_.go resourceVPCCreate",
    )
    for key, attribute in (("enableDnsHostnames", "EnableDnsHostnames"), ("enableDnsSupport", "EnableDnsSupport")):
        if (value := i.get(key)) is not None:  # one attribute per call (ModifyVpcAttribute)
            r.call(
                "ec2",
                "ModifyVpcAttribute",
                {"VpcId": r.id, attribute: {"Value": value}},
                "ec2/vpc_.go resourceVPCCreate (modifyVPCDNSHostnames, modifyVPCDNSSupport)",
            )


@translates("aws:ec2/subnet:Subnet")
def _subnet(r: Resource) -> None:
    i = r.inputs
    params = {"AvailabilityZone": i.get("availabilityZone"), "CidrBlock": i.get("cidrBlock"), "VpcId": i.get("vpcId")}
    r.call(
        "ec2",
        "CreateSubnet",
        {**params, "TagSpecifications": tag_specs("subnet", i.get("tags"))},
        "ec2/vpc_subnet.go resourceSubnetCreate",
    )
    if i.get("mapPublicIpOnLaunch"):  # only when true (modifySubnetAttributesOnCreate)
        r.call(
            "ec2",
            "ModifySubnetAttribute",
            {"SubnetId": r.id, "MapPublicIpOnLaunch": {"Value": True}},
            "ec2/vpc_subnet.go modifySubnetAttributesOnCreate",
        )


@translates("aws:ec2/internetGateway:InternetGateway")
def _igw(r: Resource) -> None:
    i = r.inputs
    r.call(
        "ec2",
        "CreateInternetGateway",
        {"TagSpecifications": tag_specs("internet-gateway", i.get("tags"))},
        "ec2/vpc_internet_gateway.go resourceInternetGatewayCreate",
    )
    if (vpc := i.get("vpcId")) is not None:
        r.call(
            "ec2",
            "AttachInternetGateway",
            {"InternetGatewayId": r.id, "VpcId": vpc},
            "ec2/vpc_internet_gateway.go attachInternetGateway",
        )


@translates("aws:ec2/eip:Eip")
def _eip(r: Resource) -> None:
    i = r.inputs
    r.call(
        "ec2",
        "AllocateAddress",
        {"Domain": i.get("domain"), "TagSpecifications": tag_specs("elastic-ip", i.get("tags"))},
        "ec2/ec2_eip.go resourceEIPCreate",
    )


@translates("aws:ec2/natGateway:NatGateway")
def _nat(r: Resource) -> None:
    i = r.inputs
    params = {
        "AllocationId": i.get("allocationId"),
        "SubnetId": i.get("subnetId"),
        "ConnectivityType": i.get("connectivityType", "public"),  # the schema default
        "TagSpecifications": tag_specs("natgateway", i.get("tags")),
    }
    r.call("ec2", "CreateNatGateway", params, "ec2/vpc_nat_gateway.go resourceNATGatewayCreate")


@translates("aws:ec2/routeTable:RouteTable")
def _route_table(r: Resource) -> None:
    i = r.inputs
    r.call(
        "ec2",
        "CreateRouteTable",
        {"VpcId": i.get("vpcId"), "TagSpecifications": tag_specs("route-table", i.get("tags"))},
        "ec2/vpc_route_table.go resourceRouteTableCreate",
    )
    for route in i.objs("routes"):
        params = {
            "RouteTableId": r.id,
            "DestinationCidrBlock": route.get("cidrBlock"),
            "GatewayId": route.get("gatewayId"),
            "NatGatewayId": route.get("natGatewayId"),
        }
        r.call("ec2", "CreateRoute", params, "ec2/vpc_route_table.go routeTableAddRoute")


@translates("aws:ec2/routeTableAssociation:RouteTableAssociation")
def _route_table_association(r: Resource) -> None:
    i = r.inputs
    r.call(
        "ec2",
        "AssociateRouteTable",
        {"RouteTableId": i.get("routeTableId"), "SubnetId": i.get("subnetId")},
        "ec2/vpc_route_table_association.go resourceRouteTableAssociationCreate",
    )


@translates("aws:ec2/securityGroup:SecurityGroup")
def _security_group(r: Resource) -> None:
    i = r.inputs
    params = {
        "GroupName": r.physical(),
        "Description": i.get("description", "Managed by Pulumi"),  # pulumi-aws's default description
        "VpcId": i.get("vpcId"),
        "TagSpecifications": tag_specs("security-group", i.get("tags")),
    }
    r.call("ec2", "CreateSecurityGroup", params, "ec2/vpc_security_group.go resourceSecurityGroupCreate")


def _rule(r: Resource, operation: str, source: str) -> None:
    """aws_vpc_security_group_{ingress,egress}_rule: `securityGroupRule.expandIPPermission` puts the description on
    the one source the rule has (IpRanges / Ipv6Ranges / PrefixListIds / UserIdGroupPairs)."""
    i = r.inputs
    description = i.get("description")
    permission: dict[str, Any] = {
        "IpProtocol": i.get("ipProtocol"),
        "FromPort": i.get("fromPort"),
        "ToPort": i.get("toPort"),
    }
    if (cidr := i.get("cidrIpv4")) is not None:
        permission["IpRanges"] = [{"CidrIp": cidr, "Description": description}]
    if (cidr6 := i.get("cidrIpv6")) is not None:
        permission["Ipv6Ranges"] = [{"CidrIpv6": cidr6, "Description": description}]
    if (prefix := i.get("prefixListId")) is not None:
        permission["PrefixListIds"] = [{"PrefixListId": prefix, "Description": description}]
    if (group := i.get("referencedSecurityGroupId")) is not None:
        user, _, group_id = group.rpartition("/")  # [UserID/]GroupID
        permission["UserIdGroupPairs"] = [{"GroupId": group_id, "UserId": user or None, "Description": description}]
    params = {
        "GroupId": i.get("securityGroupId"),
        "IpPermissions": [permission],
        "TagSpecifications": tag_specs("security-group-rule", i.get("tags")),
    }
    r.call("ec2", operation, params, source)


@translates("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule")
def _ingress(r: Resource) -> None:
    _rule(r, "AuthorizeSecurityGroupIngress", "ec2/vpc_security_group_ingress_rule.go expandIPPermission")


@translates("aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule")
def _egress(r: Resource) -> None:
    _rule(r, "AuthorizeSecurityGroupEgress", "ec2/vpc_security_group_egress_rule.go expandIPPermission")


@translates("aws:ec2/vpcEndpoint:VpcEndpoint")
def _vpc_endpoint(r: Resource) -> None:
    i = r.inputs
    params = {
        "VpcId": i.get("vpcId"),
        "ServiceName": i.get("serviceName"),
        "VpcEndpointType": i.get("vpcEndpointType"),
        "SubnetIds": i.get("subnetIds"),
        "SecurityGroupIds": i.get("securityGroupIds"),
        "PrivateDnsEnabled": i.get("privateDnsEnabled"),
        "RouteTableIds": i.get("routeTableIds"),
        "PolicyDocument": i.get("policy"),
        "TagSpecifications": tag_specs("vpc-endpoint", i.get("tags")),
    }
    r.call("ec2", "CreateVpcEndpoint", params, "ec2/vpc_endpoint.go resourceVPCEndpointCreate")


@translates("aws:ec2/placementGroup:PlacementGroup")
def _placement_group(r: Resource) -> None:
    i = r.inputs
    params = {
        "GroupName": r.physical(),
        "Strategy": i.get("strategy"),
        "PartitionCount": i.get("partitionCount"),
        "SpreadLevel": i.get("spreadLevel"),
        "TagSpecifications": tag_specs("placement-group", i.get("tags")),
    }
    r.call("ec2", "CreatePlacementGroup", params, "ec2/ec2_placement_group.go resourcePlacementGroupCreate")


@translates("aws:ec2/keyPair:KeyPair")
def _key_pair(r: Resource) -> None:
    i = r.inputs
    params = {
        "KeyName": r.physical("keyName"),  # pulumi-aws: AutoName("keyName", 255, "-")
        "PublicKeyMaterial": str(i.get("publicKey")).encode(),
        "TagSpecifications": tag_specs("key-pair", i.get("tags")),
    }
    r.call("ec2", "ImportKeyPair", params, "ec2/ec2_key_pair.go resourceKeyPairCreate")


# ---------------------------------------------------------------------------------------------------------------
# EC2: launch templates and instances


def _ebs(ebs: Inputs | None) -> dict[str, Any] | None:
    if ebs is None:
        return None
    return {
        "DeleteOnTermination": _bool(ebs.get("deleteOnTermination")),
        "Encrypted": _bool(ebs.get("encrypted")),
        "Iops": ebs.get("iops"),
        "KmsKeyId": ebs.get("kmsKeyId"),
        "SnapshotId": ebs.get("snapshotId"),
        "Throughput": ebs.get("throughput"),
        "VolumeSize": ebs.get("volumeSize"),
        "VolumeType": ebs.get("volumeType"),
    }


def _metadata(m: Inputs | None) -> dict[str, Any] | None:
    if m is None:
        return None
    return {
        "HttpEndpoint": m.get("httpEndpoint"),
        "HttpTokens": m.get("httpTokens"),
        "HttpPutResponseHopLimit": m.get("httpPutResponseHopLimit"),
        "InstanceMetadataTags": m.get("instanceMetadataTags"),
        "HttpProtocolIpv6": m.get("httpProtocolIpv6"),
    }


def _network_interface(n: Inputs) -> dict[str, Any]:
    """expandLaunchTemplateInstanceNetworkInterfaceSpecificationRequest."""
    return {
        "AssociatePublicIpAddress": _bool(n.get("associatePublicIpAddress")),
        "DeleteOnTermination": _bool(n.get("deleteOnTermination")),
        "Description": n.get("description"),
        "DeviceIndex": n.get("deviceIndex"),
        "InterfaceType": n.get("interfaceType"),
        "NetworkCardIndex": n.get("networkCardIndex"),
        "Groups": n.get("securityGroups"),
        "SubnetId": n.get("subnetId"),
        "PrivateIpAddress": n.get("privateIpAddress"),
    }


def _market(m: Inputs | None) -> dict[str, Any] | None:
    if m is None:
        return None
    spot = m.obj("spotOptions")
    return {
        "MarketType": m.get("marketType"),
        "SpotOptions": None
        if spot is None
        else {
            "InstanceInterruptionBehavior": spot.get("instanceInterruptionBehavior"),
            "MaxPrice": spot.get("maxPrice"),
            "SpotInstanceType": spot.get("spotInstanceType"),
        },
    }


@translates("aws:ec2/launchTemplate:LaunchTemplate")
def _launch_template(r: Resource) -> None:
    """resourceLaunchTemplateCreate: LaunchTemplateName, TagSpecifications (the template's own tags) and
    `expandRequestLaunchTemplateData` (UserData is always set, "" when none)."""
    i = r.inputs
    i.skip("updateDefaultVersion", reason="ModifyLaunchTemplate after a new version (update), not at create")
    reservation = i.obj("capacityReservationSpecification")
    target = reservation.obj("capacityReservationTarget") if reservation else None
    profile = i.obj("iamInstanceProfile")
    placement = i.obj("placement")
    data = {
        "UserData": i.get("userData", ""),
        "InstanceType": i.get("instanceType"),
        "BlockDeviceMappings": [
            {"DeviceName": b.get("deviceName"), "Ebs": _ebs(b.obj("ebs")), "NoDevice": b.get("noDevice")}
            for b in i.objs("blockDeviceMappings")
        ]
        or None,
        "CapacityReservationSpecification": None
        if reservation is None
        else {
            "CapacityReservationPreference": reservation.get("capacityReservationPreference"),
            "CapacityReservationTarget": None
            if target is None
            else {"CapacityReservationId": target.get("capacityReservationId")},
        },
        "EbsOptimized": _bool(i.get("ebsOptimized")),
        "IamInstanceProfile": None if profile is None else {"Arn": profile.get("arn"), "Name": profile.get("name")},
        "ImageId": i.get("imageId"),
        "InstanceMarketOptions": _market(i.obj("instanceMarketOptions")),
        "KeyName": i.get("keyName"),
        "MetadataOptions": _metadata(i.obj("metadataOptions")),
        "NetworkInterfaces": [_network_interface(n) for n in i.objs("networkInterfaces")] or None,
        "Placement": None
        if placement is None
        else {"GroupName": placement.get("groupName"), "AvailabilityZone": placement.get("availabilityZone")},
        "TagSpecifications": [
            {"ResourceType": t.get("resourceType"), "Tags": tag_list(t.get("tags"))}
            for t in i.objs("tagSpecifications")
        ]
        or None,
        "SecurityGroupIds": i.get("vpcSecurityGroupIds"),
    }
    params = {
        "LaunchTemplateName": r.physical(),
        "VersionDescription": i.get("description"),
        "LaunchTemplateData": data,
        "TagSpecifications": tag_specs("launch-template", i.get("tags")),
    }
    r.call("ec2", "CreateLaunchTemplate", params, "ec2/ec2_launch_template.go resourceLaunchTemplateCreate")


@translates("aws:ec2/instance:Instance")
def _instance(r: Resource) -> None:
    """resourceInstanceCreate -> buildInstanceOpts -> RunInstances. A public IP request (associatePublicIpAddress
    true) moves subnet and groups into NetworkInterfaces[0]; the root volume's device name is the AMI's."""
    i = r.inputs
    public = i.get("associatePublicIpAddress")
    subnet, groups = i.get("subnetId"), i.get("vpcSecurityGroupIds")
    root = i.obj("rootBlockDevice")
    template = i.obj("launchTemplate")
    user_data = i.get("userDataBase64")
    if user_data is None and (plain := i.get("userData")) is not None:
        user_data = base64.b64encode(str(plain).encode()).decode()  # user_data is encoded by the provider
    interfaces = None
    if public:
        interfaces = [
            {
                "DeviceIndex": 0,
                "AssociatePublicIpAddress": True,
                "SubnetId": subnet,
                "Groups": groups,
                "DeleteOnTermination": True,
            }
        ]
        subnet, groups = None, None
    params = {
        "MinCount": 1,
        "MaxCount": 1,
        "ImageId": i.get("ami"),
        "InstanceType": i.get("instanceType"),
        "SubnetId": subnet,
        "SecurityGroupIds": groups,
        "NetworkInterfaces": interfaces,
        "IamInstanceProfile": None if (p := i.get("iamInstanceProfile")) is None else {"Name": p},
        "KeyName": i.get("keyName"),
        "MetadataOptions": _metadata(i.obj("metadataOptions")),
        "UserData": user_data,
        "Placement": None if (pg := i.get("placementGroup")) is None else {"GroupName": pg},
        "LaunchTemplate": None
        if template is None
        else {
            "LaunchTemplateId": template.get("id"),
            "LaunchTemplateName": template.get("name"),
            "Version": template.get("version"),
        },
        "BlockDeviceMappings": None
        if root is None
        else [
            {
                "DeviceName": "<root device name of the image>",
                "Ebs": {
                    "DeleteOnTermination": root.get("deleteOnTermination", True),
                    "Encrypted": root.get("encrypted"),
                    "KmsKeyId": root.get("kmsKeyId"),
                    "Iops": root.get("iops"),
                    "Throughput": root.get("throughput"),
                    "VolumeSize": root.get("volumeSize"),
                    "VolumeType": root.get("volumeType"),
                },
            }
        ],
        # buildInstanceOpts: the instance's tags, then volume_tags as a "volume" tag specification
        "TagSpecifications": (tag_specs("instance", i.get("tags")) or [])
        + (tag_specs("volume", i.get("volumeTags")) or [])
        or None,
    }
    r.call("ec2", "RunInstances", params, "ec2/ec2_instance.go resourceInstanceCreate (buildInstanceOpts)")
