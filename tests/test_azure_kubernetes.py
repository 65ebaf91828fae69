"""`scheduler: kubernetes` on Azure: the AKS cluster, its GPU pool and the in-cluster releases, as registered with
Pulumi's mocks (camelCase inputs), planned through the real program."""

from __future__ import annotations

import base64
import ipaddress

import pytest
import yaml

from components.azure.kubernetes import AKS_SERVER_ID, azurecli_kubeconfig
from components.azure.vault import vault_name
from components.catalog import kubernetes as kubernetes_offers
from components.errors import ConfigError
from components.layout import azure as layout_azure
from components.layout.kubernetes import charts

from .conftest import one, plan_values, resources_of, spec_of
from .test_azure_resources import azure_values

SUB = "/subscriptions/00000000-0000-0000-0000-000000000000"
POOL = "containerservice:AgentPool"
CLUSTER = "containerservice:ManagedCluster"
RELEASE = "helm.sh/v3:Release"
AKS_DATA = yaml.safe_load((kubernetes_offers._DIR / "azure.yaml").read_text())


def aks_values(kubernetes=None, **cluster):
    base = {"scheduler": "kubernetes", **({"kubernetes": kubernetes} if kubernetes is not None else {})}
    return azure_values(**{**base, **cluster})


@pytest.fixture(scope="module")
def aks(stack_plan):
    return stack_plan("azure-aks-h100")


@pytest.fixture(scope="module")
def plugin_spot():
    """The device plugin alone, spot, autoscaled to 4, a public endpoint, a ServiceMonitor, no InfiniBand."""
    return plan_values(
        aks_values(
            {"gpuSoftware": "device-plugin", "publicEndpoint": True, "publicCidrs": ["203.0.113.0/24"],
             "serviceMonitor": True},
            spot=True, maxNodes=4, fabric="none",
        )
    )  # fmt: skip


def releases_by_name(plan):
    return {r["inputs"]["name"]: r["inputs"] for r in resources_of(plan, RELEASE)}


# --- the GPU pool ------------------------------------------------------------------------------------


def test_gpu_pool_takes_the_same_keys_as_the_scale_set(aks):
    pool = one(aks, POOL)["inputs"]
    assert pool["vmSize"] == "Standard_ND96isr_H100_v5"
    assert pool["agentPoolName"] == "gpu" and pool["mode"] == "User" and pool["type"] == "VirtualMachineScaleSets"
    assert pool["count"] == 2 and pool["enableAutoScaling"] is False
    assert "minCount" not in pool and "maxCount" not in pool
    assert pool["osSKU"] == "Ubuntu" and pool["osType"] == "Linux"
    assert pool["osDiskSizeGB"] == 256 and pool["osDiskType"] == "Managed"
    # the operator installs the driver: AKS's driver off
    assert pool["gpuProfile"] == {"driver": "None"}
    # the layout's proximity placement group, the same one the scale set would use
    ppg = one(aks, "compute:ProximityPlacementGroup")
    assert pool["proximityPlacementGroupID"] == f"<id of {ppg['name']}>"
    assert ppg["inputs"]["intent"] == {"vmSizes": ["Standard_ND96isr_H100_v5"]}
    # private nodes in the node subnet, in the cluster
    assert pool["enableNodePublicIP"] is False
    assert pool["vnetSubnetID"] == "<id of llm-aks-azure-nodes>"
    assert pool["resourceName"] == "<autoname:llm-aks-azure-aks>"
    assert not {"scaleSetPriority", "scaleSetEvictionPolicy", "spotMaxPrice"} & set(pool)


def test_gpu_pool_taint_and_labels_come_from_the_kubernetes_layer(aks):
    pool = one(aks, POOL)["inputs"]
    assert pool["nodeTaints"] == ["nvidia.com/gpu=present:NoSchedule"]
    assert pool["nodeLabels"] == {
        "gpu-cluster.dev/gpu": "h100",
        "gpu-cluster.dev/gpus": "8",
        "gpu-cluster.dev/fabric": "infiniband",
    }


