"""Alibaba Cloud requests, part 3: `serve:` (the intranet CLB, its vServer group and listener, the ESS group's
attachment to the vServer group), as the provider sends them (see alicloud_requests).

Sources: aliyun/terraform-provider-alicloud alicloud/resource_alicloud_slb_load_balancer.go @0612d756
(resourceAlicloudSlbLoadBalancerCreate, then SetResourceTags(d, "instance") in the Update it calls),
alicloud/resource_alicloud_slb_listener.go (a stored version: resourceAliyunSlbListenerCreate sends
CreateLoadBalancer<PROTOCOL>Listener with buildListenerCommonArgs, plus buildHttpListenerArgs for https, then
resourceAliyunSlbListenerUpdate sends Set...ListenerAttribute with what differs from the zero value on a new
resource), alicloud/resource_alicloud_ess_scalinggroup_vserver_groups.go @0612d756 (attachVServerGroups),
alicloud/resource_alicloud_slb_acl.go (a stored version: resourceAlicloudSlbAclCreate sends CreateAccessControlList,
then the Update it calls sets the tags and adds the entries 50 at a time with AddAccessControlListEntry).
"""

from __future__ import annotations

import json
from typing import Any

from alibabacloud_ess20220222 import models as ess
from alibabacloud_slb20140515 import models as slb

from .alicloud_requests import Call, Inputs, drop_none, tag_resources, tags_of

LB = "alicloud/resource_alicloud_slb_load_balancer.go"
LISTENER = "alicloud/resource_alicloud_slb_listener.go"
# The provider's schema defaults it sends with d.Get / GetOk when unset (resource_alicloud_slb_listener.go schema)
SCHEDULER, ACL_STATUS, HTTP_REQUEST_TIMEOUT, HTTP_IDLE_TIMEOUT, TCP_ESTABLISHED_TIMEOUT = "wrr", "off", 60, 15, 900


def slb_load_balancer(i: Inputs, region: str) -> list[Call]:
    req = drop_none(
        {
            "RegionId": region,
            "AddressType": i.ok("addressType"),
            # schema defaults, sent with GetOk: address_ip_version ipv4, bandwidth 1, delete_protection off
            "AddressIPVersion": i.ok("addressIpVersion") or "ipv4",
            "Bandwidth": i.ok("bandwidth") or 1,
            "DeleteProtection": i.ok("deleteProtection") or "off",
            "LoadBalancerName": i.ok("loadBalancerName"),
            # convertSlbLoadBalancerPaymentTypeRequest: PayAsYouGo is the API's PayOnDemand
            "PayType": {"PayAsYouGo": "PayOnDemand", "Subscription": "PrePay"}.get(i.ok("paymentType") or ""),
            "InstanceChargeType": i.ok("instanceChargeType"),
            "VSwitchId": i.ok("vswitchId"),
            "VpcId": "<the vSwitch's VPC (DescribeVSwitchAttributes)>" if i.ok("vswitchId") else None,
        }
    )
    calls = [Call("slb:CreateLoadBalancer", slb.CreateLoadBalancerRequest, req, f"{LB} Create")]
    if tags := tags_of(i):
        calls.append(tag_resources("slb", slb.TagResourcesRequest, "instance", "<new lb>", tags, f"{LB} Update"))
    return calls


def slb_server_group(i: Inputs, region: str) -> list[Call]:
    req = drop_none({"RegionId": region, "LoadBalancerId": i.ok("loadBalancerId"), "VServerGroupName": i.ok("name")})
    src = "alicloud/resource_alicloud_slb_server_group.go (CreateVServerGroup)"
    return [Call("slb:CreateVServerGroup", slb.CreateVServerGroupRequest, req, src)]


def slb_acl(i: Inputs, region: str) -> list[Call]:
    """CreateAccessControlList (the name trimmed; the version's ip_version is not read: it reads address_ip_version,
    so the API's default ipv4 applies), TagResources (TagResourceAcl), then the entries as a JSON list, 50 a call
    (SlbService.convertAclEntriesToString: [{"entry": ..., "comment": ...}])."""
    src = "alicloud/resource_alicloud_slb_acl.go"
    create = {"RegionId": region, "AclName": str(i.get("name")).strip()}
    calls = [Call("slb:CreateAccessControlList", slb.CreateAccessControlListRequest, create, f"{src} Create")]
    if tags := tags_of(i):
        calls.append(tag_resources("slb", slb.TagResourcesRequest, "acl", "<new acl>", tags, f"{src} Update"))
    entries = [drop_none({"entry": e.get("entry"), "comment": e.get("comment")}) for e in i.ok("entryLists") or []]
    for start in range(0, len(entries), 50):
        add = {"RegionId": region, "AclId": "<new acl>", "AclEntrys": json.dumps(entries[start : start + 50])}
        calls.append(Call("slb:AddAccessControlListEntry", slb.AddAccessControlListEntryRequest, add, f"{src} Update"))
    return calls


