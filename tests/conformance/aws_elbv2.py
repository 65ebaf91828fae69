"""Translators for `serve:` (components/aws/serve.py): the Network Load Balancer, its target group and listener
(elbv2), and the target group's attachment to the Auto Scaling group (autoscaling). `TF` paths as in aws_translate.

pulumi-aws names a load balancer and a target group with at most 32 characters (botocore elbv2
CreateLoadBalancerInput.Name and CreateTargetGroupInput.Name: "can have a maximum of 32 characters"); a name_prefix
is completed by the provider with a unique suffix (elbv2 validate.go validNamePrefix: at most 6 characters)."""

from __future__ import annotations

from typing import Any

from .aws_translate import Resource, tag_list, translates

_NAME_MAX = 32
_PREFIXED = "0123456789abcdefghijklmnop"  # resource.PrefixedUniqueId: the 26 characters the provider appends


def _name(r: Resource) -> str:
    prefix = r.inputs.get("namePrefix")
    if prefix is not None:
        return f"{prefix}{_PREFIXED}"
    return r.physical(maxlen=_NAME_MAX)


@translates("aws:lb/loadBalancer:LoadBalancer")
def _load_balancer(r: Resource) -> None:
    """elbv2/load_balancer.go resourceLoadBalancerCreate: Scheme internal only when `internal` is true (the API's
    default is internet-facing), subnets and security groups as given, the tags as the service's list."""
    i = r.inputs
    params: dict[str, Any] = {
        "Name": _name(r),
        "Type": i.get("loadBalancerType"),
        "Scheme": "internal" if i.get("internal") else None,
        "Subnets": i.get("subnets"),
        "SecurityGroups": i.get("securityGroups"),
        "Tags": tag_list(i.get("tags")),
    }
    r.call("elbv2", "CreateLoadBalancer", params, "elbv2/load_balancer.go resourceLoadBalancerCreate")
    timeout = i.get("idleTimeout")
    if timeout is not None:  # an Application Load Balancer's (serve.requestsPerNode)
        r.call(
            "elbv2",
            "ModifyLoadBalancerAttributes",
            {
                "LoadBalancerArn": f"<arn of {r.name}>",
                "Attributes": [{"Key": "idle_timeout.timeout_seconds", "Value": str(timeout)}],
            },
            "elbv2/load_balancer.go resourceLoadBalancerCreate (modifyLoadBalancerAttributes)",
        )


@translates("aws:lb/targetGroup:TargetGroup")
def _target_group(r: Resource) -> None:
    """elbv2/target_group.go resourceTargetGroupCreate: the health check's path and matcher only for a non-TCP check;
    then preserve_client_ip through ModifyTargetGroupAttributes."""
    i = r.inputs
    health = i.obj("healthCheck")
    hc: dict[str, Any] = {}
    if health is not None:
        protocol = health.get("protocol")
        hc = {
            "HealthCheckEnabled": health.get("enabled", True),
            "HealthCheckProtocol": protocol,
            "HealthCheckPort": health.get("port", "traffic-port"),
            "HealthCheckIntervalSeconds": health.get("interval"),
            "HealthyThresholdCount": health.get("healthyThreshold"),
            "UnhealthyThresholdCount": health.get("unhealthyThreshold"),
            "HealthCheckTimeoutSeconds": health.get("timeout"),
        }
        if protocol != "TCP":
            hc["HealthCheckPath"] = health.get("path")
            matcher = health.get("matcher")
            hc["Matcher"] = {"HttpCode": matcher} if matcher is not None else None
    params = {
        "Name": _name(r),
        "Protocol": i.get("protocol"),
        "Port": i.get("port"),
        "VpcId": i.get("vpcId"),
        "TargetType": i.get("targetType", "instance"),
        **hc,
        "Tags": tag_list(i.get("tags")),
    }
    r.call("elbv2", "CreateTargetGroup", params, "elbv2/target_group.go resourceTargetGroupCreate")
    preserve = i.get("preserveClientIp")
    if preserve is not None:
        r.call(
            "elbv2",
            "ModifyTargetGroupAttributes",
            {
                "TargetGroupArn": f"<arn of {r.name}>",
                "Attributes": [{"Key": "preserve_client_ip.enabled", "Value": str(preserve).lower()}],
            },
            "elbv2/target_group.go resourceTargetGroupCreate (ModifyTargetGroupAttributes)",
        )


@translates("aws:lb/listener:Listener")
def _listener(r: Resource) -> None:
    """elbv2/listener.go resourceListenerCreate: one certificate as Certificates, the forward action; then the TCP
    idle timeout through ModifyListenerAttributes (tcp.idle_timeout.seconds)."""
    i = r.inputs
    certificate = i.get("certificateArn")
    actions = [
        {"Type": a.get("type"), "TargetGroupArn": a.get("targetGroupArn"), "Order": a.get("order")}
        for a in i.objs("defaultActions")
    ]
    params = {
        "LoadBalancerArn": i.get("loadBalancerArn"),
        "Port": i.get("port"),
        "Protocol": i.get("protocol"),
        "SslPolicy": i.get("sslPolicy"),
        "Certificates": [{"CertificateArn": certificate}] if certificate else None,
        "AlpnPolicy": [i.get("alpnPolicy")] if i.get("alpnPolicy") else None,
        "DefaultActions": actions,
        "Tags": tag_list(i.get("tags")),
    }
    r.call("elbv2", "CreateListener", params, "elbv2/listener.go resourceListenerCreate")
    timeout = i.get("tcpIdleTimeoutSeconds")
    if timeout is not None:
        r.call(
            "elbv2",
            "ModifyListenerAttributes",
            {
                "ListenerArn": f"<arn of {r.name}>",
                "Attributes": [{"Key": "tcp.idle_timeout.seconds", "Value": str(timeout)}],
            },
            "elbv2/listener.go resourceListenerCreate (modifyListenerAttributes)",
        )


@translates("aws:autoscaling/attachment:Attachment")
def _attachment(r: Resource) -> None:
    """autoscaling/attachment.go resourceAttachmentCreate: a target group ARN through AttachLoadBalancerTargetGroups
    (a classic ELB name through AttachLoadBalancers)."""
    i = r.inputs
    group = i.get("autoscalingGroupName")
    if (arn := i.get("lbTargetGroupArn")) is not None:
        params = {"AutoScalingGroupName": group, "TargetGroupARNs": [arn]}
        r.call("autoscaling", "AttachLoadBalancerTargetGroups", params, "autoscaling/attachment.go (target group)")
    if (elb := i.get("elb")) is not None:
        params = {"AutoScalingGroupName": group, "LoadBalancerNames": [elb]}
        r.call("autoscaling", "AttachLoadBalancers", params, "autoscaling/attachment.go (classic ELB)")
