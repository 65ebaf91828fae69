"""`serve:` on GCP with a certificate, `public: true` or `requestsPerNode`: the regional Application Load Balancer
(proxy-only subnet, the proxies' firewall rule, region backend service on the MIGs through their named port, URL map,
target HTTP(S) proxy with the TLS 1.2 policy, Cloud Armor on allowedCidrs when public, forwarding rule), scaling on
the load balancer's request rate, the bill, the policy, and the keyed refusals (certificate form and region, the
proxy-only subnet's size, an existing network, request rate without room or at zero nodes). The passthrough default:
tests/test_gcp_serve.py."""

from __future__ import annotations

from typing import Any

import pytest

from components.errors import ConfigError, ConfigErrors
from components.layout import gcp as gcp_layout
from components.spec import build_spec

from .conftest import gcp_values, one, plan_json, plan_values, resources_of

FLEET = {"gpu": "L4:2", "instanceType": "g2-standard-24", "nodes": 2, "minNodes": 2, "maxNodes": 4, "placement": "none"}
K = "gpu-cluster:cluster.serve"
CERT = "projects/p/regions/us-central1/sslCertificates/serve"
MANAGER = "projects/p/locations/us-central1/certificates/serve"
CLIENTS = [f"203.0.{i}.0/24" for i in range(12)]  # 12 ranges: two Cloud Armor rules (10 at most each)


def fleet(**cluster: Any) -> dict[str, Any]:
    return gcp_values(**{**FLEET, **cluster})


@pytest.fixture(scope="module")
def public():
    serve = {"public": True, "certificate": CERT, "allowedCidrs": CLIENTS, "requestsPerNode": 4}
    return plan_values(fleet(spot={"enabled": True, "onDemandBase": 1}, serve=serve))


@pytest.fixture(scope="module")
def private_tls():
    return plan_values(fleet(serve={"certificate": MANAGER}))


def test_the_proxies_get_the_last_sixteenth_of_the_block_beside_the_cluster_and_reach_the_serving_port_only(public):
    subnets = {r["name"]: r["inputs"] for r in resources_of(public, "compute/subnetwork:Subnetwork")}
    proxies = subnets["test-gcp-serve-proxies"]
    assert (proxies["purpose"], proxies["role"], proxies["ipCidrRange"]) == (
        "REGIONAL_MANAGED_PROXY",
        "ACTIVE",
        "10.43.240.0/20",  # network.cidr 10.42.0.0/16: its buddy 10.43.0.0/16, split in 16
    )
    assert proxies["network"] == "<id of test-gcp-host>" and proxies["region"] == "us-central1"
    rules = {r["name"]: r["inputs"] for r in resources_of(public, "compute/firewall:Firewall")}
    traffic = rules["test-gcp-serve-proxy-traffic"]
    assert (traffic["sourceRanges"], traffic["allows"]) == (
        ["10.43.240.0/20"],
        [{"protocol": "tcp", "ports": ["8000"]}],
    )
    assert rules["test-gcp-serve-health-check"]["sourceRanges"] == ["130.211.0.0/22", "35.191.0.0/16"]


def test_a_public_endpoint_is_an_external_managed_rule_on_443_in_the_standard_tier_after_the_proxy_subnet(public):
    rule = one(public, "compute/forwardingRule:ForwardingRule")["inputs"]
    assert (rule["loadBalancingScheme"], rule["portRange"], rule["ipProtocol"], rule["networkTier"]) == (
        "EXTERNAL_MANAGED",
        "443",
        "TCP",
        "STANDARD",
    )
    assert rule["target"] == "<id of test-gcp-serve-proxy>" and "subnetwork" not in rule and "ports" not in rule
    (registered,) = [r for r in public.resources if r.type == "gcp:compute/forwardingRule:ForwardingRule"]
    assert any(d.endswith("test-gcp-serve-proxies") for d in registered.dependencies)


def test_tls_ends_at_the_https_proxy_with_the_users_certificate_and_tls_1_2(public):
    proxy = one(public, "regionTargetHttpsProxy:RegionTargetHttpsProxy")["inputs"]
    assert proxy["sslCertificates"] == [CERT] and "certificateManagerCertificates" not in proxy
    assert (proxy["urlMap"], proxy["sslPolicy"]) == ("<id of test-gcp-serve-routes>", "<id of test-gcp-serve-tls>")
    policy = one(public, "regionSslPolicy:RegionSslPolicy")["inputs"]
    assert (policy["profile"], policy["minTlsVersion"]) == ("MODERN", "TLS_1_2")
    routes = one(public, "regionUrlMap:RegionUrlMap")["inputs"]
    assert routes["defaultService"] == "<id of test-gcp-serve-backend>"