def _common(i: Inputs, region: str) -> dict[str, Any]:
    """buildListenerCommonArgs; with acl_status on, the list and its mode."""
    acl = (i.ok("aclStatus") or ACL_STATUS) == "on"
    return drop_none(
        {
            "RegionId": region,
            "LoadBalancerId": i.get("loadBalancerId"),
            "ListenerPort": i.get("frontendPort"),
            "BackendServerPort": i.ok("backendPort"),
            "Bandwidth": i.ok("bandwidth"),
            "VServerGroupId": i.ok("serverGroupId"),
            "AclStatus": i.ok("aclStatus") or ACL_STATUS,
            "AclType": i.ok("aclType") if acl else None,
            "AclId": i.ok("aclId") if acl else None,
            "Description": i.ok("description"),
            "Scheduler": i.ok("scheduler") or SCHEDULER,
        }
    )


def _health(i: Inputs) -> dict[str, Any]:
    return drop_none(
        {
            "HealthyThreshold": i.ok("healthyThreshold"),
            "UnhealthyThreshold": i.ok("unhealthyThreshold"),
            "HealthCheckInterval": i.ok("healthCheckInterval"),
            "HealthCheckURI": i.ok("healthCheckUri"),
            "HealthCheckHttpCode": i.ok("healthCheckHttpCode"),
        }
    )


def slb_listener(i: Inputs, region: str) -> list[Call]:
    protocol = i.get("protocol")
    common = _common(i, region)
    if protocol == "tcp":
        create = Call(
            "slb:CreateLoadBalancerTCPListener", slb.CreateLoadBalancerTCPListenerRequest, common, f"{LISTENER} Create"
        )
        # the common args carry BackendServerPort, which Set...Attribute does not take: ignored there, and already
        # set by the create (backend_port is ForceNew), so nothing is lost
        attrs = (
            {k: v for k, v in common.items() if k != "BackendServerPort"}
            | _health(i)
            | drop_none(
                {
                    "HealthCheckType": i.ok("healthCheckType"),
                    "HealthCheckConnectTimeout": i.ok("healthCheckTimeout"),
                    "EstablishedTimeout": i.ok("establishedTimeout") or TCP_ESTABLISHED_TIMEOUT,
                }
            )
        )
        update = Call(
            "slb:SetLoadBalancerTCPListenerAttribute",
            slb.SetLoadBalancerTCPListenerAttributeRequest,
            attrs,
            f"{LISTENER} Update",
        )
        return [create, update]
    # https: buildHttpListenerArgs on the create, with the health check when health_check is on (the default)
    http = common | {
        "StickySession": "off",
        "HealthCheck": i.ok("healthCheck") or "on",
        "RequestTimeout": HTTP_REQUEST_TIMEOUT,
        "IdleTimeout": HTTP_IDLE_TIMEOUT,
        "HealthCheckTimeout": i.ok("healthCheckTimeout"),
        "ServerCertificateId": i.ok("serverCertificateId"),
    }
    http |= _health(i)
    create = Call(
        "slb:CreateLoadBalancerHTTPSListener",
        slb.CreateLoadBalancerHTTPSListenerRequest,
        drop_none(http),
        f"{LISTENER} Create",
    )
    # the update sends the TLS policy (the instance has a spec: a PayByCLCU CLB reports slb.lcu.elastic), http/2
    # on and gzip on (schema defaults)
    settable = {k: v for k, v in http.items() if k != "BackendServerPort"}  # as for tcp: set by the create only
    attrs = drop_none(settable | {"TLSCipherPolicy": i.ok("tlsCipherPolicy"), "EnableHttp2": "on", "Gzip": "on"})
    update = Call(
        "slb:SetLoadBalancerHTTPSListenerAttribute",
        slb.SetLoadBalancerHTTPSListenerAttributeRequest,
        attrs,
        f"{LISTENER} Update",
    )
    return [create, update]


def ess_vserver_groups(i: Inputs, region: str) -> list[Call]:
    groups = [
        {
            "LoadBalancerId": g.get("loadbalancerId"),
            "VServerGroupAttributes": [
                {"VServerGroupId": a.get("vserverGroupId"), "Port": a.get("port"), "Weight": a.get("weight")}
                for a in g.get("vserverAttributes") or []
            ],
        }
        for g in i.get("vserverGroups") or []
    ]
    req = {
        "RegionId": region,
        "ScalingGroupId": i.get("scalingGroupId"),
        "ForceAttach": True if i.get("force") is None else i.get("force"),  # schema default true
        "VServerGroups": groups,
    }
    src = "alicloud/resource_alicloud_ess_scalinggroup_vserver_groups.go attachVServerGroups"
    return [Call("ess:AttachVServerGroups", ess.AttachVServerGroupsRequest, req, src)]