def test_spot_autoscaling_and_the_device_plugin(plugin_spot):
    pool = one(plugin_spot, POOL)["inputs"]
    assert (pool["scaleSetPriority"], pool["scaleSetEvictionPolicy"], pool["spotMaxPrice"]) == ("Spot", "Delete", -1)
    assert (pool["enableAutoScaling"], pool["count"], pool["minCount"], pool["maxCount"]) == (True, 2, 2, 4)
    assert pool["gpuProfile"] == {"driver": "Install"}  # AKS installs the driver when only the plugin is ours
    assert pool["nodeLabels"]["gpu-cluster.dev/fabric"] == "none"
    no_ppg = one(plan_values(aks_values(fabric="none", placement="none")), POOL)["inputs"]
    assert "proximityPlacementGroupID" not in no_ppg


@pytest.mark.parametrize(
    ("sizes", "autoscaling"),
    [
        ({"nodes": 2, "minNodes": 0}, (True, 2, 0, 2)),  # shrinks to zero when idle (a User pool may)
        ({"nodes": 2, "minNodes": 1, "maxNodes": 4}, (True, 2, 1, 4)),
    ],
)
def test_the_autoscaler_range_is_min_nodes_to_max_nodes(sizes, autoscaling):
    """minNodes below nodes turns the pool's autoscaler on with minNodes as its floor (it was ignored: the pool stayed
    at nodes while the plan's cost row read at minNodes)."""
    pool = one(plan_values(aks_values(**sizes)), POOL)["inputs"]
    assert (pool["enableAutoScaling"], pool["count"], pool["minCount"], pool["maxCount"]) == autoscaling


def test_a_reservation_and_a_zone_reach_the_pool():
    sub = "/subscriptions/00000000-0000-0000-0000-000000000000"
    crg = f"{sub}/resourceGroups/rg/providers/Microsoft.Compute/capacityReservationGroups/crg"
    pool = one(plan_values(aks_values(reservation=crg, zone="2")), POOL)["inputs"]
    assert pool["capacityReservationGroupID"] == crg
    assert pool["availabilityZones"] == ["2"]


# --- the control plane ---------------------------------------------------------------------------------


def test_private_api_server_pinned_version_no_local_accounts(aks):
    mc = one(aks, CLUSTER)["inputs"]
    assert mc["kubernetesVersion"] == "1.36"
    assert mc["sku"] == {"name": "Base", "tier": "Standard"}  # uptime SLA: Free is for fewer than 10 nodes
    api = mc["apiServerAccessProfile"]
    assert api["enablePrivateCluster"] is True and api["enablePrivateClusterPublicFQDN"] is False
    assert api["privateDNSZone"] == "system" and "authorizedIPRanges" not in api
    assert api["enableVnetIntegration"] is True and api["subnetId"] == "<id of llm-aks-azure-apiserver>"
    assert mc["disableLocalAccounts"] is True and mc["enableRBAC"] is True
    assert mc["aadProfile"]["managed"] is True and mc["aadProfile"]["enableAzureRBAC"] is True


def test_public_endpoint_only_from_public_cidrs(plugin_spot):
    api = one(plugin_spot, CLUSTER)["inputs"]["apiServerAccessProfile"]
    assert api["enablePrivateCluster"] is False
    assert api["authorizedIPRanges"] == ["203.0.113.0/24"]


def test_secrets_are_kms_encrypted_with_a_key_in_a_private_vault(aks):
    kms = one(aks, CLUSTER)["inputs"]["securityProfile"]["azureKeyVaultKms"]
    assert kms == {
        "enabled": True,
        "keyId": "<key uri with version of llm-aks-azure-kms-key>",
        "keyVaultNetworkAccess": "Private",
        "keyVaultResourceId": "<id of llm-aks-azure-kms-vault>",
    }
    vault = one(aks, "keyvault:Vault")["inputs"]
    props = vault["properties"]
    assert props["publicNetworkAccess"] == "Disabled" and props["enableRbacAuthorization"] is True
    assert props["enablePurgeProtection"] is True and props["softDeleteRetentionInDays"] == 7
    assert props["networkAcls"] == {"defaultAction": "Deny", "bypass": "AzureServices"}
    key = one(aks, "keyvault:Key")["inputs"]
    assert key["properties"] == {"kty": "RSA", "keySize": 2048}
    assert vault["vaultName"] == vault_name("llm-aks", "gpu-cluster", "azure-aks-h100", "llm-aks-azure")


