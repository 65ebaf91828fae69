"""Alibaba Cloud requests, part 1: the request record, the input reader, and the ECS and VPC translations.

Each translator takes a resource's registered (camelCase) inputs and returns the OpenAPI calls the Terraform
provider makes for them (aliyun/terraform-provider-alicloud @81c43b67; each names its file and function).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from alibabacloud_ecs20140526 import models as ecs
from alibabacloud_vpc20160428 import models as vpc


@dataclass(frozen=True)
class Call:
    api: str  # "ecs:RunInstances"
    model: type  # the Tea request model
    request: dict[str, Any]
    source: str  # the provider file and function that builds it
    roa: bool = False  # a JSON body (ROA): key case is not significant (Go's encoding/json)
    tags: tuple[tuple[str, str], ...] = ()  # the tags this call sets, for the tag rules
    path: tuple[tuple[str, Any], ...] = ()  # ROA path parameters ("/clusters/{ClusterId}/nodepools")


@dataclass(frozen=True)
class Translation:
    terraform: str  # the provider's resource name
    build: Callable[[Inputs, str], list[Call]]
    # inputs the provider keeps to itself (no API parameter): named so an input nobody translates stands out
    provider_only: frozenset[str] = frozenset()


class Inputs(dict[str, Any]):
    """A resource's inputs that remember which keys a translator read."""

    def __init__(self, data: Mapping[str, Any]) -> None:
        super().__init__(data)
        self.read: set[str] = set()

    def get(self, key: str, default: Any = None) -> Any:  # type: ignore[override]
        self.read.add(key)
        return super().get(key, default)

    def ok(self, key: str) -> Any:
        """Terraform's d.GetOk: the value unless unset or the type's zero value."""
        value = self.get(key)
        return value if value not in (None, "", 0, False, [], {}) else None


def drop_none(data: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in data.items() if v is not None}


def tags_of(inputs: Inputs, key: str = "tags") -> tuple[tuple[str, str], ...]:
    return tuple((k, str(v)) for k, v in (inputs.ok(key) or {}).items())


def tag_list(tags: tuple[tuple[str, str], ...], key: str = "Key", value: str = "Value") -> list[dict[str, str]]:
    return [{key: k, value: v} for k, v in tags]


def tag_resources(service: str, model: type, resource_type: str, resource: str, tags: Any, source: str) -> Call:
    """The provider's SetResourceTags / setTags after create: TagResources on the new resource."""
    if service == "ess":  # ESS names both lists in the plural (service_alicloud_ess.go SetResourceTags)
        request = {"ResourceType": resource_type, "ResourceIds": [resource], "Tags": tag_list(tags)}
    else:
        request = {"ResourceType": resource_type, "ResourceId": [resource], "Tag": tag_list(tags)}
    return Call(f"{service}:TagResources", model, request, source, tags=tags)


# --- ECS ---------------------------------------------------------------------------------------------------------


