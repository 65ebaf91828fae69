"""`serve:` on Alibaba Cloud: the intranet Classic Load Balancer of the shipped inference fleet (in the node vSwitch,
billed by usage), its vServer group and listener with the health check on the serving port, the ESS group's
attachment to the vServer group (after the listener), the node security group's rules for CLB's health checks and the
VPC's clients on the serving port only, HTTPS with a certificate, tcp, the plan summary's endpoint, the bill, the
policy, a stack without serve planning as before, and one keyed line per input that is not built."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from components.errors import ConfigError, ConfigErrors
from components.layout import alicloud as ali_layout
from components.plan import load_stack
from components.policy import Resource, evaluate
from components.spec import build_spec

from .conftest import ROOT, one, plan_json, plan_values, resources_of

FLEET = {"instanceType": "ecs.gn7i-c8g1.2xlarge", "nodes": 1, "minNodes": 0, "maxNodes": 4, "zone": "cn-hangzhou-k"}
K = "gpu-cluster:cluster.serve"
CERT = "1234567890123456_18f2a4b7c3d_1234567890_-987654321"  # an SLB server certificate id (its shape)


def fleet(**cluster: Any) -> dict[str, Any]:
    return {
        "gpu-cluster:cloud": "alicloud",
        "alicloud:region": "cn-hangzhou",
        "gpu-cluster:cluster": {**FLEET, **cluster},
    }


def by_name(plan: Any, type_suffix: str) -> dict[str, dict[str, Any]]:
    return {r["name"]: r["inputs"] for r in resources_of(plan, type_suffix)}


@pytest.fixture(scope="module")
def shipped(stack_plan):
    return stack_plan("alicloud-inference-fleet")


def test_shipped_fleet_gets_an_intranet_clb_billed_by_usage_in_the_node_vswitch(shipped):
    lb = one(shipped, "slb/applicationLoadBalancer:ApplicationLoadBalancer")["inputs"]
    assert (lb["addressType"], lb["vswitchId"]) == ("intranet", "<id of ali-inference-alicloud-nodes>")
    assert (lb["paymentType"], lb["instanceChargeType"]) == ("PayAsYouGo", "PayByCLCU")
    assert lb["loadBalancerName"] == "ali-inference-serve"
    assert lb["tags"]["gpu-cluster:cluster"] == "ali-inference"


def test_shipped_fleet_listener_checks_the_health_path_on_the_serving_port(shipped):
    listener = one(shipped, "slb/listener:Listener")["inputs"]
    assert (listener["protocol"], listener["frontendPort"], listener["backendPort"]) == ("tcp", 8000, 8000)
    assert listener["loadBalancerId"] == "<id of ali-inference-alicloud-serve-lb>"
    assert listener["serverGroupId"] == "<id of ali-inference-alicloud-serve-group>"
    health = {k: v for k, v in listener.items() if k.startswith("health") or k.endswith("Threshold")}
    assert health == {
        "healthCheckType": "http",
        "healthCheckUri": "/health",
        "healthCheckHttpCode": "http_2xx",
        "healthCheckInterval": 2,
        "healthCheckTimeout": 5,
        "healthyThreshold": 3,
        "unhealthyThreshold": 3,
    }
    assert "serverCertificateId" not in listener and "establishedTimeout" not in listener


def test_the_scaling_group_is_attached_to_the_vserver_group_after_the_listener(shipped):
    attachment = one(shipped, "ess/scalingGroupVServerGroups:ScalingGroupVServerGroups")
    assert attachment["inputs"]["scalingGroupId"] == "<id of ali-inference-alicloud-ess>"
    assert attachment["inputs"]["vserverGroups"] == [
        {
            "loadbalancerId": "<id of ali-inference-alicloud-serve-lb>",
            "vserverAttributes": [
                {"vserverGroupId": "<id of ali-inference-alicloud-serve-group>", "port": 8000, "weight": 100}
            ],
        }
    ]
    listener = one(shipped, "slb/listener:Listener")["urn"]
    registered = next(r for r in shipped.resources if r.urn == attachment["urn"])
    assert listener in registered.dependencies  # ESS attaches only a CLB whose listener checks health
    group = one(shipped, "ess/scalingGroup:ScalingGroup")["inputs"]
    assert "loadbalancerIds" not in group  # the group's own inputs are as without serve


def test_clb_health_checks_and_the_vpc_reach_the_serving_port_only(shipped):
    rules = by_name(shipped, "ecs/securityGroupRule:SecurityGroupRule")
    probe = rules["ali-inference-alicloud-sg-serve-probe-100.64.0.0_10"]
    clients = rules["ali-inference-alicloud-sg-serve-clients"]
    for rule in (probe, clients):
        assert (rule["type"], rule["ipProtocol"], rule["portRange"], rule["policy"]) == (
            "ingress",
            "tcp",
            "8000/8000",
            "accept",
        )
        assert rule["securityGroupId"] == "<id of ali-inference-alicloud-sg>"
    assert (probe["cidrIp"], clients["cidrIp"]) == ("100.64.0.0/10", "10.62.0.0/16")


def test_the_summary_gives_the_address_the_check_and_the_load_balancer_hour(shipped):
    summary = plan_json(shipped)["summary"]
    serve = summary["serve"]
    address = "<address of ali-inference-alicloud-serve-lb>"
    assert (serve["endpoint"], serve["internal"], serve["port"]) == (address, True, 8000)
    assert serve["check"] == f"curl -fsS http://{address}:8000/health"
    assert "10.62.0.0/16" in serve["from"]
    lb = next(i for i in summary["costs"]["items"] if i["item"] == "loadBalancer")
    assert (lb["hourly"], lb["currency"], lb["per"]) == (0.147, "CNY", "stack")
    assert summary["costs"]["totals"]["CNY"]["fixedHourly"] == 0.15  # what runs at minNodes 0: the CLB hour
    assert plan_json(shipped)["policy"] == []


def test_a_certificate_gets_an_https_listener_on_443_with_tls_12():
    plan = plan_values(fleet(serve={"port": 8000, "certificate": CERT}))
    listener = one(plan, "slb/listener:Listener")["inputs"]
    assert (listener["protocol"], listener["frontendPort"], listener["backendPort"]) == ("https", 443, 8000)
    assert (listener["serverCertificateId"], listener["tlsCipherPolicy"]) == (CERT, "tls_cipher_policy_1_2")
    assert (listener["healthCheck"], listener["healthCheckUri"]) == ("on", "/health")
    assert "healthCheckType" not in listener  # a TCP listener's setting
    serve = plan_json(plan)["summary"]["serve"]
    assert serve["protocol"] == "https" and serve["port"] == 443


def test_tcp_checks_a_connection_and_takes_the_idle_timeout():
    plan = plan_values(fleet(serve={"port": 9000, "protocol": "tcp", "idleTimeoutSeconds": 600}))
    listener = one(plan, "slb/listener:Listener")["inputs"]
    assert (listener["protocol"], listener["healthCheckType"], listener["establishedTimeout"]) == ("tcp", "tcp", 600)
    assert "healthCheckUri" not in listener and "healthCheckHttpCode" not in listener
    rules = by_name(plan, "ecs/securityGroupRule:SecurityGroupRule")
    assert rules["test-alicloud-sg-serve-clients"]["portRange"] == "9000/9000"
    assert plan_json(plan)["summary"]["serve"]["check"].startswith("nc -zv <address of ")


PUBLIC = ["203.0.113.0/24", "198.51.100.0/24"]


def test_public_is_an_internet_clb_whose_listener_admits_the_allowed_ranges_only():
    plan = plan_values(fleet(serve={"port": 8000, "protocol": "tcp", "public": True, "allowedCidrs": PUBLIC}))
    lb = one(plan, "slb/applicationLoadBalancer:ApplicationLoadBalancer")["inputs"]
    assert lb["addressType"] == "internet" and "vswitchId" not in lb
    acl = one(plan, "slb/acl:Acl")["inputs"]
    assert sorted(e["entry"] for e in acl["entryLists"]) == sorted(PUBLIC)
    listener = one(plan, "slb/listener:Listener")["inputs"]
    assert (listener["aclStatus"], listener["aclType"]) == ("on", "white")
    assert listener["aclId"] == "<id of test-alicloud-serve-acl>"
    # a TCP listener passes the clients' addresses: the node security group admits the same ranges on the port
    rules = by_name(plan, "ecs/securityGroupRule:SecurityGroupRule")
    public = {n: r["cidrIp"] for n, r in rules.items() if "-serve-public-" in n}
    assert sorted(public.values()) == sorted(PUBLIC)
    assert all(rules[n]["portRange"] == "8000/8000" for n in public)
    serve = plan_json(plan)["summary"]["serve"]
    assert serve["internal"] is False and "203.0.113.0/24" in serve["from"]
    assert [v for v in plan_json(plan)["policy"] if v["rule"] == "serve-private"] == []


def test_public_https_filters_at_the_listener_and_opens_no_internet_range_on_the_nodes():
    plan = plan_values(fleet(serve={"port": 8000, "certificate": CERT, "public": True, "allowedCidrs": PUBLIC}))
    listener = one(plan, "slb/listener:Listener")["inputs"]
    assert (listener["protocol"], listener["aclStatus"], listener["aclType"]) == ("https", "on", "white")
    rules = by_name(plan, "ecs/securityGroupRule:SecurityGroupRule")
    assert not [n for n in rules if "-serve-public-" in n]  # the HTTPS listener is a proxy: CLB's range only


def test_more_ranges_than_an_acl_holds_are_refused():
    cidrs = [f"203.{i // 256}.{i % 256}.0/24" for i in range(301)]
    spec = build_spec(fleet(serve={"port": 8000, "protocol": "tcp", "public": True, "allowedCidrs": cidrs}), "t")
    with pytest.raises(ConfigError) as info:
        ali_layout.plan(spec)
    assert info.value.key == f"{K}.allowedCidrs" and "at most 300" in info.value.message


def test_a_fleet_without_serve_plans_exactly_as_before():
    values = copy.deepcopy(load_stack(ROOT, "alicloud-inference-fleet").values)
    del values["gpu-cluster:cluster"]["serve"]
    plan = plan_values(values, "alicloud-inference-fleet")
    types = {r.type for r in plan.resources}
    assert not any(":slb/" in t or "VServerGroups" in t for t in types)
    assert not any("serve" in r.name for r in plan.resources)
    assert "serve" not in plan_json(plan)["summary"] or plan_json(plan)["summary"]["serve"] is None


@pytest.mark.parametrize(
    ("serve", "key", "words"),
    [
        ({"certificate": CERT, "idleTimeoutSeconds": 30}, f"{K}.idleTimeoutSeconds", "fixed idle timeout"),
        ({"protocol": "tcp", "idleTimeoutSeconds": 5}, f"{K}.idleTimeoutSeconds", "takes 10 to 900 seconds"),
    ],
)
def test_what_alicloud_does_not_build_is_refused_by_its_key(serve, key, words):
    with pytest.raises((ConfigError, ConfigErrors)) as info:
        build_spec(fleet(serve=serve), "test")
    errors = getattr(info.value, "errors", [info.value])
    assert [e.key for e in errors] == [key] and words in errors[0].message, errors


def test_an_existing_network_is_refused_with_its_reason():
    existing = {"vpcId": "vpc-bp1abc234def567gh890i", "subnetIds": ["vsw-bp1abc234def567gh890i"]}
    spec = build_spec(fleet(serve={"port": 8000}, network={"existing": existing}), "test")
    with pytest.raises(ConfigError) as info:
        ali_layout.plan(spec)  # before any resource
    assert info.value.key == K and "network.existing" in info.value.message


def test_policy_flags_an_internet_clb_unless_serve_is_public():
    facts = Resource("gpu-cluster:index:GpuCluster", {"stackFacts": {"cloud": "alicloud"}}, "urn:c", "c")
    for props in ({"addressType": "internet"}, {}):
        lb = Resource("alicloud:slb/applicationLoadBalancer:ApplicationLoadBalancer", props, "urn:l", "l")
        assert [v.rule for v in evaluate([facts, lb]) if v.rule == "serve-private"] == ["serve-private"]
    private = Resource("alicloud:slb/applicationLoadBalancer:ApplicationLoadBalancer", {"addressType": "intranet"},
                       "urn:l", "l")  # fmt: skip
    assert [v.rule for v in evaluate([facts, private]) if v.rule == "serve-private"] == []