def test_vault_names_fit_azure_rules():
    name = vault_name("a-very-long-cluster-name-x", "gpu-cluster", "stack", "component")
    assert 3 <= len(name) <= 24 and name[0].isalpha() and name.replace("-", "").isalnum()
    assert vault_name("c", "p", "s1", "x") != vault_name("c", "p", "s2", "x")


def test_system_pool_is_cpu_tainted_critical_addons(aks):
    (system,) = one(aks, CLUSTER)["inputs"]["agentPoolProfiles"]
    assert system["name"] == "system" and system["mode"] == "System"
    assert system["vmSize"] == AKS_DATA["systemInstanceType"] == "Standard_D4s_v5"
    assert system["count"] == 2
    assert system["nodeTaints"] == ["CriticalAddonsOnly=true:NoSchedule"]
    assert system["enableNodePublicIP"] is False and system["vnetSubnetID"] == "<id of llm-aks-azure-nodes>"


def test_azure_cni_overlay_with_ranges_outside_the_vnet_and_nsg_rules_for_pods(aks):
    net = one(aks, CLUSTER)["inputs"]["networkProfile"]
    assert (net["networkPlugin"], net["networkPluginMode"]) == ("azure", "overlay")
    assert net["outboundType"] == "userAssignedNATGateway"
    vnet = ipaddress.ip_network("10.46.0.0/16")
    pod, service = ipaddress.ip_network(net["podCidr"]), ipaddress.ip_network(net["serviceCidr"])
    assert not pod.overlaps(vnet) and not service.overlaps(vnet) and not pod.overlaps(service)
    assert ipaddress.ip_address(net["dnsServiceIP"]) in service
    nsg = next(r for r in resources_of(aks, "network:NetworkSecurityGroup") if r["name"] == "llm-aks-azure-nsg")
    rules = {r["name"]: r for r in nsg["inputs"]["securityRules"]}
    assert rules["allow-pods-inbound"]["sourceAddressPrefix"] == net["podCidr"]
    assert rules["allow-nodes-to-pods"]["destinationAddressPrefix"] == net["podCidr"]
    assert rules["deny-internet-inbound"]["access"] == "Deny"


def test_a_vnet_on_the_default_pod_range_moves_the_pod_range():
    net = one(plan_values(aks_values(network={"cidr": "10.244.0.0/16"})), CLUSTER)["inputs"]["networkProfile"]
    assert net["podCidr"] == "172.20.0.0/16" and net["serviceCidr"] == "10.0.0.0/16"


def test_identities_and_least_privilege_roles(aks):
    mc = one(aks, CLUSTER)["inputs"]
    assert mc["identity"] == {"type": "UserAssigned", "userAssignedIdentities": ["<id of llm-aks-azure-aks-identity>"]}
    kubelet = mc["identityProfile"]["kubeletidentity"]
    assert kubelet == {
        "resourceId": "<id of llm-aks-azure-identity>",
        "clientId": "<client id of llm-aks-azure-identity>",
        "objectId": "<principal id of llm-aks-azure-identity>",
    }
    roles = {
        r["name"].removeprefix("llm-aks-azure-aks-role-"): r["inputs"] for r in resources_of(aks, "RoleAssignment")
    }
    guid = {k: v.rsplit("/", 1)[-1] for k, v in AKS_DATA["roles"].items()}
    expect = {
        "net-nodes": ("networkContributor", "<id of llm-aks-azure-nodes>"),
        "net-apiserver": ("networkContributor", "<id of llm-aks-azure-apiserver>"),
        "kubelet-operator": ("managedIdentityOperator", "<id of llm-aks-azure-identity>"),
        "kms-crypto": ("keyVaultCryptoUser", "<id of llm-aks-azure-kms-vault>"),
        "kms-link": ("keyVaultContributor", "<id of llm-aks-azure-kms-vault>"),
        "deployer-admin": ("clusterAdmin", "<id of llm-aks-azure-aks>"),
    }
    assert set(roles) == set(expect)
    for name, (role, scope) in expect.items():
        assert roles[name]["roleDefinitionId"].endswith(f"/roleDefinitions/{guid[role]}"), name
        assert roles[name]["scope"] == scope, name
        who = (
            "<resolved at deploy: object id>"
            if name == "deployer-admin"
            else "<principal id of llm-aks-azure-aks-identity>"
        )
        assert roles[name]["principalId"] == who, name