def test_both_groups_are_rate_backends_through_their_named_port(public):
    backend = one(public, "regionBackendService:RegionBackendService")["inputs"]
    assert (backend["loadBalancingScheme"], backend["protocol"], backend["portName"]) == (
        "EXTERNAL_MANAGED",
        "HTTP",
        "serve",
    )
    assert backend["securityPolicy"] == "<id of test-gcp-serve-clients>"
    assert {(b["balancingMode"], b["maxRatePerInstance"]) for b in backend["backends"]} == {("RATE", 4)}
    groups = resources_of(public, "instanceGroupManager:InstanceGroupManager")
    instance_groups = {f"<instance group of {g['name']}>" for g in groups}
    assert len(groups) == 2 and {b["group"] for b in backend["backends"]} == instance_groups
    # the named port beside each group (the MIGs keep their inputs)
    ports = [p["inputs"] for p in resources_of(public, "instanceGroupNamedPort:InstanceGroupNamedPort")]
    assert {(p["group"], p["name"], p["port"], p["zone"]) for p in ports} == {
        (g, "serve", 8000, "us-central1-a") for g in instance_groups
    }
    assert all("namedPorts" not in g["inputs"] for g in groups)


def test_cloud_armor_admits_the_allowed_cidrs_in_rules_of_ten_and_denies_the_rest(public):
    policy = one(public, "regionSecurityPolicy:RegionSecurityPolicy")["inputs"]
    assert policy["type"] == "CLOUD_ARMOR"
    rules = [(r["priority"], r["action"], r["match"]["config"]["srcIpRanges"]) for r in policy["rules"]]
    assert rules == [
        (1000, "allow", sorted(CLIENTS)[:10]),
        (1001, "allow", sorted(CLIENTS)[10:]),
        (2147483647, "deny(403)", ["*"]),
    ]
    assert {r["match"]["versionedExpr"] for r in policy["rules"]} == {"SRC_IPS_V1"}


def test_the_autoscaler_keeps_each_node_at_80_percent_of_its_request_rate(public):
    scaler = one(public, "compute/autoscaler:Autoscaler")["inputs"]
    policy = scaler["autoscalingPolicy"]
    assert policy["loadBalancingUtilization"] == {"target": 0.8}
    assert (policy["minReplicas"], policy["maxReplicas"]) == (1, 3)  # the on-demand floor's node is not the group's
    assert scaler["target"] == "<id of test-gcp-mig>"


def test_the_summary_and_the_bill_of_a_public_endpoint(public):
    out = plan_json(public)
    serve = out["summary"]["serve"]
    assert (serve["port"], serve["protocol"], serve["internal"]) == (443, "https", False)
    assert serve["check"].startswith("curl -fsS --connect-to ::<ip address of test-gcp-serve>: https://")
    assert serve["from"] == f"a client in {', '.join(sorted(CLIENTS))}"
    (item,) = [i for i in out["summary"]["costs"]["items"] if i["item"] == "loadBalancer"]
    assert item["name"] == "serving load balancer (regional external Application Load Balancer)"
    assert item["hourly"] == 0.025
    assert out["policy"] == []  # servePublic: the external rule is allowed


def test_a_private_endpoint_with_a_certificate_stays_internal(private_tls):
    rule = one(private_tls, "compute/forwardingRule:ForwardingRule")["inputs"]
    assert (rule["loadBalancingScheme"], rule["portRange"], rule["subnetwork"]) == (
        "INTERNAL_MANAGED",
        "443",
        "<id of test-gcp-nodes>",
    )
    assert "networkTier" not in rule
    proxy = one(private_tls, "regionTargetHttpsProxy:RegionTargetHttpsProxy")["inputs"]
    assert proxy["certificateManagerCertificates"] == [f"//certificatemanager.googleapis.com/{MANAGER}"]
    assert resources_of(private_tls, "regionSecurityPolicy:RegionSecurityPolicy") == []
    backend = one(private_tls, "regionBackendService:RegionBackendService")["inputs"]
    assert {b["balancingMode"] for b in backend["backends"]} == {"UTILIZATION"}
    assert resources_of(private_tls, "compute/autoscaler:Autoscaler") == []  # no scaling, no request rate
    out = plan_json(private_tls)
    assert out["policy"] == []  # INTERNAL_MANAGED is private
    (item,) = [i for i in out["summary"]["costs"]["items"] if i["item"] == "loadBalancerInternalProxy"]
    assert item["hourly"] is None and "not in the stored text" in item["unpriced"]


def test_request_rate_alone_builds_an_http_proxy_on_the_serving_port_and_the_autoscaler():
    plan = plan_values(fleet(serve={"requestsPerNode": 2}))
    assert resources_of(plan, "regionTargetHttpsProxy:RegionTargetHttpsProxy") == []
    proxy = one(plan, "regionTargetHttpProxy:RegionTargetHttpProxy")["inputs"]
    assert proxy["urlMap"] == "<id of test-gcp-serve-routes>"
    rule = one(plan, "compute/forwardingRule:ForwardingRule")["inputs"]
    assert (rule["loadBalancingScheme"], rule["portRange"]) == ("INTERNAL_MANAGED", "8000")
    scaler = one(plan, "compute/autoscaler:Autoscaler")["inputs"]
    assert scaler["autoscalingPolicy"]["loadBalancingUtilization"] == {"target": 0.8}
    assert "request rate (2/s per node)" in scaler["description"]
    out = plan_json(plan)
    assert out["summary"]["serve"]["check"] == "curl -fsS http://<ip address of test-gcp-serve>:8000/health"
    assert not any("has no autoscaler" in w for w in out["warnings"])