def instance(i: Inputs, region: str) -> list[Call]:
    src = "alicloud/resource_alicloud_instance.go resourceAliCloudInstanceCreate"
    system_disk = drop_none(
        {
            "Category": i.ok("systemDiskCategory"),
            "Size": i.ok("systemDiskSize"),
            "Encrypted": i.get("systemDiskEncrypted"),
            "KMSKeyId": i.ok("systemDiskKmsKeyId"),
            "PerformanceLevel": i.ok("systemDiskPerformanceLevel"),
            "DiskName": i.ok("systemDiskName"),
            # request["SystemDisk.EncryptAlgorithm"] (resourceAliCloudInstanceCreate)
            "EncryptAlgorithm": i.ok("systemDiskEncryptAlgorithm"),
        }
    )
    charge = i.ok("instanceChargeType")
    tags = tags_of(i)
    req: dict[str, Any] = drop_none(
        {
            "RegionId": region,
            "InstanceType": i.ok("instanceType"),
            "ImageId": i.ok("imageId"),
            "ZoneId": i.ok("availabilityZone"),
            "SystemDisk": system_disk or None,
            "InstanceName": i.ok("instanceName"),
            "Description": i.ok("description"),
            "InternetChargeType": i.ok("internetChargeType"),
            "InternetMaxBandwidthOut": i.ok("internetMaxBandwidthOut"),
            "HostName": i.ok("hostName"),
            "InstanceChargeType": charge,
            "SpotStrategy": i.ok("spotStrategy") if charge != "PrePaid" else None,
            "UserData": i.ok("userData"),
            "RamRoleName": i.ok("roleName"),
            "KeyPairName": i.ok("keyName"),
            "DeletionProtection": i.get("deletionProtection"),
            "Tag": tag_list(tags) or None,
            "HpcClusterId": i.ok("hpcClusterId"),
            "DeploymentSetId": i.ok("deploymentSetId"),
            "SpotInterruptionBehavior": i.ok("spotInterruptionBehavior"),
            "HttpTokens": i.ok("httpTokens"),  # request["HttpTokens"] (resourceAliCloudInstanceCreate)
        }
    )
    pool = drop_none({"MatchCriteria": i.ok("privatePoolOptionsMatchCriteria"), "Id": i.ok("privatePoolOptionsId")})
    if pool:
        req["PrivatePoolOptions"] = pool
    disks = []
    for d in i.ok("dataDisks") or []:
        disk = {"DeleteWithInstance": bool(d.get("deleteWithInstance")), "Encrypted": bool(d.get("encrypted"))}
        disk |= drop_none(
            {
                "Size": d.get("size"),
                "Category": d.get("category") or None,
                "DiskName": d.get("name") or None,
                "KMSKeyId": d.get("kmsKeyId") or None,
                "Description": d.get("description") or None,
                # only with cloud_essd (the provider drops it otherwise)
                "PerformanceLevel": d.get("performanceLevel") if d.get("category") == "cloud_essd" else None,
            }
        )
        disks.append(disk)
    if disks:
        req["DataDisk"] = disks
    groups = i.ok("securityGroups")
    # the primary ENI is spelled out when its traffic mode or card index is set (else top-level VSwitchId/groups)
    if i.ok("networkInterfaceTrafficMode") or i.get("networkCardIndex") is not None:
        primary = {"InstanceType": "Primary", "SecurityGroupIds": groups, "VSwitchId": i.ok("vswitchId")}
        primary |= drop_none(
            {
                "NetworkInterfaceTrafficMode": i.ok("networkInterfaceTrafficMode"),
                "NetworkCardIndex": i.get("networkCardIndex"),
            }
        )
        nics = [drop_none(primary)]
    else:
        req |= drop_none({"VSwitchId": i.ok("vswitchId"), "SecurityGroupIds": groups})
        nics = []
    secondary = i.ok("networkInterfaces")
    for nic in secondary if isinstance(secondary, list) else [secondary] if secondary else []:
        # NetworkCardIndex only where the type supports card indices (an API lookup; ERI types do)
        nics.append(
            drop_none(
                {
                    "InstanceType": "Secondary",
                    "VSwitchId": nic.get("vswitchId"),
                    "NetworkInterfaceTrafficMode": nic.get("networkInterfaceTrafficMode"),
                    "NetworkCardIndex": nic.get("networkCardIndex"),
                    "SecurityGroupIds": nic.get("securityGroupIds"),
                }
            )
        )
    if nics:
        req["NetworkInterface"] = nics
    calls = [Call("ecs:RunInstances", ecs.RunInstancesRequest, req, src, tags=tags)]
    if volume := tags_of(i, "volumeTags"):  # setVolumeTags (tags.go) on every disk of the instance
        calls.append(
            tag_resources(
                "ecs",
                ecs.TagResourcesRequest,
                "disk",
                "<disks of the instance>",
                volume,
                "alicloud/tags.go setVolumeTags",
            )
        )
    return calls