def test_no_scale_set_no_vms_no_node_public_ip(aks):
    assert not resources_of(aks, "compute:VirtualMachineScaleSet")
    assert [r["name"] for r in resources_of(aks, "compute:VirtualMachine")] == ["llm-aks-azure-login"]
    assert {r["name"] for r in resources_of(aks, "network:PublicIPAddress")} == {
        "llm-aks-azure-nat-ip",
        "llm-aks-azure-bastion-ip",
    }


# --- InfiniBand --------------------------------------------------------------------------------------


def test_infiniband_counted_wired_as_rated_from_the_pools_resources(aks):
    summary = aks.summary()
    assert summary["fabric"] == "infiniband"
    assert summary["fabricGbpsPerNode"] == summary["fabricGbpsRated"] == 3200
    assert summary["fabricUsable"] is True and summary["scratch"] == "none"
    resources = [r.as_json() for r in aks.resources]
    assert layout_azure.count_wired_gbps(resources, 400) == 3200
    # without the Network Operator's policy nothing carries RDMA: counted 0
    without = [r for r in resources if not r["type"].endswith(":NicClusterPolicy")]
    assert layout_azure.count_wired_gbps(without, 400) == 0
    pool = next(r for r in resources if r["type"].endswith(POOL))
    other_os = [r if r is not pool else {**r, "inputs": {**r["inputs"], "osSKU": "AzureLinux"}} for r in resources]
    assert layout_azure.count_wired_gbps(other_os, 400) == 0


def test_the_plan_says_what_the_subscription_must_have(aks):
    warning = next(w for w in aks.warnings() if "AKSInfinibandSupport" in w)
    assert "Microsoft.ContainerService/AKSInfinibandSupport" in warning
    assert "az feature register --namespace Microsoft.ContainerService --name AKSInfinibandSupport" in warning


def test_network_operator_with_its_node_rule_and_nic_cluster_policy(aks):
    rel = releases_by_name(aks)
    op = rel["network-operator"]
    assert (op["chart"], op["version"]) == ("network-operator", charts()["network-operator"]["version"])
    assert op["repositoryOpts"] == {"repo": "https://helm.ngc.nvidia.com/nvidia"}
    assert op["values"]["nfd"] == {"deployNodeFeatureRules": False}
    worker = op["values"]["node-feature-discovery"]["worker"]["tolerations"]
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in worker
    policy = one(aks, "mellanox.com/v1alpha1:NicClusterPolicy")["inputs"]
    spec = policy["spec"]
    assert spec["ofedDriver"]["image"] == "doca-driver" and spec["rdmaSharedDevicePlugin"]["config"]
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in spec["tolerations"]
    rule = one(aks, "nfd.k8s-sigs.io/v1alpha1:NodeFeatureRule")["inputs"]
    assert rule["spec"]["rules"][0]["labels"] == {"feature.node.kubernetes.io/pci-15b3.present": "true"}


def test_one_infiniband_node_is_refused_with_the_key():
    with pytest.raises(ConfigError) as info:
        layout_azure.plan(spec_of(aks_values(nodes=1)))
    assert info.value.key == "gpu-cluster:cluster.nodes" and "at least 2" in str(info.value)


# --- in-cluster releases -------------------------------------------------------------------------------


def test_gpu_operator_pinned_with_rdma_and_the_pools_tolerations(aks):
    rel = releases_by_name(aks)
    assert set(rel) == {"gpu-operator", "network-operator", "kube-prometheus-stack"}  # monitoring.prometheus auto
    gpu = rel["gpu-operator"]
    assert gpu["version"] == charts()["gpu-operator"]["version"] == "v26.7.0"
    values = gpu["values"]
    assert values["driver"] == {"enabled": True, "rdma": {"enabled": True}}
    assert values["nfd"] == {"enabled": False}  # the Network Operator brings NFD
    assert values["dcgmExporter"] == {"enabled": True, "serviceMonitor": {"enabled": False}}
    assert {"key": "kubernetes.azure.com/scalesetpriority", "operator": "Equal", "value": "spot",
            "effect": "NoSchedule"} in values["daemonsets"]["tolerations"]  # fmt: skip
    assert gpu["namespace"] == "gpu-operator" and gpu["createNamespace"] is True


