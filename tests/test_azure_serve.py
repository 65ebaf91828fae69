"""`serve:` on Azure: the internal Standard Load Balancer (frontend in the node subnet, backend pool, HTTP or TCP
probe on the serving port, one TCP rule that names them by id), the scale set's NICs in the pool, the NSG rule that
admits Azure's probe to the port only, the endpoint in the plan summary, and the keyed refusals of what is not built
on Azure; a scale set without serve keeps its inputs."""

from __future__ import annotations

import pytest

from components.catalog import fixed_prices
from components.errors import ConfigErrors
from components.spec import build_spec

from .conftest import one, plan_json, plan_values, resources_of
from .test_azure_scaling import fleet

LB = (
    "/subscriptions/<resolved at deploy: subscription id>/resourceGroups/<autoname:test-azure-rg>"
    "/providers/Microsoft.Network/loadBalancers/test-lb"
)
K = "gpu-cluster:cluster.serve"


@pytest.fixture(scope="module")
def served():
    return plan_values(fleet(serve={"port": 8000}))


def test_an_internal_standard_load_balancer_fronts_the_node_subnet(served):
    lb = one(served, "network:LoadBalancer")["inputs"]
    assert lb["loadBalancerName"] == "test-lb"
    assert lb["sku"] == {"name": "Standard", "tier": "Regional"}
    (frontend,) = lb["frontendIPConfigurations"]
    assert (frontend["name"], frontend["privateIPAllocationMethod"], frontend["subnet"]["id"]) == (
        "frontend",
        "Dynamic",
        "<id of test-azure-nodes>",
    )
    assert "publicIPAddress" not in frontend
    assert lb["backendAddressPools"] == [{"name": "nodes"}]
    assert lb["probes"] == [
        {"name": "serve", "protocol": "Http", "port": 8000, "requestPath": "/health", "intervalInSeconds": 15,
         "probeThreshold": 2}
    ]  # fmt: skip
    (rule,) = lb["loadBalancingRules"]
    assert (rule["protocol"], rule["frontendPort"], rule["backendPort"], rule["enableFloatingIP"]) == (
        "Tcp",
        8000,
        8000,
        False,
    )
    assert rule["frontendIPConfiguration"] == {"id": f"{LB}/frontendIPConfigurations/frontend"}
    assert rule["backendAddressPool"] == {"id": f"{LB}/backendAddressPools/nodes"}
    assert rule["probe"] == {"id": f"{LB}/probes/serve"}


def test_the_scale_sets_nics_join_the_pool(served):
    vmss = one(served, "compute:VirtualMachineScaleSet")["inputs"]
    (nic,) = vmss["virtualMachineProfile"]["networkProfile"]["networkInterfaceConfigurations"]
    (ip,) = nic["ipConfigurations"]
    assert ip["loadBalancerBackendAddressPools"] == [{"id": f"{LB}/backendAddressPools/nodes"}]


def test_the_nsg_admits_azures_probe_to_the_serving_port_only(served):
    rules = {r["name"]: r for r in one(served, "network:NetworkSecurityGroup")["inputs"]["securityRules"]}
    probe = rules["allow-serve-probe"]
    assert (probe["sourceAddressPrefix"], probe["destinationPortRange"], probe["protocol"], probe["access"]) == (
        "AzureLoadBalancer",
        "8000",
        "Tcp",
        "Allow",
    )
    assert probe["priority"] < rules["deny-internet-inbound"]["priority"]


def test_the_summary_gives_the_frontend_address_and_the_check_command(served):
    serve = plan_json(served)["summary"]["serve"]
    assert serve["endpoint"] == "<private ip of the load balancer, known after deploy>"
    assert serve["check"] == "curl -fsS http://<private ip of the load balancer, known after deploy>:8000/health"


def test_a_scale_set_without_serve_is_as_before(served):
    plain = plan_values(fleet())
    vmss = one(plain, "compute:VirtualMachineScaleSet")["inputs"]
    ip = vmss["virtualMachineProfile"]["networkProfile"]["networkInterfaceConfigurations"][0]["ipConfigurations"][0]
    assert "loadBalancerBackendAddressPools" not in ip
    rules = [r["name"] for r in one(plain, "network:NetworkSecurityGroup")["inputs"]["securityRules"]]
    assert "allow-serve-probe" not in rules
    assert [r for r in plain.resources if r.type.endswith("network:LoadBalancer")] == []


def test_tcp_probes_a_connection():
    lb = one(plan_values(fleet(serve={"port": 9000, "protocol": "tcp"})), "network:LoadBalancer")["inputs"]
    assert lb["probes"] == [
        {"name": "serve", "protocol": "Tcp", "port": 9000, "intervalInSeconds": 15, "probeThreshold": 2}
    ]