def test_request_rate_joins_the_gpu_metric_as_a_second_signal():
    scaling = {"metric": "gpuUtilization", "target": 70}
    plan = plan_values(fleet(monitoring={"dcgmExporter": True}, scaling=scaling, serve={"requestsPerNode": 5}))
    policy = one(plan, "compute/autoscaler:Autoscaler")["inputs"]["autoscalingPolicy"]
    assert policy["loadBalancingUtilization"] == {"target": 0.8} and len(policy["metrics"]) == 1


def test_the_passthrough_default_sets_no_named_port_and_no_autoscaler():
    plan = plan_values(fleet(serve={"port": 8000}))
    assert resources_of(plan, "instanceGroupNamedPort:InstanceGroupNamedPort") == []
    assert resources_of(plan, "compute/autoscaler:Autoscaler") == []


@pytest.mark.parametrize(
    ("serve", "cluster", "key", "words"),
    [
        ({"certificate": "arn:aws:acm:us-east-1:1:certificate/x"}, {}, f"{K}.certificate", "region SSL certificate"),
        (
            {"certificate": "projects/p/regions/europe-west4/sslCertificates/c"},
            {},
            f"{K}.certificate",
            "of its own region us-central1",
        ),
        ({"certificate": CERT}, {"network": {"cidr": "10.42.0.0/24"}}, "gpu-cluster:cluster.network.cidr", "/26"),
    ],
)
def test_what_the_layout_cannot_build_is_refused_by_its_key_before_any_resource(serve, cluster, key, words):
    spec = build_spec(fleet(serve=serve, **cluster), "test")
    with pytest.raises(ConfigError) as info:
        gcp_layout.plan(spec)
    assert (info.value.key, words in info.value.message) == (key, True), info.value.message


def test_an_existing_network_is_refused_for_the_application_load_balancer():
    existing = {
        "vpcId": "projects/my-project/global/networks/shared",
        "subnetIds": ["projects/my-project/regions/us-central1/subnetworks/nodes"],
    }
    spec = build_spec(fleet(network={"existing": existing, "cidr": "10.42.0.0/16"}, serve={"certificate": CERT}), "t")
    with pytest.raises(ConfigError) as info:
        gcp_layout.plan(spec)
    assert info.value.key == K and "proxy-only subnet" in info.value.message


@pytest.mark.parametrize(
    ("cluster", "key", "words"),
    [
        ({"minNodes": 4, "nodes": 4}, f"{K}.requestsPerNode", "leave nothing to scale"),
        ({"minNodes": 0}, "gpu-cluster:cluster.minNodes", "no request rate brings a node back"),
    ],
)
def test_request_rate_without_room_or_from_zero_is_refused(cluster, key, words):
    with pytest.raises(ConfigErrors) as info:
        build_spec(fleet(serve={"requestsPerNode": 3}, **cluster), "test")
    found = [(e.key, e.message) for e in info.value.errors]
    assert [k for k, _ in found] == [key] and words in found[0][1], found


def test_request_rate_from_zero_is_allowed_when_a_schedule_brings_nodes_back():
    scaling = {
        "metric": "schedule",
        "schedule": [{"cron": "0 8 * * 1-5", "nodes": 2}, {"cron": "0 20 * * 1-5", "nodes": 0}],
    }
    plan = plan_values(fleet(minNodes=0, scaling=scaling, serve={"requestsPerNode": 3}))
    policy = one(plan, "compute/autoscaler:Autoscaler")["inputs"]["autoscalingPolicy"]
    assert policy["loadBalancingUtilization"] == {"target": 0.8} and policy["minReplicas"] == 0


@pytest.mark.parametrize(
    ("cloud_values", "words"),
    [
        ("azure", "reports no request count"),
        ("alicloud", "ESS target tracking"),
    ],
)
def test_request_rate_is_refused_with_the_reason_where_it_is_not_built(cloud_values, words):
    from . import test_alicloud_serve, test_azure_scaling

    # AWS builds it (an Application Load Balancer: tests/test_aws_serve.py)
    fleets = {"azure": test_azure_scaling.fleet, "alicloud": test_alicloud_serve.fleet}
    config = fleets[cloud_values](serve={"requestsPerNode": 3})
    with pytest.raises(ConfigErrors) as info:
        build_spec(config, "test")
    found = [(e.key, e.message) for e in info.value.errors if e.key == f"{K}.requestsPerNode"]
    assert len(found) == 1 and words in found[0][1], [(e.key, e.message) for e in info.value.errors]