def test_device_plugin_and_dcgm_exporter_with_a_service_monitor(plugin_spot):
    rel = releases_by_name(plugin_spot)
    assert set(rel) == {"nvidia-device-plugin", "dcgm-exporter", "kube-prometheus-stack"}
    plugin, dcgm = rel["nvidia-device-plugin"], rel["dcgm-exporter"]
    assert plugin["version"] == "0.20.0" and dcgm["version"] == "4.8.2"
    term = plugin["values"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert term["nodeSelectorTerms"] == [{"matchExpressions": [{"key": "gpu-cluster.dev/gpu", "operator": "Exists"}]}]
    assert dcgm["values"]["serviceMonitor"] == {"enabled": True}
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in dcgm["values"]["tolerations"]
    assert not resources_of(plugin_spot, "NicClusterPolicy")


def test_releases_go_through_a_provider_from_the_clusters_kubeconfig(aks):
    provider = one(aks, "pulumi:providers:kubernetes")
    assert provider["inputs"]["kubeconfig"] == "[secret]"
    assert aks.run.outputs["kubeconfig"] == "[secret]"


def test_kubeconfig_switches_kubelogin_to_the_azure_cli():
    config = {
        "users": [
            {"name": "u", "user": {"exec": {"command": "kubelogin",
                                            "args": ["get-token", "--server-id", "abc", "--login", "devicecode"]}}}
        ]
    }  # fmt: skip
    out = yaml.safe_load(azurecli_kubeconfig(base64.b64encode(yaml.safe_dump(config).encode()).decode()))
    assert out["users"][0]["user"]["exec"]["args"] == ["get-token", "--login", "azurecli", "--server-id", "abc"]
    config["users"][0]["user"]["exec"]["args"] = ["get-token"]
    out = yaml.safe_load(azurecli_kubeconfig(base64.b64encode(yaml.safe_dump(config).encode()).decode()))
    assert out["users"][0]["user"]["exec"]["args"][-1] == AKS_SERVER_ID


# --- outputs and bad input -----------------------------------------------------------------------------


def test_outputs_name_the_cluster_pools_credentials_and_releases(aks):
    out = aks.run.outputs["kubernetes"]
    assert out["clusterName"] == "<autoname:llm-aks-azure-aks>"
    assert out["endpoint"] == "<private fqdn of llm-aks-azure-aks>"
    assert out["version"] == "1.36" and out["nodePools"] == ["system", "gpu"]
    assert out["credentials"].startswith("az aks get-credentials --resource-group <autoname:llm-aks-azure-rg>")
    assert "kubelogin convert-kubeconfig -l azurecli" in out["credentials"]
    assert {r["name"]: r["version"] for r in out["releases"]} == {
        "gpu-operator": "v26.7.0",
        "network-operator": "v26.1.2",
        "kube-prometheus-stack": "88.5.3",
    }
    assert aks.run.outputs["imageId"] == "AKS node image (Ubuntu)"


@pytest.mark.parametrize(
    ("cluster", "key"),
    [
        ({"network": {"egress": "none"}}, "gpu-cluster:cluster.network.egress"),
        ({"network": {"cidr": "10.46.0.0/24"}}, "gpu-cluster:cluster.network.cidr"),
    ],
)
def test_what_aks_cannot_do_here_is_refused_with_the_key(cluster, key):
    with pytest.raises(ConfigError) as info:
        layout_azure.plan(spec_of(aks_values(fabric="none", **cluster)))
    assert info.value.key == key


def test_existing_network_is_refused_with_the_key():
    existing = {
        "vpcId": f"{SUB}/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/vnet1",
        "subnetIds": [f"{SUB}/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/vnet1/subnets/nodes"],
    }
    with pytest.raises(ConfigError) as info:
        layout_azure.plan(spec_of(aks_values(fabric="none", access="none", network={"existing": existing})))
    assert info.value.key == "gpu-cluster:cluster.network.existing"


def test_scheduler_none_builds_no_aks():
    values = aks_values(fabric="none")
    del values["gpu-cluster:cluster"]["scheduler"]
    layout = layout_azure.plan(spec_of(values))
    assert layout.aks is None
    assert [r.name for r in layout.security_rules] == ["allow-vnet-inbound", "deny-internet-inbound"]