@pytest.mark.parametrize(
    ("serve", "key", "words"),
    [
        ({"public": True, "allowedCidrs": ["203.0.113.0/24"]}, f"{K}.protocol", "use protocol tcp (TLS on the nodes)"),
        ({"public": True, "protocol": "tcp"}, f"{K}.allowedCidrs", "list the client ranges"),
        ({"requestsPerNode": 5}, f"{K}.requestsPerNode", "reports no request count"),
        ({"certificate": "https://vault.vault.azure.net/secrets/c"}, f"{K}.certificate", "terminates no TLS"),
        ({"idleTimeoutSeconds": 600}, f"{K}.idleTimeoutSeconds", "not taken by the internal Standard"),
    ],
)
def test_what_azure_does_not_build_is_refused_by_its_key(serve, key, words):
    with pytest.raises(ConfigErrors) as info:
        build_spec(fleet(serve=serve), "test")
    errors = [(e.key, e.message) for e in info.value.errors]
    assert [k for k, _ in errors] == [key] and words in errors[0][1], errors


def test_policy_flags_a_public_frontend_unless_serve_is_public(served):
    from components.policy import Resource, evaluate

    facts = Resource("gpu-cluster:index:GpuCluster", {"stackFacts": {"cloud": "azure"}}, "urn:c", "c")
    public = {"frontendIPConfigurations": [{"name": "frontend", "publicIPAddress": {"id": "<ip>"}}]}
    lb = Resource("azure-native:network:LoadBalancer", public, "urn:lb", "lb")
    assert [v.rule for v in evaluate([facts, lb]) if v.rule == "serve-private"] == ["serve-private"]
    assert plan_json(served)["policy"] == []  # the internal frontend passes


def test_the_bill_counts_the_standard_load_balancers_hour(served):
    costs = plan_json(served)["summary"]["costs"]
    (balancer,) = [i for i in costs["items"] if i["item"] == "loadBalancer"]
    rate = fixed_prices.load("azure").item("loadBalancer").hourly
    assert (balancer["hourly"], balancer["per"], balancer["currency"], balancer["unpriced"]) == (
        rate,
        "stack",
        "USD",
        None,
    )
    assert "c3x.dev/resources/azure/azurerm_lb" in balancer["source"]


@pytest.fixture(scope="module")
def public():
    return plan_values(fleet(serve={"port": 9000, "protocol": "tcp", "public": True, "allowedCidrs": CLIENTS}))


CLIENTS = ["198.51.100.0/24", "203.0.113.0/24"]


def test_a_public_endpoint_is_a_standard_static_public_ip_as_the_frontend(public):
    ip = {r["name"]: r["inputs"] for r in resources_of(public, "network:PublicIPAddress")}["test-azure-serve-ip"]
    assert (ip["sku"], ip["publicIPAllocationMethod"], ip["publicIPAddressVersion"]) == (
        {"name": "Standard", "tier": "Regional"},
        "Static",
        "IPv4",
    )
    lb = one(public, "network:LoadBalancer")["inputs"]
    (frontend,) = lb["frontendIPConfigurations"]
    assert frontend == {"name": "frontend", "publicIPAddress": {"id": "<id of test-azure-serve-ip>"}}
    (rule,) = lb["loadBalancingRules"]
    # the nodes keep going out through the cluster's NAT gateway, not the serving address
    assert (rule["disableOutboundSnat"], rule["enableFloatingIP"], rule["frontendPort"]) == (True, False, 9000)


def test_the_nsg_admits_the_allowed_cidrs_to_the_serving_port_before_the_internet_deny(public):
    rules = {r["name"]: r for r in one(public, "network:NetworkSecurityGroup")["inputs"]["securityRules"]}
    clients = rules["allow-serve-clients"]
    assert (clients["priority"], clients["access"], clients["protocol"], clients["destinationPortRange"]) == (
        310,
        "Allow",
        "Tcp",
        "9000",
    )
    # one prefix per range: the NSG rule's sourceAddressPrefix takes one, sourceAddressPrefixes several
    sources = clients.get("sourceAddressPrefixes") or [clients["sourceAddressPrefix"]]
    assert sorted(sources) == CLIENTS
    assert clients["priority"] < rules["deny-internet-inbound"]["priority"]


def test_a_public_endpoint_in_the_summary_the_bill_and_the_policy(public):
    out = plan_json(public)
    serve = out["summary"]["serve"]
    assert (serve["endpoint"], serve["internal"], serve["protocol"]) == (
        "<ip address of test-azure-serve-ip>",
        False,
        "tcp",
    )
    assert serve["check"] == "nc -zv <ip address of test-azure-serve-ip> 9000"
    assert serve["from"] == f"a client in {', '.join(CLIENTS)}"
    items = {i["name"]: i for i in out["summary"]["costs"]["items"]}
    assert items["serving load balancer (public Standard Load Balancer)"]["hourly"] == 0.025
    assert items["serving load balancer's public IP"]["item"] == "publicIp"
    assert out["policy"] == []  # servePublic
