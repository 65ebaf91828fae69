"""`serve:` on AWS: the internal Network Load Balancer of the shipped inference fleet (scheme, subnet, listener,
target group health check, the attachment to the Auto Scaling group, the security-group rules), TLS when public, tcp,
an existing network, the plan summary's endpoint, the bill, the policy, and one keyed line per bad input."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from components.errors import ConfigError, ConfigErrors
from components.plan import load_stack
from components.plan.render import summary_rows
from components.policy import Resource, evaluate
from components.spec import build_spec

from .conftest import ROOT, aws_values, one, plan_json, plan_values, resources_of

CERT = "arn:aws:acm:us-east-1:123456789012:certificate/0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b"
FLEET = {"instanceType": "g6e.xlarge", "gpu": None, "nodes": 1, "maxNodes": 4, "placement": "none"}


def fleet(**cluster: Any) -> dict[str, Any]:
    return aws_values(**{**FLEET, **cluster})


def by_name(plan: Any, type_suffix: str) -> dict[str, dict[str, Any]]:
    return {r["name"]: r["inputs"] for r in resources_of(plan, type_suffix)}


@pytest.fixture(scope="module")
def shipped(stack_plan):
    return stack_plan("aws-inference-fleet")


@pytest.fixture(scope="module")
def public_tls():
    return plan_values(
        fleet(serve={"port": 8000, "public": True, "certificate": CERT, "allowedCidrs": ["203.0.113.0/24"]})
    )


def test_shipped_fleet_gets_an_internal_network_load_balancer_in_the_node_subnet(shipped):
    lb = one(shipped, "lb/loadBalancer:LoadBalancer")["inputs"]
    assert lb["loadBalancerType"] == "network"
    assert lb["internal"] is True
    assert lb["subnets"] == ["<id of inference-aws-nodes>"]
    assert lb["securityGroups"] == ["<id of inference-aws-serve-sg>"]
    assert "name" not in lb and "namePrefix" not in lb  # Pulumi's autoname fits the 32 characters


def test_shipped_fleet_listener_forwards_port_8000_to_the_target_group(shipped):
    listener = one(shipped, "lb/listener:Listener")["inputs"]
    assert (listener["protocol"], listener["port"]) == ("TCP", 8000)
    assert listener["loadBalancerArn"] == "<arn of inference-aws-lb>"
    assert listener["defaultActions"] == [{"type": "forward", "targetGroupArn": "<arn of inference-aws-tg>"}]
    assert "certificateArn" not in listener and "sslPolicy" not in listener


def test_shipped_fleet_target_group_checks_the_health_path_on_the_serving_port(shipped):
    tg = one(shipped, "lb/targetGroup:TargetGroup")["inputs"]
    assert (tg["protocol"], tg["port"], tg["targetType"], tg["vpcId"]) == (
        "TCP",
        8000,
        "instance",
        "<id of inference-aws-vpc>",
    )
    assert tg["healthCheck"] == {
        "enabled": True,
        "protocol": "HTTP",
        "port": "traffic-port",
        "path": "/health",
        "matcher": "200-299",
        "interval": 30,
        "healthyThreshold": 3,
        "unhealthyThreshold": 2,
    }
    # a node calling its own endpoint is not routed back to itself with its own address (catalog clientIpPreserved)
    assert tg["preserveClientIp"] == "false"


def test_shipped_fleet_attaches_the_target_group_to_its_group_without_touching_the_group(shipped):
    attachment = one(shipped, "autoscaling/attachment:Attachment")["inputs"]
    assert attachment == {
        "autoscalingGroupName": "<autoname:inference-aws-asg>",
        "lbTargetGroupArn": "<arn of inference-aws-tg>",
    }
    values = copy.deepcopy(load_stack(ROOT, "aws-inference-fleet").values)
    del values["gpu-cluster:cluster"]["serve"]
    before = plan_json(plan_values(values, "aws-inference-fleet"))
    after = plan_json(shipped)
    old = {r["urn"]: r for r in before["resources"] if r["custom"]}
    new = {r["urn"]: r for r in after["resources"] if r["custom"]}
    assert {u: new[u] for u in old} == old  # every resource of the fleet as it was, the group included
    added = sorted(u.rsplit("::", 1)[1] for u in set(new) - set(old))
    assert added == [
        "inference-aws-lb",
        "inference-aws-listener",
        "inference-aws-serve-attachment",
        "inference-aws-serve-sg",
        "inference-aws-serve-sg-in-10.70.0.0_16",
        "inference-aws-serve-sg-out-nodes",
        "inference-aws-sg-serve",
        "inference-aws-tg",
    ]


def test_only_the_load_balancer_reaches_the_nodes_on_the_serving_port(shipped):
    ingress = by_name(shipped, "vpc/securityGroupIngressRule:SecurityGroupIngressRule")
    egress = by_name(shipped, "vpc/securityGroupEgressRule:SecurityGroupEgressRule")
    assert ingress["inference-aws-sg-serve"] == {
        "securityGroupId": "<id of inference-aws-sg>",
        "referencedSecurityGroupId": "<id of inference-aws-serve-sg>",
        "ipProtocol": "tcp",
        "fromPort": 8000,
        "toPort": 8000,
        "description": "serve: clients and health checks through the load balancer",
    }
    # private: the clients are the VPC, on the listener's port only
    client = ingress["inference-aws-serve-sg-in-10.70.0.0_16"]
    assert (client["securityGroupId"], client["cidrIpv4"], client["fromPort"], client["toPort"]) == (
        "<id of inference-aws-serve-sg>",
        "10.70.0.0/16",
        8000,
        8000,
    )
    out = egress["inference-aws-serve-sg-out-nodes"]
    assert (out["referencedSecurityGroupId"], out["fromPort"], out["toPort"]) == (
        "<id of inference-aws-sg>",
        8000,
        8000,
    )
    # nothing else was opened on the node group
    assert [n for n in ingress if n.startswith("inference-aws-sg-")] == [
        "inference-aws-sg-self-in",
        "inference-aws-sg-serve",
    ]


def test_the_plan_summary_gives_the_endpoint_and_the_exact_check_command(shipped):
    serve = plan_json(shipped)["summary"]["serve"]
    assert serve["endpoint"] == "<dns name of inference-aws-lb>"
    assert (serve["port"], serve["protocol"], serve["internal"]) == (8000, "http", True)
    assert serve["check"] == "curl -fsS http://<dns name of inference-aws-lb>:8000/health"
    assert serve["from"].startswith("inside the VPC (10.70.0.0/16)")
    rows = dict(summary_rows(shipped))
    assert rows["serve"].startswith(
        "http://<dns name of inference-aws-lb>:8000 (internal; health check HTTP :8000/health"
    )
    assert rows["serve check"].startswith("curl -fsS http://<dns name of inference-aws-lb>:8000/health (from inside")
    assert rows["in transit"].endswith("; serve :8000 not TLS")


def test_the_load_balancer_hour_is_on_the_bill(shipped):
    items = plan_json(shipped)["summary"]["costs"]["items"]
    balancer = next(i for i in items if i["item"] == "loadBalancer")
    assert (balancer["name"], balancer["per"], balancer["hourly"]) == (
        "serving load balancer (Network Load Balancer)",
        "stack",
        0.0225,
    )


def test_a_stack_without_serve_has_no_endpoint(stack_plan):
    plan = stack_plan("aws-dev")
    assert plan_json(plan)["summary"]["serve"] is None
    assert resources_of(plan, "lb/loadBalancer:LoadBalancer") == []


def test_public_http_terminates_tls_on_443_in_the_public_subnet(public_tls):
    lb = one(public_tls, "lb/loadBalancer:LoadBalancer")["inputs"]
    assert (lb["internal"], lb["subnets"]) == (False, ["<id of test-aws-public>"])
    listener = one(public_tls, "lb/listener:Listener")["inputs"]
    assert (listener["protocol"], listener["port"], listener["certificateArn"], listener["sslPolicy"]) == (
        "TLS",
        443,
        CERT,
        "ELBSecurityPolicy-TLS13-1-2-Res-2021-06",
    )
    tg = one(public_tls, "lb/targetGroup:TargetGroup")["inputs"]
    assert (tg["port"], tg["healthCheck"]["protocol"], tg["healthCheck"]["path"]) == (8000, "HTTP", "/health")
    clients = {
        r["cidrIpv4"]: (r["fromPort"], r["toPort"])
        for r in resources_of(public_tls, "vpc/securityGroupIngressRule:SecurityGroupIngressRule")
        if r["inputs"]["securityGroupId"] == "<id of test-aws-serve-sg>"
        for r in [r["inputs"]]
    }
    assert clients == {"203.0.113.0/24": (443, 443)}  # the allowed clients only, on the TLS port only
    serve = plan_json(public_tls)["summary"]["serve"]
    assert serve["check"] == (
        "curl -fsS --connect-to ::<dns name of test-aws-lb>: https://<a name on the certificate>/health"
    )
    assert plan_json(public_tls)["policy"] == []
    assert dict(summary_rows(public_tls))["in transit"].endswith(
        "; serve :443 TLS at the load balancer, plain to the nodes"
    )


def test_tcp_checks_a_connection_and_takes_the_idle_timeout():
    plan = plan_values(fleet(serve={"port": 9000, "protocol": "tcp", "idleTimeoutSeconds": 3600}))
    tg = one(plan, "lb/targetGroup:TargetGroup")["inputs"]
    assert tg["healthCheck"]["protocol"] == "TCP"
    assert "path" not in tg["healthCheck"] and "matcher" not in tg["healthCheck"]
    listener = one(plan, "lb/listener:Listener")["inputs"]
    assert (listener["protocol"], listener["port"], listener["tcpIdleTimeoutSeconds"]) == ("TCP", 9000, 3600)
    assert plan_json(plan)["summary"]["serve"]["check"] == "nc -zv <dns name of test-aws-lb> 9000"


def test_an_existing_network_admits_its_own_range_read_at_deploy():
    existing = {"vpcId": "vpc-0123456789abcdef0", "subnetIds": ["subnet-0123456789abcdef0"]}
    plan = plan_values(fleet(network={"existing": existing}, serve={"port": 8000}))
    clients = [
        r["inputs"]
        for r in resources_of(plan, "vpc/securityGroupIngressRule:SecurityGroupIngressRule")
        if r["name"] == "test-aws-serve-sg-in-vpc"
    ]
    assert [c["cidrIpv4"] for c in clients] == ["<cidr block of vpc-0123456789abcdef0>"]
    assert one(plan, "lb/loadBalancer:LoadBalancer")["inputs"]["subnets"] == ["subnet-0123456789abcdef0"]


def test_a_long_cluster_name_gets_a_name_prefix_within_the_32_characters():
    plan = plan_values(fleet(name="abcdefghij-abcdefghij-abcdefghi", serve={"port": 8000}))
    assert one(plan, "lb/loadBalancer:LoadBalancer")["inputs"]["namePrefix"] == "abcdef"
    assert one(plan, "lb/targetGroup:TargetGroup")["inputs"]["namePrefix"] == "abcdef"


def errors_of(values: dict[str, Any]) -> list[tuple[str, str]]:
    with pytest.raises(ConfigErrors) as info:
        build_spec(values, "test")
    return [(e.key, e.message) for e in info.value.errors]


K = "gpu-cluster:cluster.serve"


@pytest.mark.parametrize(
    ("cluster", "key", "words"),
    [
        ({"serve": {"port": 8000}, "scheduler": "slurm"}, K, "not with scheduler slurm"),
        ({"serve": {"port": 8000}, "scheduler": "kubernetes"}, K, "Kubernetes serves through its own Services"),
        ({"serve": {"port": 8000}, "nodeGroup": "instances", "maxNodes": 1}, K, "needs nodeGroup: managed"),
        ({"serve": {"protocol": "tcp", "healthPath": "/health"}}, f"{K}.healthPath", "applies to protocol http"),
        ({"serve": {"protocol": "tcp", "certificate": CERT}}, f"{K}.certificate", "applies to protocol http"),
        ({"serve": {"public": True, "allowedCidrs": ["203.0.113.0/24"]}}, f"{K}.certificate", "required with public"),
        ({"serve": {"allowedCidrs": ["203.0.113.0/24"]}}, f"{K}.allowedCidrs", "applies to public: true"),
        ({"serve": {"public": True, "certificate": CERT}}, f"{K}.allowedCidrs", "empty, but public is true"),
        (
            {"serve": {"public": True, "certificate": CERT, "allowedCidrs": ["0.0.0.0/0"]}},
            f"{K}.allowedCidrs",
            "0.0.0.0/0 opens the endpoint",
        ),
        ({"serve": {"protocol": "tcp", "idleTimeoutSeconds": 30}}, f"{K}.idleTimeoutSeconds", "takes 60 to 6000"),
        ({"serve": {"certificate": CERT, "idleTimeoutSeconds": 600}}, f"{K}.idleTimeoutSeconds", "TLS listener"),
    ],
)
def test_bad_serve_input_gets_one_keyed_line(cluster, key, words):
    errors = errors_of(fleet(**cluster))
    assert [k for k, _ in errors] == [key]
    assert words in errors[0][1]


def test_every_problem_of_a_serve_block_is_reported_at_once():
    errors = errors_of(
        fleet(serve={"protocol": "tcp", "healthPath": "/h", "certificate": CERT, "allowedCidrs": ["203.0.113.0/24"]})
    )
    assert [k for k, _ in errors] == [f"{K}.healthPath", f"{K}.certificate", f"{K}.allowedCidrs"]


def test_serve_is_refused_where_it_is_not_built_yet():
    values = copy.deepcopy(load_stack(ROOT, "tencentcloud-dev").values)
    values["gpu-cluster:cluster"]["serve"] = {"port": 8000}
    errors = errors_of(values)
    assert errors == [
        (K, "not built on tencentcloud yet (built on: alicloud, aws, azure, gcp; docs/serving.md); remove it")
    ]


@pytest.mark.parametrize(
    ("network", "words"),
    [
        ({"egress": "none"}, "no subnet of the cluster routes to the internet"),
        (
            {"existing": {"vpcId": "vpc-0123456789abcdef0", "subnetIds": ["subnet-0123456789abcdef0"]}},
            "network.existing",
        ),
    ],
)
def test_a_public_endpoint_without_a_way_to_the_internet_is_refused_before_any_resource(network, words):
    from components.layout import aws as aws_layout

    spec = build_spec(
        fleet(network=network, serve={"public": True, "certificate": CERT, "allowedCidrs": ["203.0.113.0/24"]}),
        "test",
    )
    with pytest.raises(ConfigError) as info:
        aws_layout.plan(spec)
    assert (info.value.key, words in info.value.message) == (f"{K}.public", True)


def stack_facts(**facts: Any) -> Resource:
    base = {"cloud": "aws", "publicIp": False, "spot": False, "hourlyUsd": 1.0, "maxHourlyUsd": None}
    return Resource("gpu-cluster:index:GpuCluster", {"stackFacts": {**base, **facts}}, "urn:c", "c")


@pytest.mark.parametrize("internal", [False, None])  # unset is internet-facing (pulumi-aws default false)
def test_policy_flags_an_internet_facing_load_balancer_unless_serve_is_public(internal):
    props = (
        {"loadBalancerType": "network"} if internal is None else {"loadBalancerType": "network", "internal": internal}
    )
    lb = Resource("aws:lb/loadBalancer:LoadBalancer", props, "urn:lb", "lb")
    found = [v for v in evaluate([stack_facts(), lb]) if v.rule == "serve-private"]
    assert [(v.level, v.urn) for v in found] == [("mandatory", "urn:lb")]
    assert [v for v in evaluate([stack_facts(servePublic=True), lb]) if v.rule == "serve-private"] == []
    private = Resource("aws:lb/loadBalancer:LoadBalancer", {"internal": True}, "urn:lb", "lb")
    assert [v for v in evaluate([stack_facts(), private]) if v.rule == "serve-private"] == []


# --- serve.requestsPerNode: the Application Load Balancer (catalog/serving/aws.yaml application) ---


@pytest.fixture(scope="module")
def alb(stack_plan):
    return stack_plan("aws-inference-alb")


def test_requests_per_node_takes_an_internal_application_load_balancer_in_two_zones(alb):
    lb = one(alb, "lb/loadBalancer:LoadBalancer")["inputs"]
    assert (lb["loadBalancerType"], lb["internal"]) == ("application", True)
    assert lb["subnets"] == ["<id of inference-aws-nodes>", "<id of inference-aws-serve-b>"]
    assert lb["securityGroups"] == ["<id of inference-aws-serve-sg>"]
    assert "idleTimeout" not in lb  # the load balancer's default (60 s) unless idleTimeoutSeconds


def test_the_second_subnet_is_a_secondary_block_in_another_zone_routed_like_the_node_subnet(alb):
    block = one(alb, "ec2/vpcIpv4CidrBlockAssociation:VpcIpv4CidrBlockAssociation")
    assert (block["name"], block["inputs"]) == (
        "inference-aws-serve-cidr",
        {"vpcId": "<id of inference-aws-vpc>", "cidrBlock": "100.64.0.32/27"},
    )
    subnet = by_name(alb, "ec2/subnet:Subnet")["inference-aws-serve-b"]
    assert (subnet["cidrBlock"], subnet["vpcId"], subnet["mapPublicIpOnLaunch"]) == (
        "100.64.0.32/27",
        "<id of inference-aws-vpc>",
        False,
    )
    # the zone other than the nodes' us-east-1a among the region's available ones (the mock's answer)
    assert subnet["availabilityZone"] == "<first available zone in us-east-1>"
    rta = by_name(alb, "ec2/routeTableAssociation:RouteTableAssociation")["inference-aws-serve-b-rta"]
    assert rta == {"subnetId": "<id of inference-aws-serve-b>", "routeTableId": "<id of inference-aws-nodes-rt>"}
    node = by_name(alb, "ec2/subnet:Subnet")["inference-aws-nodes"]
    assert (node["cidrBlock"], node["availabilityZone"]) == ("10.71.0.0/17", "us-east-1a")  # the nodes stay


def test_the_application_target_group_speaks_http_and_checks_the_health_path(alb):
    tg = one(alb, "lb/targetGroup:TargetGroup")["inputs"]
    assert (tg["protocol"], tg["port"], tg["targetType"]) == ("HTTP", 8000, "instance")
    assert tg["healthCheck"] == {
        "enabled": True,
        "protocol": "HTTP",
        "port": "traffic-port",
        "path": "/health",
        "matcher": "200-299",
        "interval": 30,
        "healthyThreshold": 3,
        "unhealthyThreshold": 2,
    }
    assert "preserveClientIp" not in tg  # a Network Load Balancer's attribute
    listener = one(alb, "lb/listener:Listener")["inputs"]
    assert (listener["protocol"], listener["port"]) == ("HTTP", 8000)
    assert listener["defaultActions"] == [{"type": "forward", "targetGroupArn": "<arn of inference-aws-tg>"}]
    assert "tcpIdleTimeoutSeconds" not in listener
    attachment = one(alb, "autoscaling/attachment:Attachment")["inputs"]
    assert attachment["lbTargetGroupArn"] == "<arn of inference-aws-tg>"


def test_a_policy_tracks_the_requests_per_target_beside_the_gpu_policy(alb):
    policies = by_name(alb, "autoscaling/policy:Policy")
    assert sorted(policies) == ["inference-aws-scaling-gpu", "inference-aws-scaling-requests"]
    requests = policies["inference-aws-scaling-requests"]
    assert requests == {
        "autoscalingGroupName": "<autoname:inference-aws-asg>",
        "policyType": "TargetTrackingScaling",
        "estimatedInstanceWarmup": 600,
        "targetTrackingConfiguration": {
            # ALBRequestCountPerTarget is a count per minute: 4 requests a second per node
            "targetValue": 240,
            "predefinedMetricSpecification": {
                "predefinedMetricType": "ALBRequestCountPerTarget",
                "resourceLabel": "<arn suffix of inference-aws-lb>/<arn suffix of inference-aws-tg>",
            },
        },
    }


def test_the_endpoint_output_names_what_the_request_rate_scales(alb, shipped):
    assert plan_json(alb)["summary"]["serve"]["scaling"] == {
        "metric": "ALBRequestCountPerTarget",
        "targetPerMinute": 240,
    }
    assert "scaling" not in plan_json(shipped)["summary"]["serve"]


def test_the_application_load_balancer_hour_is_on_the_bill(alb):
    items = plan_json(alb)["summary"]["costs"]["items"]
    balancer = next(i for i in items if i["item"] == "applicationLoadBalancer")
    assert (balancer["name"], balancer["per"], balancer["hourly"]) == (
        "serving load balancer (Application Load Balancer)",
        "stack",
        0.0225,
    )


def test_public_tls_requests_per_node_is_internet_facing_https_from_the_public_subnets():
    plan = plan_values(
        fleet(
            serve={
                "port": 8000,
                "public": True,
                "certificate": CERT,
                "allowedCidrs": ["203.0.113.0/24"],
                "requestsPerNode": 10,
                "idleTimeoutSeconds": 900,
            }
        )
    )
    lb = one(plan, "lb/loadBalancer:LoadBalancer")["inputs"]
    assert (lb["internal"], lb["subnets"], lb["idleTimeout"]) == (
        False,
        ["<id of test-aws-public>", "<id of test-aws-serve-b>"],
        900,
    )
    rta = by_name(plan, "ec2/routeTableAssociation:RouteTableAssociation")["test-aws-serve-b-rta"]
    assert rta["routeTableId"] == "<id of test-aws-public-rt>"  # to the internet gateway, like the NAT's subnet
    listener = one(plan, "lb/listener:Listener")["inputs"]
    assert (listener["protocol"], listener["port"], listener["certificateArn"], listener["sslPolicy"]) == (
        "HTTPS",
        443,
        CERT,
        "ELBSecurityPolicy-TLS13-1-2-Res-2021-06",
    )
    clients = {
        r["cidrIpv4"]: (r["fromPort"], r["toPort"])
        for r in resources_of(plan, "vpc/securityGroupIngressRule:SecurityGroupIngressRule")
        if r["inputs"]["securityGroupId"] == "<id of test-aws-serve-sg>"
        for r in [r["inputs"]]
    }
    assert clients == {"203.0.113.0/24": (443, 443)}
    policy = by_name(plan, "autoscaling/policy:Policy")["test-aws-scaling-requests"]
    assert policy["targetTrackingConfiguration"]["targetValue"] == 600
    assert "estimatedInstanceWarmup" not in policy  # no scaling block: the group's default
    # the policy moves the group: `pulumi up` must not put the deploy count back
    assert one(plan, "autoscaling/group:Group")["ignoreChanges"] == ["desiredCapacity"]


R = "gpu-cluster:cluster.serve.requestsPerNode"


@pytest.mark.parametrize(
    ("serve", "key", "words"),
    [
        ({"protocol": "tcp", "requestsPerNode": 4}, R, "applies to protocol http"),
        ({"requestsPerNode": 4, "idleTimeoutSeconds": 5000}, f"{K}.idleTimeoutSeconds", "takes 1 to 4000"),
    ],
)
def test_bad_requests_per_node_input_gets_one_keyed_line(serve, key, words):
    errors = errors_of(fleet(serve=serve))
    assert [k for k, _ in errors] == [key]
    assert words in errors[0][1]


def test_requests_per_node_takes_a_certificate_with_an_idle_timeout():
    spec = build_spec(fleet(serve={"certificate": CERT, "requestsPerNode": 4, "idleTimeoutSeconds": 600}), "test")
    assert spec.serve is not None and spec.serve.idle_timeout_seconds == 600  # the ALB's timeout covers HTTPS


def test_requests_per_node_with_an_existing_network_is_refused_before_any_resource():
    from components.layout import aws as aws_layout

    existing = {"vpcId": "vpc-0123456789abcdef0", "subnetIds": ["subnet-0123456789abcdef0"]}
    spec = build_spec(fleet(network={"existing": existing}, serve={"port": 8000, "requestsPerNode": 4}), "test")
    with pytest.raises(ConfigError) as info:
        aws_layout.plan(spec)
    assert info.value.key == R
    assert "needs subnets in two Availability Zones" in info.value.message
    # public too: both refusals at once
    both = fleet(
        network={"existing": existing},
        serve={"public": True, "certificate": CERT, "allowedCidrs": ["203.0.113.0/24"], "requestsPerNode": 4},
    )
    with pytest.raises(ConfigErrors) as many:
        aws_layout.plan(build_spec(both, "test"))
    assert [e.key for e in many.value.errors] == [f"{K}.public", R]


def test_adding_requests_per_node_to_the_running_fleet_changes_only_its_endpoint(shipped, alb):
    values = copy.deepcopy(load_stack(ROOT, "aws-inference-fleet").values)
    values["gpu-cluster:cluster"]["serve"]["requestsPerNode"] = 4
    before = {r["urn"]: r for r in plan_json(shipped)["resources"] if r["custom"]}
    after = {r["urn"]: r for r in plan_json(plan_values(values, "aws-inference-fleet"))["resources"] if r["custom"]}
    assert set(before) <= set(after)  # every URN stays: the endpoint's resources change in place or are replaced
    added = sorted(u.rsplit("::", 1)[1] for u in set(after) - set(before))
    assert added == [
        "inference-aws-scaling-requests",
        "inference-aws-serve-b",
        "inference-aws-serve-b-rta",
        "inference-aws-serve-cidr",
    ]
    changed = sorted(u.rsplit("::", 1)[1] for u in before if before[u] != after[u])
    # the load balancer becomes an Application one (a replacement, in the diff), its target group speaks HTTP
    assert changed == ["inference-aws-lb", "inference-aws-listener", "inference-aws-tg"]
