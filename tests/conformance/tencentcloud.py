"""Tencent Cloud conformance: a plan's registered `tencentcloud:` inputs, translated into the API 3.0 requests the
Terraform tencentcloud provider sends, judged by Tencent's own SDK models (tencentcloud-sdk-python) and the
constraints their documentation states.

Translation source: tencentcloudstack/terraform-provider-tencentcloud @f6970a90 (2026-08-21). tencentcloud-iac-pulumi
0.2.3 bridges a provider of v1.82.40 (2025-12-02) or later: its igtm module has the igtm_instance, igtm_strategy and
igtm_monitor resources that v1.82.40 adds; the exact commit is not recorded in the package. The provider builds typed
tencentcloud-sdk-go requests (cvm.NewRunInstancesRequest, ...); each translator names its file and function.

Judged per request: members the Python model does not know (its `_deserialize` warns "fileds are useless"), the
rules of tencentcloud_rules.yaml (each quoting the SDK documentation), and the provider's own refusals before any
request (`refusals`). Tags the provider sets through the Tag API after create (tagService.ModifyTags: CAM role, key
pair, security group) are not judged: tencentcloud-sdk-python-tag is not installed, and no installed model documents
a tag limit (vpc/cvm Tag: "标签键", "标签值").
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tencentcloud.cam.v20190116 import models as cam
from tencentcloud.cvm.v20170312 import models as cvm
from tencentcloud.vpc.v20170312 import models as vpc

from . import _rules, _tcsdk
from .alicloud_requests import Inputs, drop_none
from .tencentcloud_as import REQUESTS as AS_REQUESTS
from .tencentcloud_audit import REQUESTS as AUDIT_REQUESTS
from .tencentcloud_cls import REQUESTS as CLS_REQUESTS
from .tencentcloud_tke import REQUESTS as TKE_REQUESTS
from .tencentcloud_tmp import REQUESTS as TMP_REQUESTS

PROVIDER = "tencentcloudstack/terraform-provider-tencentcloud@f6970a90"
RULES = Path(__file__).with_name("tencentcloud_rules.yaml")
POSTPAID = "POSTPAID_BY_HOUR"  # CVM_CHARGE_TYPE_POSTPAID, tencentcloud/services/cvm/extension_cvm.go


@dataclass(frozen=True)
class Call:
    api: str  # "cvm:RunInstances"
    model: type
    request: dict[str, Any]
    source: str


@dataclass(frozen=True)
class Translation:
    terraform: str
    build: Callable[[Inputs], list[Call]]


def _tags(i: Inputs, key: str = "tags") -> list[dict[str, str]]:
    return [{"Key": k, "Value": str(v)} for k, v in (i.ok(key) or {}).items()]


def _instance(i: Inputs) -> list[Call]:
    charge = i.ok("instanceChargeType")
    req: dict[str, Any] = drop_none(
        {
            "ImageId": i.ok("imageId"),
            "Placement": {"Zone": i.ok("availabilityZone")} if i.ok("availabilityZone") else None,
            "InstanceName": i.ok("instanceName"),
            "InstanceType": i.ok("instanceType"),
            "HostName": i.ok("hostname"),
            "CamRoleName": i.ok("camRoleName"),
            "HpcClusterId": i.ok("hpcClusterId"),
            "InstanceChargeType": charge,
            "DisasterRecoverGroupIds": [i.ok("placementGroupId")] if i.ok("placementGroupId") else None,
            "SecurityGroupIds": i.ok("orderlySecurityGroups") or i.ok("securityGroups"),
            "UserData": i.ok("userData"),
            "DisableApiTermination": i.get("disableApiTermination"),
            "LoginSettings": {"KeyIds": i.ok("keyIds")} if i.ok("keyIds") else None,
        }
    )
    if charge == "SPOTPAID" and (i.ok("spotInstanceType") or i.ok("spotMaxPrice")):
        spot = drop_none(
            {
                "SpotInstanceType": str(i.ok("spotInstanceType")).lower() if i.ok("spotInstanceType") else None,
                "MaxPrice": i.ok("spotMaxPrice"),
            }
        )
        req["InstanceMarketOptions"] = {"MarketType": "spot", "SpotOptions": spot}  # CVM_MARKET_TYPE_SPOT
    internet = drop_none(
        {
            "InternetChargeType": i.ok("internetChargeType"),
            "InternetMaxBandwidthOut": i.get("internetMaxBandwidthOut"),  # GetOkExists
            "PublicIpAssigned": i.get("allocatePublicIp"),
        }
    )
    if internet:
        req["InternetAccessible"] = internet
    if i.ok("vpcId"):
        req["VirtualPrivateCloud"] = drop_none({"VpcId": i.ok("vpcId"), "SubnetId": i.ok("subnetId")})
    system = drop_none({"DiskType": i.ok("systemDiskType"), "DiskSize": i.get("systemDiskSize")})
    if system:
        req["SystemDisk"] = system
    disks = []
    for d in i.ok("dataDisks") or []:
        disks.append(
            drop_none(
                {
                    "DiskType": d.get("dataDiskType"),
                    "DiskSize": d.get("dataDiskSize"),
                    "ThroughputPerformance": d.get("throughputPerformance") or 0,
                    "DiskName": d.get("dataDiskName") or None,
                    # schema Default true: sent as true unless set false
                    "DeleteWithInstance": d.get("deleteWithInstance", True),
                    "Encrypt": d.get("encrypt"),
                    "KmsKeyId": d.get("kmsKeyId") or None,
                }
            )
        )
    if disks:
        req["DataDisks"] = disks
    if tags := _tags(i):
        req["TagSpecification"] = [{"ResourceType": "instance", "Tags": tags}]
    src = "tencentcloud/services/cvm/resource_tc_instance.go resourceTencentCloudInstanceCreate"
    return [Call("cvm:RunInstances", cvm.RunInstancesRequest, req, src)]


def _security_group(i: Inputs) -> list[Call]:
    req = drop_none(
        {
            "GroupName": i.get("name"),
            "GroupDescription": i.get("description") or "",
            "Tags": _tags(i) or None,
        }
    )
    src = "tencentcloud/services/vpc/service_tencentcloud_vpc.go (VpcService).CreateSecurityGroup"
    return [Call("vpc:CreateSecurityGroup", vpc.CreateSecurityGroupRequest, req, src)]


def _policy(rule: Mapping[str, Any]) -> dict[str, Any]:
    # unmarshalSecurityPolicy: empty strings are left out
    return drop_none(
        {
            "Action": rule.get("action"),
            "CidrBlock": rule.get("cidrBlock") or None,
            "SecurityGroupId": rule.get("sourceSecurityId") or None,
            "Protocol": rule.get("protocol") or None,
            "Port": rule.get("port") or None,
            "PolicyDescription": rule.get("description") or None,
        }
    )


def _rule_set(i: Inputs) -> list[Call]:
    policies = drop_none(
        {
            "Ingress": [_policy(r) for r in i.ok("ingresses") or []] or None,
            "Egress": [_policy(r) for r in i.ok("egresses") or []] or None,
        }
    )
    req = {"SecurityGroupId": i.get("securityGroupId"), "SecurityGroupPolicySet": policies}
    src = "tencentcloud/services/vpc/resource_tc_security_group_rule_set.go unmarshalSecurityPolicy"
    return [Call("vpc:ModifySecurityGroupPolicies", vpc.ModifySecurityGroupPoliciesRequest, req, src)]


def _vpc(i: Inputs) -> list[Call]:
    req = drop_none(
        {
            "VpcName": i.get("name"),
            "CidrBlock": i.get("cidrBlock"),
            "EnableMulticast": "true" if i.get("isMulticast") else "false",
            "Tags": _tags(i) or None,
            "EnableRouteVpcPublish": bool(i.get("enableRouteVpcPublish")),
            "EnableRouteVpcPublishIpv6": bool(i.get("enableRouteVpcPublishIpv6")),
        }
    )
    src = "tencentcloud/services/vpc/service_tencentcloud_vpc.go (VpcService).CreateVpc"
    return [Call("vpc:CreateVpc", vpc.CreateVpcRequest, req, src)]


def _subnet(i: Inputs) -> list[Call]:
    req = drop_none(
        {
            "VpcId": i.get("vpcId"),
            "SubnetName": i.get("name"),
            "CidrBlock": i.get("cidrBlock"),
            "Zone": i.get("availabilityZone"),
            "Tags": _tags(i) or None,
        }
    )
    modify = {"SubnetId": "<new subnet>", "SubnetName": i.get("name"), "EnableBroadcast": "false"}
    src = "tencentcloud/services/vpc/service_tencentcloud_vpc.go (VpcService).CreateSubnet, ModifySubnetAttribute"
    return [
        Call("vpc:CreateSubnet", vpc.CreateSubnetRequest, req, src),
        Call("vpc:ModifySubnetAttribute", vpc.ModifySubnetAttributeRequest, modify, src),
    ]


def _eip(i: Inputs) -> list[Call]:
    req = drop_none(
        {
            "InternetChargeType": i.ok("internetChargeType"),
            "InternetMaxBandwidthOut": i.ok("internetMaxBandwidthOut"),
            "Tags": _tags(i) or None,
            "AddressName": i.ok("name"),
        }
    )
    src = "tencentcloud/services/cvm/resource_tc_eip.go resourceTencentCloudEipCreate"
    return [Call("vpc:AllocateAddresses", vpc.AllocateAddressesRequest, req, src)]


def _nat(i: Inputs) -> list[Call]:
    req = drop_none(
        {
            "InternetMaxBandwidthOut": i.get("bandwidth"),
            "MaxConcurrentConnection": i.get("maxConcurrent"),
            "VpcId": i.ok("vpcId"),
            "NatGatewayName": i.ok("name"),
            "PublicIpAddresses": i.ok("assignedEipSets"),
            "Tags": _tags(i) or None,
        }
    )
    src = "tencentcloud/services/vpc/resource_tc_nat_gateway.go resourceTencentCloudNatGatewayCreate"
    return [Call("vpc:CreateNatGateway", vpc.CreateNatGatewayRequest, req, src)]


def _route(i: Inputs) -> list[Call]:
    route = {
        "DestinationCidrBlock": i.get("destinationCidrBlock") or "",
        "RouteDescription": i.get("description") or "",
        "GatewayType": i.get("nextType") or "",
        "GatewayId": i.get("nextHub") or "",
        "Enabled": True,
    }
    req = {"RouteTableId": i.get("routeTableId"), "Routes": [route]}
    src = "tencentcloud/services/vpc/service_tencentcloud_vpc.go (VpcService).CreateRoutes"
    return [Call("vpc:CreateRoutes", vpc.CreateRoutesRequest, req, src)]


def _key_pair(i: Inputs) -> list[Call]:
    req = {"KeyName": i.get("keyName"), "ProjectId": i.get("projectId") or 0, "PublicKey": i.get("publicKey")}
    i.get("tags")  # set afterwards through the Tag API (not judged: module docstring)
    src = "tencentcloud/services/cvm/resource_tc_key_pair.go cvmCreateKeyPairByImportPublicKey"
    return [Call("cvm:ImportKeyPair", cvm.ImportKeyPairRequest, req, src)]


def _cam_role(i: Inputs) -> list[Call]:
    login = i.get("consoleLogin")
    req = drop_none(
        {
            "RoleName": i.get("name"),
            "PolicyDocument": i.get("document"),
            "Description": i.ok("description"),
            "ConsoleLogin": None if login is None else int(bool(login)),
            "SessionDuration": i.ok("sessionDuration"),
        }
    )
    i.get("tags")  # the Tag API after create (not judged)
    src = "tencentcloud/services/cam/resource_tc_cam_role.go resourceTencentCloudCamRoleCreate"
    return [Call("cam:CreateRole", cam.CreateRoleRequest, req, src)]


def _cam_attachment(i: Inputs) -> list[Call]:
    req = {"PolicyName": i.get("policyName"), "AttachRoleName": i.get("roleName")}
    src = "tencentcloud/services/cam/resource_tc_cam_role_policy_attachment_by_name.go"
    return [Call("cam:AttachRolePolicy", cam.AttachRolePolicyRequest, req, src)]


def _cam_policy(i: Inputs) -> list[Call]:
    req = drop_none(
        {"PolicyName": i.get("name"), "PolicyDocument": i.get("document"), "Description": i.ok("description")}
    )
    src = "tencentcloud/services/cam/resource_tc_cam_policy.go resourceTencentCloudCamPolicyCreate"
    return [Call("cam:CreatePolicy", cam.CreatePolicyRequest, req, src)]


def _hpc_cluster(i: Inputs) -> list[Call]:
    req = drop_none({"Zone": i.ok("zone"), "Name": i.ok("name"), "Remark": i.ok("remark")})
    src = "tencentcloud/services/cvm/resource_tc_cvm_hpc_cluster.go resourceTencentCloudCvmHpcClusterCreate"
    return [Call("cvm:CreateHpcCluster", cvm.CreateHpcClusterRequest, req, src)]


def _placement_group(i: Inputs) -> list[Call]:
    req = drop_none({"Name": i.get("name"), "Type": i.get("type"), "Affinity": i.get("affinity")})
    if tags := _tags(i):
        req["TagSpecification"] = [{"ResourceType": "ps", "Tags": tags}]
    src = "tencentcloud/services/cvm/service_tencentcloud_cvm.go (CvmService).CreatePlacementGroup"
    return [Call("cvm:CreateDisasterRecoverGroup", cvm.CreateDisasterRecoverGroupRequest, req, src)]


TRANSLATIONS: dict[str, Translation] = {
    "tencentcloud:Instance/instance:Instance": Translation("tencentcloud_instance", _instance),
    "tencentcloud:Security/group:Group": Translation("tencentcloud_security_group", _security_group),
    "tencentcloud:Security/groupRuleSet:GroupRuleSet": Translation("tencentcloud_security_group_rule_set", _rule_set),
    "tencentcloud:Vpc/instance:Instance": Translation("tencentcloud_vpc", _vpc),
    "tencentcloud:Subnet/instance:Instance": Translation("tencentcloud_subnet", _subnet),
    "tencentcloud:Eip/instance:Instance": Translation("tencentcloud_eip", _eip),
    "tencentcloud:Nat/gateway:Gateway": Translation("tencentcloud_nat_gateway", _nat),
    "tencentcloud:Route/tableEntry:TableEntry": Translation("tencentcloud_route_table_entry", _route),
    "tencentcloud:Key/pair:Pair": Translation("tencentcloud_key_pair", _key_pair),
    "tencentcloud:Cam/role:Role": Translation("tencentcloud_cam_role", _cam_role),
    "tencentcloud:Cam/rolePolicyAttachmentByName:RolePolicyAttachmentByName": Translation(
        "tencentcloud_cam_role_policy_attachment_by_name", _cam_attachment
    ),
    "tencentcloud:Cam/policy:Policy": Translation("tencentcloud_cam_policy", _cam_policy),
    "tencentcloud:Cvm/hpcCluster:HpcCluster": Translation("tencentcloud_cvm_hpc_cluster", _hpc_cluster),
    "tencentcloud:Placement/group:Group": Translation("tencentcloud_placement_group", _placement_group),
    # monitoring.logs: CLS, LogListener's CAM sub-user and its SSM secret (tencentcloud_cls.py)
    **{
        token: Translation(terraform, lambda i, build=build: [Call(*request) for request in build(i)])
        for token, (terraform, build) in CLS_REQUESTS.items()
    },
    # encryption.key auto and compliance mlps3: the KMS key and the CloudAudit tracking set (tencentcloud_audit.py)
    **{
        token: Translation(terraform, lambda i, build=build: [Call(*request) for request in build(i)])
        for token, (terraform, build) in AUDIT_REQUESTS.items()
    },
    # scheduler kubernetes: TKE, its endpoints, node pools and Secrets encryption (tencentcloud_tke.py)
    **{
        token: Translation(terraform, lambda i, build=build: [Call(*request) for request in build(i)])
        for token, (terraform, build) in TKE_REQUESTS.items()
    },
    # monitoring.prometheus managed: the TMP instance and its alert rules (tencentcloud_tmp.py)
    **{
        token: Translation(terraform, lambda i, build=build: [Call(*request) for request in build(i)])
        for token, (terraform, build) in TMP_REQUESTS.items()
    },
    # nodeGroup: managed: the launch configuration and the auto scaling group (tencentcloud_as.py)
    **{
        token: Translation(terraform, lambda i, build=build: [Call(*request) for request in build(i)])
        for token, (terraform, build) in AS_REQUESTS.items()
    },
}
# Registered, but no Tencent Cloud call: the in-cluster releases talk to the Kubernetes API
NOT_TENCENT = {
    "kubernetes:helm.sh/v3:Release": "a Helm release inside the cluster (the Kubernetes API, not Tencent's)",
    "pulumi:providers:kubernetes": "a Pulumi provider instance; no cloud call",
    "random:index/randomBytes:RandomBytes": "the Slurm MUNGE key, made by the Pulumi random provider; no cloud call",
}


def refusals(token: str, inputs: Mapping[str, Any]) -> list[str]:
    """What the provider itself refuses before any request, for inputs the API models cannot judge."""
    out: list[str] = []
    if token == "tencentcloud:Instance/instance:Instance":
        charge = inputs.get("instanceChargeType")
        for n, disk in enumerate(inputs.get("dataDisks") or []):
            # resourceTencentCloudInstanceCreate (since f85032c92, v1.82.38); delete_with_instance defaults to true
            if disk.get("deleteWithInstance", True) and charge != POSTPAID:
                out.append(
                    f"provider: dataDisks[{n}]: param `delete_with_instance` only can be true when "
                    f"`instance_charge_type` is {POSTPAID} (got {charge})"
                )
    if token == "tencentcloud:Kubernetes/nodePool:NodePool":
        # resource_tc_kubernetes_node_pool_extension.go composeParameterToAsScalingGroupParaSerial and
        # composedKubernetesAsScalingConfigParaSerial refuse these before any request
        low, high, desired = inputs.get("minSize"), inputs.get("maxSize"), inputs.get("desiredCapacity")
        if low is not None and high is not None and (low > high or (desired and not low <= desired <= high)):
            out.append("provider: constraints `min_size <= desired_capacity <= max_size` must be established")
        config = inputs.get("autoScalingConfig") or {}
        if config.get("securityGroupIds"):
            out.append("provider: `security_group_ids` ... Please use `orderly_security_group_ids` instead")
        if bool(config.get("keyIds")) == bool(config.get("password")):
            out.append("provider: Parameters `key_ids` and `password` should be set one")
    if token == "tencentcloud:Cam/policy:Policy":
        # CamService.PolicyDocumentForceCheck (resource_tc_cam_policy.go create and update): `resource` and `action`
        # of every statement must be arrays, the form CAM returns
        for n, statement in enumerate(json.loads(str(inputs.get("document") or "{}")).get("statement") or []):
            for key in ("resource", "action"):
                if isinstance(statement.get(key), str):
                    out.append(f"provider: document statement[{n}].{key}: its type must be array")
    return out


@dataclass
class Report:
    problems: list[str] = field(default_factory=list)
    not_judged: list[str] = field(default_factory=list)
    untranslated: list[str] = field(default_factory=list)
    unread: list[str] = field(default_factory=list)
    calls: list[tuple[str, Call]] = field(default_factory=list)


# Registered types that are not Tencent API calls (said in the report, judged by nobody here).


def translate(resources: list[Mapping[str, Any]]) -> Report:
    report = Report()
    for res in resources:
        token = res["type"]
        if not token.startswith("tencentcloud:"):
            if token in NOT_TENCENT:
                report.not_judged.append(f"{res['name']}: {token}: {NOT_TENCENT[token]}")
            elif not token.startswith("gpu-cluster:"):
                report.untranslated.append(f"{res['name']}: {token}")
            continue
        translation = TRANSLATIONS.get(token)
        if translation is None:
            report.untranslated.append(f"{res['name']}: {token}")
            continue
        inputs = Inputs(res["inputs"])
        report.problems.extend(f"{res['name']} {token}: {p}" for p in refusals(token, inputs))
        report.calls.extend((res["name"], call) for call in translation.build(inputs))
        report.unread.extend(f"{res['name']} {token}: {k}" for k in sorted(set(res["inputs"]) - inputs.read))
    return report


def judge_call(call: Call, rules: list[_rules.Rule], label: str) -> _rules.Verdict:
    verdict = _rules.Verdict()
    useless = _tcsdk.useless(call.model, call.request)
    if useless:  # the SDK's own warning, placed
        places = _tcsdk.unknown(call.model, call.request)
        verdict.problems.append(f"{label}: {call.api} warns {','.join(useless)} fileds are useless ({places})")
    for rule in rules:
        if rule.api == call.api:
            _rules.judge(rule, call.request, verdict, label)
    return verdict


def check(resources: list[Mapping[str, Any]]) -> Report:
    rules = _rules.load(RULES)
    report = translate(resources)
    for name, call in report.calls:
        verdict = judge_call(call, rules, f"{name} {call.api}")
        report.problems.extend(verdict.problems)
        report.not_judged.extend(verdict.not_judged)
    return report


# --- feature-rich configs (beyond the shipped stacks) ------------------------------------------------------------

_RSA = (  # the shipped stacks' test key (stacks/Pulumi.tencentcloud-dev.yaml)
    "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABgQDSeIpMUsLSOGPX5V1g1YAIyO/wofWegeLbuinyYQhPKrpUWLtLi1PFT0KMe1CHkKdLWh31"
    "LAcoja9Cc9yVVbCgYRxN8VTummMnMQ4f1KpAxffdN1eRqdR+OT4t2L711aSdCrBHC1Bl8kyUZ9UhuLZxnI1uQMQrwfIHWCpsiQMaMUN10qt8/TjP"
    "LZa4y4IyUKo/7puAFGuLof7pr2NM16Vzc0/LNlpONS5T+az8WnkrbXuIR2s83zOC5GC6pwIbrDqvCOHH3bszRivIUkDLX5ZIaTIcQNzgroH9unPE"
    "XscAEqIWdCcSRSn6pA2NF8NUOL4CubCp/bAruppmK31HMAYDzAOSY88cBfx9v3qENxE6Zy1ZhzqjzAHlK2HTzERw/yTsmMk+aFWmL80PJtXaQ3e3"
    "RBXWUbQ8e/jyEEbnyEyH6QUE9jsvh2m67Xvx+/P1I1TXtfzxYc34vmf5pBogiZ9aDIbVzH14PnLZ8Vx+ylJ11IM5NuyOXt5Jzby9fdgxpoM= "
    "dev@example"
)


def _values(region: str, max_hourly_usd: float | None = None, **cluster: Any) -> dict[str, Any]:
    values = {"gpu-cluster:cloud": "tencentcloud", "tencentcloud:region": region, "gpu-cluster:cluster": cluster}
    if max_hourly_usd is not None:
        values["gpu-cluster:maxHourlyUsd"] = max_hourly_usd
    return values


# name -> (stack name, values): the stack name is part of what is judged (it is in the key pair's and role's names)
FEATURES: dict[str, tuple[str, dict[str, Any]]] = {
    # spot nodes with a cloud-disk scratch, a login node, an extra CAM policy and tags
    "spot-login": (
        "tc-spot",
        _values(
            "ap-shanghai",
            10.0,
            name="tc-spot",
            instanceType="GN7.2XLARGE32",
            nodes=2,
            nodeGroup="instances",
            spot=True,
            storage={"scratch": "disk", "scratchGb": 200},
            network={"cidr": "10.63.0.0/16", "sshCidrs": ["203.0.113.0/24"]},
            login={"publicIp": True},
            sshPublicKey=_RSA,
            identity={"policies": ["QcloudCOSReadOnlyAccess"]},
            tags={"team": "ml", "cost-center": "gpu-42"},
        ),
    ),
    # TKE with its API on the internet from one CIDR, a spot GPU pool of a fixed size and no scratch disk
    "tke-public": (
        "tc-tke-pub",
        _values(
            "ap-guangzhou",
            10.0,
            name="tc-tke-pub",
            instanceType="GN7.2XLARGE32",
            fabric="none",
            nodes=2,
            spot=True,
            scheduler="kubernetes",
            kubernetes={"version": "1.34", "publicEndpoint": True, "publicCidrs": ["203.0.113.0/24"]},
            storage={"scratch": "none"},
            network={"cidr": "172.20.0.0/16", "sshCidrs": ["203.0.113.0/24"]},
            login={"publicIp": True},
            sshPublicKey=_RSA,
            tags={"environment": "test"},
        ),
    ),
    # prometheus managed: the TMP instance in the login node's subnet and one TMP alert rule per rule
    "tmp": (
        "tc-tmp",
        _values(
            "ap-shanghai",
            name="tc-tmp",
            instanceType="GN7.2XLARGE32",
            nodes=1,
            network={"cidr": "10.64.0.0/16", "sshCidrs": ["203.0.113.0/24"]},
            login={},
            monitoring={"prometheus": "managed", "retentionDays": 30},
            sshPublicKey=_RSA,
        ),
    ),
    # TKE shipping its nodes' logs (monitoring.logs: the log agent and LogConfigs), no login node: no LogListener
    "tke-logs": (
        "tc-tke-logs",
        _values(
            "ap-guangzhou",
            name="tc-tke-logs",
            instanceType="GN7.2XLARGE32",
            fabric="none",
            nodes=1,
            scheduler="kubernetes",
            storage={"scratch": "none"},
            network={"cidr": "10.72.0.0/16", "sshCidrs": ["203.0.113.0/24"]},
            monitoring={"logs": {"enabled": True, "retentionDays": 180}},
            sshPublicKey=_RSA,
            tags={"environment": "test"},
        ),
    ),
    # a placement group (cluster: SW) for two V100 nodes, a custom image, a stack name with a period
    "placement-group": (
        "tc.prod-2",
        _values(
            "ap-guangzhou",
            name="tc-pg",
            instanceType="GN10Xp.20XLARGE320",
            nodes=2,
            nodeGroup="instances",
            zone="ap-guangzhou-3",
            placement="cluster",
            image="img-9qrfy1xt",
            storage={"scratch": "disk", "scratchGb": 500, "rootGb": 100},
            network={"cidr": "172.16.0.0/16", "sshCidrs": ["203.0.113.0/24"], "publicIp": True},
            sshPublicKey=_RSA,
            tags={"team": "research"},
        ),
    ),
    # nodeGroup managed (an auto scaling group from a launch configuration) of spot T4 nodes in a placement group,
    # 1 to 3 nodes, a login node; scratch auto is none there
    "managed-spot": (
        "tc-managed",
        _values(
            "ap-guangzhou",
            6.0,
            name="tc-managed",
            gpu="T4:1",
            fabric="none",
            nodes=2,
            minNodes=1,
            maxNodes=3,
            nodeGroup="managed",
            spot=True,
            zone="ap-guangzhou-3",
            network={"sshCidrs": ["203.0.113.0/24"]},
            login={"publicIp": True},
            sshPublicKey=_RSA,
            tags={"team": "ml"},
        ),
    ),
}
