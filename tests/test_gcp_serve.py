"""`serve:` on GCP: the internal passthrough Network Load Balancer in front of the managed instance group (the
forwarding rule, the regional backend service with the group and the spot mix's floor group, the regional health
check on the serving port, the firewall rule for Google's probers), the endpoint in the plan summary, and the keyed
refusals of what is not built on GCP (public tcp, an idle timeout). The Application Load Balancer (a certificate,
public, requestsPerNode): tests/test_gcp_serve_alb.py."""

from __future__ import annotations

from typing import Any

import pytest

from components.catalog import fixed_prices
from components.errors import ConfigErrors
from components.spec import build_spec

from .conftest import gcp_values, one, plan_json, plan_values, resources_of

FLEET = {"gpu": "L4:2", "instanceType": "g2-standard-24", "nodes": 2, "minNodes": 2, "maxNodes": 4, "placement": "none"}
K = "gpu-cluster:cluster.serve"


def fleet(**cluster: Any) -> dict[str, Any]:
    return gcp_values(**{**FLEET, **cluster})


@pytest.fixture(scope="module")
def spot_mix():
    return plan_values(fleet(spot={"enabled": True, "onDemandBase": 1}, serve={"port": 8000}))


def test_the_endpoint_is_an_internal_forwarding_rule_in_the_node_subnet(spot_mix):
    rule = one(spot_mix, "compute/forwardingRule:ForwardingRule")["inputs"]
    assert (rule["loadBalancingScheme"], rule["ipProtocol"], rule["ports"]) == ("INTERNAL", "TCP", ["8000"])
    assert (rule["network"], rule["subnetwork"], rule["region"]) == (
        "<id of test-gcp-host>",
        "<id of test-gcp-nodes>",
        "us-central1",
    )
    assert rule["backendService"] == "<id of test-gcp-serve-backend>"


def test_both_groups_of_a_spot_mix_are_backends_checked_on_the_serving_port(spot_mix):
    backend = one(spot_mix, "compute/regionBackendService:RegionBackendService")["inputs"]
    assert (backend["loadBalancingScheme"], backend["protocol"]) == ("INTERNAL", "TCP")
    assert backend["healthChecks"] == "<id of test-gcp-serve-health>"
    groups = {b["group"] for b in backend["backends"]}
    migs = {
        f"<instance group of {r['name']}>" for r in resources_of(spot_mix, "instanceGroupManager:InstanceGroupManager")
    }
    assert groups == migs and len(groups) == 2  # the spot group and the on-demand floor
    assert {b["balancingMode"] for b in backend["backends"]} == {"CONNECTION"}
    check = one(spot_mix, "compute/regionHealthCheck:RegionHealthCheck")["inputs"]
    assert check["httpHealthCheck"] == {"port": 8000, "requestPath": "/health"}
    assert (check["checkIntervalSec"], check["timeoutSec"], check["healthyThreshold"], check["unhealthyThreshold"]) == (
        30,
        10,
        3,
        2,
    )


def test_google_probers_reach_the_serving_port_only(spot_mix):
    rules = {r["name"]: r["inputs"] for r in resources_of(spot_mix, "compute/firewall:Firewall")}
    probe = rules["test-gcp-serve-health-check"]
    assert probe["sourceRanges"] == ["130.211.0.0/22", "35.191.0.0/16"]
    assert probe["allows"] == [{"protocol": "tcp", "ports": ["8000"]}]
    assert probe["direction"] == "INGRESS"


def test_the_summary_gives_the_address_and_the_check_command(spot_mix):
    serve = plan_json(spot_mix)["summary"]["serve"]
    assert serve["endpoint"] == "<ip address of test-gcp-serve>"
    assert serve["check"] == "curl -fsS http://<ip address of test-gcp-serve>:8000/health"
    assert serve["internal"] is True
    costs = plan_json(spot_mix)["summary"]["costs"]
    (balancer,) = [i for i in costs["items"] if i["item"] == "loadBalancer"]  # its forwarding rule's hour
    assert balancer["name"].startswith("serving load balancer (internal passthrough")
    rate = fixed_prices.load("gcp").item("loadBalancer").hourly
    assert (balancer["hourly"], balancer["per"], balancer["currency"], balancer["unpriced"]) == (
        rate,
        "stack",
        "USD",
        None,
    )


def test_tcp_checks_a_connection():
    plan = plan_values(fleet(serve={"port": 9000, "protocol": "tcp"}))
    check = one(plan, "compute/regionHealthCheck:RegionHealthCheck")["inputs"]
    assert check["tcpHealthCheck"] == {"port": 9000} and "httpHealthCheck" not in check
    assert plan_json(plan)["summary"]["serve"]["check"] == "nc -zv <ip address of test-gcp-serve> 9000"


@pytest.mark.parametrize(
    ("serve", "key", "words"),
    [
        ({"public": True, "protocol": "tcp", "allowedCidrs": ["203.0.113.0/24"]}, f"{K}.protocol", "not built on gcp"),
        ({"public": True, "allowedCidrs": ["203.0.113.0/24"]}, f"{K}.certificate", "required with public: true"),
        ({"protocol": "tcp", "requestsPerNode": 4}, f"{K}.requestsPerNode", "applies to protocol http"),
        ({"protocol": "tcp", "idleTimeoutSeconds": 600}, f"{K}.idleTimeoutSeconds", "not taken by the internal"),
    ],
)
def test_what_gcp_does_not_build_is_refused_by_its_key(serve, key, words):
    with pytest.raises(ConfigErrors) as info:
        build_spec(fleet(serve=serve), "test")
    errors = [(e.key, e.message) for e in info.value.errors]
    assert [k for k, _ in errors] == [key] and words in errors[0][1], errors


def test_policy_flags_an_external_forwarding_rule_unless_serve_is_public(spot_mix):
    from components.policy import Resource, evaluate

    facts = Resource("gpu-cluster:index:GpuCluster", {"stackFacts": {"cloud": "gcp"}}, "urn:c", "c")
    for props in ({"loadBalancingScheme": "EXTERNAL"}, {}):  # unset is EXTERNAL (pulumi-gcp's default)
        rule = Resource("gcp:compute/forwardingRule:ForwardingRule", props, "urn:r", "r")
        assert [v.rule for v in evaluate([facts, rule]) if v.rule == "serve-private"] == ["serve-private"]
    assert plan_json(spot_mix)["policy"] == []  # the internal rule passes