def ram_role_attachment(i: Inputs, region: str) -> list[Call]:
    req = {"RegionId": region, "RamRoleName": i.get("ramRoleName"), "InstanceIds": f'["{i.get("instanceId")}"]'}
    src = "alicloud/resource_alicloud_ecs_ram_role_attachment.go resourceAliCloudEcsRamRoleAttachmentCreate"
    return [Call("ecs:AttachInstanceRamRole", ecs.AttachInstanceRamRoleRequest, req, src)]


def security_group(i: Inputs, region: str) -> list[Call]:
    tags = tags_of(i)
    req = drop_none(
        {
            "RegionId": region,
            "Description": i.ok("description"),
            "VpcId": i.ok("vpcId"),
            "SecurityGroupName": i.ok("securityGroupName"),
            "Tag": tag_list(tags) or None,
        }
    )
    calls = [
        Call(
            "ecs:CreateSecurityGroup",
            ecs.CreateSecurityGroupRequest,
            req,
            "alicloud/resource_alicloud_security_group.go resourceAliCloudEcsSecurityGroupCreate",
            tags=tags,
        )
    ]
    if policy := i.ok("innerAccessPolicy"):  # set by the update that follows create
        calls.append(
            Call(
                "ecs:ModifySecurityGroupPolicy",
                ecs.ModifySecurityGroupPolicyRequest,
                {"RegionId": region, "SecurityGroupId": "<new group>", "InnerAccessPolicy": policy},
                "alicloud/resource_alicloud_security_group.go resourceAliCloudEcsSecurityGroupUpdate",
            )
        )
    return calls


def security_group_rule(i: Inputs, region: str) -> list[Call]:
    ingress = i.get("type") == "ingress"
    perm = drop_none(
        {
            "IpProtocol": i.get("ipProtocol"),
            "Policy": i.ok("policy"),
            "Priority": str(i.get("priority")) if i.ok("priority") else None,
            ("SourceCidrIp" if ingress else "DestCidrIp"): i.ok("cidrIp"),
            ("SourceGroupId" if ingress else "DestGroupId"): i.ok("sourceSecurityGroupId"),
            "PortRange": i.ok("portRange"),
            "NicType": i.ok("nicType"),
            "Description": i.ok("description"),
        }
    )
    req = {"RegionId": region, "SecurityGroupId": i.get("securityGroupId"), "Permissions": [perm]}
    action = "AuthorizeSecurityGroup" if ingress else "AuthorizeSecurityGroupEgress"
    model = ecs.AuthorizeSecurityGroupRequest if ingress else ecs.AuthorizeSecurityGroupEgressRequest
    src = "alicloud/resource_alicloud_security_group_rule.go resourceAliyunSecurityGroupRuleCreate"
    return [Call(f"ecs:{action}", model, req, src)]


def deployment_set(i: Inputs, region: str) -> list[Call]:
    req = drop_none(
        {
            "RegionId": region,
            "Strategy": i.ok("strategy"),
            "DeploymentSetName": i.ok("deploymentSetName"),
            "Description": i.ok("description"),
        }
    )
    src = "alicloud/resource_alicloud_ecs_deployment_set.go resourceAliCloudEcsDeploymentSetCreate"
    return [Call("ecs:CreateDeploymentSet", ecs.CreateDeploymentSetRequest, req, src)]


def launch_template(i: Inputs, region: str) -> list[Call]:
    """alicloud/resource_alicloud_ecs_launch_template.go resourceAliCloudEcsLaunchTemplateCreate (@0d3bfc7f: the
    system_disk block, data_disks, tags as Tag.N, template_tags as TemplateTag.N; VSwitchId with the vSwitch's VPC and
    zone looked up)."""
    src = "alicloud/resource_alicloud_ecs_launch_template.go resourceAliCloudEcsLaunchTemplateCreate"
    system = i.ok("systemDisk") or {}
    disks = [
        drop_none(
            {
                "Category": d.get("category"),
                "DeleteWithInstance": bool(d.get("deleteWithInstance")),
                "Encrypted": bool(d.get("encrypted")),
                "DiskName": d.get("name"),
                "KMSKeyId": d.get("kmsKeyId"),
                "PerformanceLevel": d.get("performanceLevel"),
                "Size": d.get("size"),
            }
        )
        for d in i.ok("dataDisks") or []
    ]
    tags, template_tags = tags_of(i), tags_of(i, "templateTags")
    req = drop_none(
        {
            "RegionId": region,
            "LaunchTemplateName": i.ok("launchTemplateName"),
            "Description": i.ok("description"),
            "ImageId": i.ok("imageId"),
            "InstanceType": i.ok("instanceType"),
            "InstanceChargeType": i.ok("instanceChargeType"),
            "SpotStrategy": i.ok("spotStrategy"),
            "VSwitchId": i.ok("vswitchId"),
            "VpcId": "<the vSwitch's VPC>",
            "ZoneId": "<the vSwitch's zone>",
            "SecurityGroupIds": i.ok("securityGroupIds"),
            "RamRoleName": i.ok("ramRoleName"),
            "InternetChargeType": i.ok("internetChargeType"),
            "InternetMaxBandwidthOut": i.ok("internetMaxBandwidthOut"),
            "KeyPairName": i.ok("keyPairName"),
            "DeploymentSetId": i.ok("deploymentSetId"),
            "UserData": i.ok("userData"),
            "HttpTokens": i.ok("httpTokens"),  # request["HttpTokens"] (resourceAliCloudEcsLaunchTemplateCreate)
            "SystemDisk": drop_none(
                {
                    "Category": system.get("category"),
                    "DeleteWithInstance": system.get("deleteWithInstance"),
                    "Encrypted": system.get("encrypted"),
                    "KMSKeyId": system.get("kmsKeyId"),
                    "Size": system.get("size"),
                }
            )
            or None,
            "DataDisk": disks or None,
            "Tag": tag_list(tags) or None,
            "TemplateTag": tag_list(template_tags) or None,
        }
    )
    return [Call("ecs:CreateLaunchTemplate", ecs.CreateLaunchTemplateRequest, req, src, tags=tags)]


def session_manager(i: Inputs, region: str) -> list[Call]:
    status = {"Enabled": "enabled", "Disabled": "disabled"}.get(i.get("status"), i.get("status"))
    req = {"statusKey": i.get("sessionManagerStatusName"), "statusValue": status}
    src = "alicloud/resource_alicloud_ecs_session_manager_status.go (convertEcsSessionManagerStatusStatusRequest)"
    return [Call("ecs:ModifyUserBusinessBehavior", ecs.ModifyUserBusinessBehaviorRequest, req, src)]


def key_pair(i: Inputs, region: str) -> list[Call]:
    tags = tags_of(i)
    req = drop_none(
        {
            "RegionId": region,
            "KeyPairName": i.ok("keyPairName"),
            "PublicKeyBody": i.ok("publicKey"),
            "Tag": tag_list(tags) or None,
        }
    )
    src = "alicloud/resource_alicloud_ecs_key_pair.go resourceAliCloudEcsKeyPairCreate (public_key: ImportKeyPair)"
    return [Call("ecs:ImportKeyPair", ecs.ImportKeyPairRequest, req, src, tags=tags)]


# --- VPC ---------------------------------------------------------------------------------------------------------


def vpc_network(i: Inputs, region: str) -> list[Call]:
    tags = tags_of(i)
    req = drop_none(
        {
            "RegionId": region,
            "CidrBlock": i.ok("cidrBlock"),
            "VpcName": i.ok("vpcName"),
            "Description": i.ok("description"),
            "Tag": tag_list(tags) or None,
        }
    )
    return [
        Call(
            "vpc:CreateVpc",
            vpc.CreateVpcRequest,
            req,
            "alicloud/resource_alicloud_vpc.go resourceAliCloudVpcVpcCreate",
            tags=tags,
        )
    ]


def vswitch(i: Inputs, region: str) -> list[Call]:
    req = drop_none(
        {
            "RegionId": region,
            "CidrBlock": i.get("cidrBlock"),
            "VpcId": i.get("vpcId"),
            "VSwitchName": i.ok("vswitchName"),
            "Description": i.ok("description"),
            "ZoneId": i.ok("zoneId"),
        }
    )
    src = "alicloud/resource_alicloud_vswitch.go resourceAliCloudVpcVswitchCreate"
    calls = [Call("vpc:CreateVSwitch", vpc.CreateVSwitchRequest, req, src)]
    if tags := tags_of(i):
        calls.append(tag_resources("vpc", vpc.TagResourcesRequest, "VSWITCH", "<new vswitch>", tags, src))
    return calls


def nat_gateway(i: Inputs, region: str) -> list[Call]:
    payment = {"PayAsYouGo": "PostPaid", "Subscription": "PrePaid"}
    req = drop_none(
        {
            "RegionId": region,
            "Description": i.ok("description"),
            "InternetChargeType": i.ok("internetChargeType"),
            "Name": i.ok("natGatewayName"),
            "NatType": i.get("natType"),
            "InstanceChargeType": payment.get(i.ok("paymentType"), i.ok("paymentType")),
            "Spec": i.ok("specification"),
            "VSwitchId": i.ok("vswitchId"),
            "NetworkType": i.ok("networkType"),
            "VpcId": i.get("vpcId"),
        }
    )
    src = "alicloud/resource_alicloud_nat_gateway.go resourceAliCloudNatGatewayCreate"
    calls = [Call("vpc:CreateNatGateway", vpc.CreateNatGatewayRequest, req, src)]
    if tags := tags_of(i):
        calls.append(tag_resources("vpc", vpc.TagResourcesRequest, "NATGATEWAY", "<new gateway>", tags, src))
    return calls


def eip(i: Inputs, region: str) -> list[Call]:
    payment = {"PayAsYouGo": "PostPaid", "Subscription": "PrePaid"}
    req = drop_none(
        {
            "RegionId": region,
            "Bandwidth": i.ok("bandwidth"),
            "Name": i.ok("addressName"),
            "Description": i.ok("description"),
            "InstanceChargeType": payment.get(i.ok("paymentType"), i.ok("paymentType")),
            "InternetChargeType": i.ok("internetChargeType"),
        }
    )
    src = "alicloud/resource_alicloud_eip_address.go resourceAliCloudEipAddressCreate"
    calls = [Call("vpc:AllocateEipAddress", vpc.AllocateEipAddressRequest, req, src)]
    if tags := tags_of(i):
        calls.append(tag_resources("vpc", vpc.TagResourcesRequest, "EIP", "<new eip>", tags, src))
    return calls


def eip_association(i: Inputs, region: str) -> list[Call]:
    req = drop_none(
        {
            "RegionId": region,
            "InstanceId": i.get("instanceId"),
            "AllocationId": i.get("allocationId"),
            "InstanceType": i.ok("instanceType") or "EcsInstance",
        }
    )
    src = "alicloud/resource_alicloud_eip_association.go resourceAliCloudEipAssociationCreate"
    return [Call("vpc:AssociateEipAddress", vpc.AssociateEipAddressRequest, req, src)]


def snat_entry(i: Inputs, region: str) -> list[Call]:
    req = drop_none(
        {
            "RegionId": region,
            "SnatTableId": i.get("snatTableId"),
            "SnatIp": i.get("snatIp"),
            "SourceVSwitchId": i.ok("sourceVswitchId"),
            "SnatEntryName": i.ok("snatEntryName"),
            "SourceCIDR": i.ok("sourceCidr"),
        }
    )
    src = "alicloud/resource_alicloud_snat_entry.go resourceAliCloudNATGatewaySnatEntryCreate"
    return [Call("vpc:CreateSnatEntry", vpc.CreateSnatEntryRequest, req, src)]
