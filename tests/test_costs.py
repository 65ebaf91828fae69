"""The bill of what a plan runs (issue 30 costs, issue 29's costs bullet): every item that bills, fixed or per node,
with the catalog's price and source or listed as not counted; totals per hour and per month (730 h).

The bill is computed from the spec and the layout (components/plan/bill.py), so most tests here build those two
from the shipped stack files without running the program; one test checks the plan's summary keys end to end.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from components.catalog import fixed_prices, monitoring
from components.catalog import load as load_catalog
from components.catalog.fixed_prices import HOURS_PER_MONTH
from components.contract import contract
from components.diff import diff_plans
from components.plan import bill as bill_module
from components.plan import load_stack
from components.plan.bill import BillItem, costs, totals
from components.plan.render import total_text
from components.spec import build_spec

from .conftest import ROOT, plan_stack

CLOUDS = ("aws", "azure", "gcp", "alicloud", "tencentcloud", "huaweicloud")


def bill(stack: str) -> tuple[dict[str, Any], Any]:
    """The stack's `summary.costs`, from its spec and layout (what the plan's summary computes)."""
    sf = load_stack(ROOT, stack)
    spec = build_spec(sf.values, sf.stack, sf.project, sf.secret_keys)
    layout = contract(spec.cloud).plan(spec)
    shared = getattr(layout, "shared", None)
    return costs(spec, layout, None if shared is None else shared.summary()), spec


def items(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {i["item"]: i for i in result["items"]}


def price_file(cloud: str) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((ROOT / "components/catalog/prices" / f"{cloud}.yaml").read_text())
    return data


# --- the data -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("cloud", CLOUDS)
def test_every_price_names_its_source_region_and_date_and_every_gap_says_why(cloud):
    prices = fixed_prices.load(cloud)
    assert prices.region and prices.date
    for name, price in prices.items.items():
        if price.priced:
            assert price.source and len(price.source) > 30, name
        else:
            assert price.unpriced and price.source is None, name
    if prices.instances:
        assert prices.instances_source


@pytest.mark.parametrize("cloud", CLOUDS)
def test_every_cloud_has_an_entry_for_every_item_the_bill_asks_for(cloud):
    asked = {"natGateway", "publicIp", "controlPlane", "bootDisk", "scratchDisk", "encryptionKey", "loadBalancer",
             "accountingDatabase", "accountingDatabaseStorage"}  # fmt: skip
    # Alibaba only: a key in an existing KMS instance (encryption.kmsInstance); Alibaba and Tencent: the mlps3 audit
    # trail; GCP only: the
    # internal Application Load Balancer of a private serve endpoint with TLS or requestsPerNode; AWS only: the
    # Application Load Balancer of serve.requestsPerNode and Amazon Managed Grafana's admin licenses (grafanaAdmins)
    only = {
        "alicloud": {"encryptionKeyInInstance", "auditTrail"},
        "tencentcloud": {"auditTrail"},
        "gcp": {"loadBalancerInternalProxy"},
        "aws": {"applicationLoadBalancer", "managedGrafana"},
    }.get(cloud, set())
    # every cloud that builds monitoring.logs / notify / prometheus managed names its log service, alert path and
    # managed Prometheus (billed by use)
    usage = {
        item
        for item, section in (("logs", "logs"), ("alerts", "notify"), ("managedPrometheus", "managed"))
        if cloud in monitoring.built(section)
    }
    assert set(fixed_prices.load(cloud).items) == asked | only | usage


def test_the_chinese_clouds_name_cny_the_others_usd():
    assert {c: fixed_prices.load(c).currency for c in CLOUDS} == {
        "aws": "USD",
        "azure": "USD",
        "gcp": "USD",
        "alicloud": "CNY",
        "tencentcloud": "CNY",
        "huaweicloud": "CNY",
    }


def test_a_price_without_a_source_or_a_gap_without_a_reason_is_refused():
    with pytest.raises(ValueError, match="a price without a source"):
        fixed_prices._price("natGateway", {"hourly": 0.045}, "USD", "us-east-1", "2026-12-02", "aws")
    with pytest.raises(ValueError, match="no price and no `unpriced` reason"):
        fixed_prices._price("natGateway", {"hourly": None}, "USD", "us-east-1", "2026-12-02", "aws")


def test_a_monthly_price_is_converted_at_730_hours_and_a_per_vm_price_says_so():
    monthly = fixed_prices._price("publicIp", {"monthly": 3.65, "source": "s"}, "USD", "r", "d", "azure")
    assert monthly.hourly == pytest.approx(3.65 / 730) and monthly.text == "3.65/month"
    per_vm = fixed_prices._price("natGateway", {"hourlyPerVm": 0.0014, "source": "s"}, "USD", "r", "d", "gcp")
    assert per_vm.per_vm and per_vm.hourly == 0.0014 and per_vm.text == "0.0014/h per VM"


# --- the bill of each mode, per cloud --------------------------------------------------------------------------


def test_aws_vm_stack_bills_its_nodes_their_disks_and_the_nat_gateway():
    result, spec = bill("aws-dev")
    got = items(result)
    assert set(got) == {"gpuNode", "bootDisk", "natGateway", "publicIp"}
    row = spec.instance
    assert got["gpuNode"]["hourly"] == row.hourlyUsd and got["gpuNode"]["per"] == "node"
    assert got["gpuNode"]["source"] == " ".join(load_catalog("aws").prices["source"].split())
    nat = price_file("aws")["items"]["natGateway"]
    assert (got["natGateway"]["hourly"], got["natGateway"]["per"]) == (nat["hourly"], "stack")
    assert got["natGateway"]["source"] == " ".join(nat["source"].split())
    disk = price_file("aws")["items"]["bootDisk"]["perGbMonth"]
    assert got["bootDisk"]["hourly"] == pytest.approx(disk * spec.storage.root_gb / 730, abs=1e-6)
    assert result["notCounted"] == []


def test_aws_slurm_stack_bills_head_and_login_at_the_karpenter_price():
    got = items(bill("aws-slurm-h100")[0])
    m7i = price_file("aws")["instances"]["hourly"]["m7i.large"]
    assert (got["headNode"]["hourly"], got["loginNode"]["hourly"]) == (m7i, m7i)
    assert "karpenter-provider-aws" in got["headNode"]["source"]
    assert got["headNode"]["per"] == got["loginNode"]["per"] == "stack"
    assert got["fixedVmDisks"]["unpriced"]  # their size is not in the layout: listed, not guessed


def test_a_scratch_disk_and_the_clusters_key_are_billed_where_the_stack_makes_them():
    got = items(bill("aws-a100-instances")[0])  # scratch: disk, 2 TB gp3 per node
    rate = price_file("aws")["items"]["scratchDisk"]["perGbMonth"]
    assert got["scratchDisk"]["per"] == "node"
    assert got["scratchDisk"]["hourly"] == pytest.approx(rate * 2000 / 730, abs=1e-6)
    got = items(bill("aws-h100-cmk")[0])  # encryption.key auto: one KMS key, $1/month
    assert got["encryptionKey"]["hourly"] == pytest.approx(1 / 730, abs=1e-6) and got["encryptionKey"]["per"] == "stack"
    assert "encryptionKey" not in items(bill("aws-h100")[0])  # the provider's keys: nothing billed
    assert "scratchDisk" not in items(bill("aws-h100")[0])  # local NVMe: in the node's price


def test_eks_bills_the_control_plane_and_the_system_pool_at_min_nodes_zero():
    result, spec = bill("aws-eks-h100")
    got = items(result)
    assert got["controlPlane"]["hourly"] == price_file("aws")["items"]["controlPlane"]["hourly"]
    assert got["systemPool"]["count"] == spec.kubernetes.system_nodes
    usd = result["totals"]["USD"]
    assert spec.min_nodes == 0 and usd["hourly"]["minNodes"] == usd["fixedHourly"] > 0.3  # not $0.00/h


def test_the_inference_fleet_at_min_nodes_costs_its_nat_gateway_and_load_balancer_not_zero():
    result, spec = bill("aws-inference-fleet")
    usd = result["totals"]["USD"]
    assert spec.min_nodes == 0
    # NAT gateway and its address, and the serving Network Load Balancer (serve:), which run with no node
    assert usd["hourly"]["minNodes"] == pytest.approx(0.045 + 0.005 + 0.0225, abs=0.005)
    balancer = next(i for i in result["items"] if i["item"] == "loadBalancer")
    assert (balancer["per"], balancer["hourly"], balancer["unpriced"]) == ("stack", 0.0225, None)
    assert usd["monthly"]["minNodes"] == pytest.approx(usd["hourly"]["minNodes"] * 730, abs=5)


def test_gcp_cloud_nat_is_billed_per_vm_and_gke_per_cluster():
    result, spec = bill("gcp-gke-a3mega")
    got = items(result)
    gcp = price_file("gcp")
    assert (
        got["natGateway"]["per"] == "node" and got["natGateway"]["hourly"] == gcp["items"]["natGateway"]["hourlyPerVm"]
    )
    assert got["natGatewayFixedVms"]["count"] == spec.kubernetes.system_nodes
    assert got["controlPlane"]["hourly"] == gcp["items"]["controlPlane"]["hourly"]
    assert got["systemPool"]["hourly"] == gcp["instances"]["hourly"]["e2-standard-4"] * spec.kubernetes.system_nodes


def test_gcp_login_and_unpriced_filestore_are_listed():
    result, _ = bill("gcp-h100-cmk")
    got = items(result)
    assert got["loginNode"]["hourly"] == price_file("gcp")["instances"]["hourly"]["e2-standard-2"]
    assert got["sharedStorage"]["unpriced"].startswith("no reference price found")
    assert any(n.startswith("shared filesystem Filestore") for n in result["notCounted"])


def test_azure_lists_bastion_as_not_counted_and_prices_the_nat_the_aks_tier_and_its_vms():
    result, spec = bill("azure-aks-h100")
    got, data = items(result), price_file("azure")
    assert got["natGateway"]["hourly"] == data["items"]["natGateway"]["hourly"]
    assert got["bastion"]["unpriced"]
    assert got["bastionPublicIp"]["hourly"] == got["publicIp"]["hourly"]  # Bastion's own Standard IP
    # the AKS tier the layout builds is the one priced (Standard, $0.10/h); the system pool at its D4s_v5 price
    layout = contract("azure").plan(spec)
    assert layout.aks.sku_tier == data["items"]["controlPlane"]["sku"] == "Standard"
    assert (got["controlPlane"]["hourly"], got["controlPlane"]["currency"]) == (0.10, "USD")
    d4 = data["instances"]["hourly"]["Standard_D4s_v5"]
    assert got["systemPool"]["hourly"] == pytest.approx(d4 * spec.kubernetes.system_nodes)
    assert got["loginNode"]["hourly"] == data["instances"]["hourly"]["Standard_D2s_v5"]
    assert "karpenter-provider-azure" in got["loginNode"]["source"]
    # AKS picks its pools' OS disk SKU (os_disk_type Managed): the Premium SSD tiers are not applied to it
    assert got["bootDisk"]["unpriced"].startswith("priced for Premium_LRS only")
    names = " | ".join(result["notCounted"])
    assert "Azure Bastion Standard (" in names and "Kubernetes control plane" not in names


@pytest.mark.parametrize("stack", ["alicloud-dev", "alicloud-a100-cmk", "alicloud-ack-erdma", "tencentcloud-dev"])
def test_alibaba_and_tencent_items_are_listed_unpriced_with_the_reason_never_dropped(stack):
    result, spec = bill(stack)
    got = items(result)
    assert {"gpuNode", "bootDisk", "natGateway", "publicIp"} <= set(got)
    if spec.slurm is not None:
        assert {"headNode", "loginNode"} <= set(got)
    if spec.kubernetes is not None:
        assert {"controlPlane", "systemPool"} <= set(got)
    assert len(result["notCounted"]) == sum(1 for i in result["items"] if i["unpriced"])
    assert all(i["unpriced"] for i in result["items"] if i["hourly"] is None)


# --- the arithmetic ---------------------------------------------------------------------------------------------

item_strategy = st.builds(
    lambda per, count, hourly, currency: BillItem(
        "x",
        "x",
        count,
        per,
        hourly,
        "",
        currency,
        None,
        None,
        None if hourly is None else "s",
        None if hourly is not None else "no source",
    ),
    st.sampled_from(["stack", "node"]),
    st.integers(1, 4),
    st.none() | st.floats(0, 200, allow_nan=False),
    st.sampled_from(["USD", "CNY"]),
)


@given(st.lists(item_strategy, max_size=8), st.integers(0, 50), st.integers(0, 50), st.integers(0, 50))
def test_totals_are_fixed_plus_per_node_times_nodes_per_currency_and_monthly_is_730_hours(bill_items, a, b, c):
    low, nodes, top = sorted((a, b, c))
    got = totals(bill_items, nodes, low, top)
    for currency in {i.currency for i in bill_items if i.hourly is not None}:
        fixed = sum(i.hourly or 0 for i in bill_items if i.currency == currency and i.per == "stack")
        per_node = sum(i.hourly or 0 for i in bill_items if i.currency == currency and i.per == "node")
        for key, n in (("nodes", nodes), ("minNodes", low), ("maxNodes", top)):
            assert got[currency]["hourly"][key] == pytest.approx(fixed + per_node * n, abs=0.006)
            assert got[currency]["monthly"][key] == pytest.approx((fixed + per_node * n) * HOURS_PER_MONTH, abs=0.006)
        assert got[currency]["hourly"]["minNodes"] <= got[currency]["hourly"]["maxNodes"] + 0.01
    # a currency with no priced item has no totals: nothing unpriced is ever added as zero
    assert set(got) == {i.currency for i in bill_items if i.hourly is not None}


@given(st.lists(item_strategy, max_size=6), st.integers(0, 20))
def test_an_unpriced_item_never_changes_the_totals(bill_items, nodes):
    gap = BillItem("gap", "gap", 3, "stack", None, "", "USD", None, None, None, "no source")
    assert totals([*bill_items, gap], nodes, 0, nodes) == totals(bill_items, nodes, 0, nodes)


# --- the plan: summary keys, the table row, the diff line ---------------------------------------------------


def test_the_plan_summary_adds_the_totals_and_keeps_the_old_keys():
    plan = plan_stack("aws-inference-fleet")
    s = plan.summary()
    assert s["hourlyUsd"] == round(s["hourlyUsdPerNode"] * s["nodes"], 2)  # GPU nodes only, as before
    assert s["hourlyUsdAtMinNodes"] == 0
    usd = s["costs"]["totals"]["USD"]
    assert s["totalHourlyUsd"] == usd["hourly"]["nodes"] and s["totalMonthlyUsd"] == usd["monthly"]["nodes"]
    assert s["totalHourlyUsdAtMinNodes"] == s["fixedHourlyUsd"] > 0
    assert s["totalHourlyUsdAtMaxNodes"] > s["hourlyUsdAtMaxNodes"]
    assert s["costs"]["hoursPerMonth"] == 730 and s["notCounted"] == s["costs"]["notCounted"]
    text = total_text(s)
    assert f"${s['totalHourlyUsdAtMinNodes']:,.2f}/h" in text and "at minNodes (0 nodes)" in text
    assert "(730 h)" in text


def test_the_total_row_names_what_is_not_counted():
    result, spec = bill("tencentcloud-dev")
    s = {"costs": result, "nodes": spec.nodes, "maxNodes": spec.max_nodes}
    cny = result["totals"]["CNY"]
    assert total_text(s).startswith(f"{cny['hourly']['nodes']:,.2f} CNY/h")
    assert "; not counted: login node S5.MEDIUM4" in total_text(s) and "GPU node" not in total_text(s)
    gaps = [i for i in result["items"] if i["unpriced"]]  # nothing priced: the row says so, and what is missing
    unknown = {"costs": {"items": gaps, "totals": {}}, "nodes": spec.nodes, "maxNodes": spec.max_nodes}
    assert total_text(unknown).startswith("unknown: no item has a sourced price; not counted: login node S5.MEDIUM4")


def test_alibaba_nodes_and_vms_are_priced_in_cny_in_the_stacks_region_never_converted():
    result, spec = bill("alicloud-a100-cmk")  # cn-beijing: 2 x gn7e, Slurm head and login g7.large
    got = items(result)
    table = price_file("alicloud")["instances"]["hourlyByRegion"][spec.region]
    assert (got["gpuNode"]["hourly"], got["gpuNode"]["currency"]) == (table[spec.instance.instanceType], "CNY")
    assert got["headNode"]["hourly"] == got["loginNode"]["hourly"] == table["ecs.g7.large"]
    assert "karpenter-provider-alibabacloud" in got["gpuNode"]["source"] and got["gpuNode"]["region"] == "cn-beijing"
    assert set(result["totals"]) == {"CNY"}  # no USD total is made up from CNY
    cny = result["totals"]["CNY"]
    assert cny["hourly"]["nodes"] == pytest.approx(
        2 * table[spec.instance.instanceType] + 2 * table["ecs.g7.large"], abs=0.01
    )
    s = {"costs": result, "nodes": spec.nodes, "maxNodes": spec.max_nodes}
    assert total_text(s).startswith(
        f"{cny['hourly']['nodes']:,.2f} CNY/h, {cny['monthly']['nodes']:,.2f} CNY/month (730 h)"
    )
    # a type the table has no price for in the region is listed, not guessed (ebmgn8v: none in cn-beijing)
    assert items(bill("alicloud-erdma")[0])["gpuNode"]["unpriced"]


def test_the_diff_line_compares_totals_and_falls_back_to_gpu_only_for_an_older_plan():
    new = {"totalGpus": 8, "hourlyUsd": 55.04, "totalHourlyUsd": 55.09}
    both = diff_plans({"stack": "s", "cloud": "aws", "resources": [], "summary": {**new, "totalHourlyUsd": 55.1}},
                      {"stack": "s", "cloud": "aws", "resources": [], "summary": new})  # fmt: skip
    assert both.summary["line"].endswith("est. $/h 55.10 -> 55.09")
    older = diff_plans({"stack": "s", "cloud": "aws", "resources": [], "summary": {"totalGpus": 8, "hourlyUsd": 50.0}},
                       {"stack": "s", "cloud": "aws", "resources": [], "summary": new})  # fmt: skip
    assert older.summary["line"].endswith("est. $/h 50.00 -> 55.04")


# --- prices by tier, by GB-hour and by the layout's SKU (issue 30 costs, issue 33 CNY prices) ----------------------


def tier_table(cloud: str, item: str) -> dict[str, tuple[int, float | None]]:
    return {t["name"]: (t["gb"], t["monthly"]) for t in price_file(cloud)["items"][item]["tiers"]}


@pytest.mark.parametrize(
    ("gb", "tier"), [(1, "P1"), (32, "P4"), (128, "P10"), (129, "P15"), (200, "P15"), (256, "P15"), (257, "P20")]
)
def test_an_azure_disk_is_billed_as_the_smallest_tier_that_holds_it(gb, tier):
    tiers = fixed_prices.load("azure").item("bootDisk").tiers
    chosen = fixed_prices.tier_for(tiers, gb)
    assert chosen is not None and chosen.name == tier
    assert fixed_prices.tier_for(tiers, 32768) is None  # above P80 (32,767 GiB): no tier


def test_azure_boot_and_scratch_disks_are_billed_at_their_premium_ssd_tier():
    result, spec = bill("azure-dev")  # 200 GB boot and 256 GB scratch: both P15
    got, tiers = items(result), tier_table("azure", "bootDisk")
    layout = contract("azure").plan(spec)
    assert (
        layout.os_disk_type
        == layout.scratch_disk.storage_account_type
        == price_file("azure")["items"]["bootDisk"]["sku"]
    )
    p15 = tiers["P15"][1]
    for item, gb in (("bootDisk", spec.storage.root_gb), ("scratchDisk", layout.scratch.total_gb)):
        assert 128 < gb <= tiers["P15"][0]
        assert got[item]["hourly"] == pytest.approx(p15 / HOURS_PER_MONTH, abs=1e-6)
        assert (got[item]["currency"], got[item]["per"]) == ("USD", "node")
        assert got[item]["price"].startswith("P15 (256 GB tier) 38.01/month")
    assert "finfocus-plugin-azure-public" in got["bootDisk"]["source"]


def test_a_tier_without_a_sourced_price_and_a_disk_type_the_price_is_not_for_stay_unpriced():
    azure = fixed_prices.load("azure")
    small = bill_module._disk("bootDisk", "boot disk", 50, azure, "Premium_LRS")  # P6: no sourced price
    assert small.hourly is None and "P6 (64 GB) has no sourced price" in (small.unpriced or "")
    gcp = fixed_prices.load("gcp")
    hyper = bill_module._disk("bootDisk", "boot disk", 200, gcp, "hyperdisk-balanced")
    assert hyper.hourly is None and hyper.unpriced == "priced for pd-ssd only; the layout's is hyperdisk-balanced"
    assert bill_module._disk("bootDisk", "boot disk", 200, gcp, "pd-ssd").hourly is not None


def test_azure_slurm_head_and_login_and_the_clusters_key_vault_key():
    got = items(bill("azure-slurm-elastic")[0])
    d2 = price_file("azure")["instances"]["hourly"]["Standard_D2s_v5"]
    assert (got["headNode"]["hourly"], got["loginNode"]["hourly"], got["headNode"]["currency"]) == (d2, d2, "USD")
    key = items(bill("azure-h100-cmk")[0])["encryptionKey"]  # a software RSA key in a standard vault: no monthly fee
    assert (key["hourly"], key["price"], key["unpriced"]) == (0.0, "0/month", None)


def test_gcp_pd_ssd_disks_and_the_cloud_kms_key_version():
    result, spec = bill("gcp-dev")
    got, data = items(result), price_file("gcp")["items"]
    layout = contract("gcp").plan(spec)
    assert layout.boot_disk_type == layout.scratch_disk_type == data["bootDisk"]["sku"] == "pd-ssd"
    rate = data["bootDisk"]["perGbMonth"]
    assert got["bootDisk"]["hourly"] == pytest.approx(rate * spec.storage.root_gb / HOURS_PER_MONTH, abs=1e-6)
    assert got["scratchDisk"]["hourly"] == pytest.approx(rate * layout.scratch.total_gb / HOURS_PER_MONTH, abs=1e-6)
    assert got["bootDisk"]["currency"] == "USD" and "infracost" in got["bootDisk"]["source"]
    key = items(bill("gcp-h100-cmk")[0])["encryptionKey"]
    assert key["hourly"] == pytest.approx(data["encryptionKey"]["monthly"] / HOURS_PER_MONTH, abs=1e-6)
    assert key["currency"] == "USD"


def test_ack_pro_bills_its_management_fee_in_cny_and_the_gn8_node_says_why_it_has_no_price():
    result, spec = bill("alicloud-ack-erdma")
    got, data = items(result), price_file("alicloud")
    assert contract("alicloud").plan(spec).kubernetes.cluster_spec == data["items"]["controlPlane"]["sku"]
    control = got["controlPlane"]
    assert (control["hourly"], control["currency"], control["per"]) == (0.64, "CNY", "stack")
    assert "help.aliyun.com" in control["source"]
    assert got["gpuNode"]["currency"] == "CNY" and "no gn8 type" in got["gpuNode"]["unpriced"]
    assert set(result["totals"]) == {"CNY"}
    cny = result["totals"]["CNY"]
    assert cny["fixedHourly"] == pytest.approx(0.64 + got["systemPool"]["hourly"], abs=0.01)


def test_tencent_bills_its_ssd_disks_per_gb_hour_its_nat_gateway_and_eip_in_cny():
    from components.layout.tencentcloud.nodes import DISK_TYPE

    result, spec = bill("tencentcloud-dev")
    got, data = items(result), price_file("tencentcloud")["items"]
    assert DISK_TYPE == data["bootDisk"]["sku"] == data["scratchDisk"]["sku"]  # the disk type the nodes get
    rate = data["bootDisk"]["perGbHour"]
    assert got["bootDisk"]["hourly"] == pytest.approx(rate * spec.storage.root_gb, abs=1e-6)
    assert got["bootDisk"]["price"] == f"{rate:g}/GB-hour x {spec.storage.root_gb} GB"
    assert (got["natGateway"]["hourly"], got["publicIp"]["hourly"]) == (data["natGateway"]["hourly"], 0.0)
    assert {got[i]["currency"] for i in ("bootDisk", "scratchDisk", "natGateway", "publicIp")} == {"CNY"}
    assert set(result["totals"]) == {"CNY"}  # never a USD figure from CNY items
    # the GN7 node: Tencent's CNY list price per hour (tests/test_china_prices.py), in the same CNY total
    assert (got["gpuNode"]["hourly"], got["gpuNode"]["currency"]) == (8.68, "CNY")


def test_a_tier_or_gb_hour_price_without_a_source_is_refused_and_gb_hours_make_gb_months():
    with pytest.raises(ValueError, match="a price without a source"):
        fixed_prices._price(
            "bootDisk", {"tiers": [{"name": "P10", "gb": 128, "monthly": 19.71}]}, "USD", "r", "d", "azure"
        )
    with pytest.raises(ValueError, match="no price and no `unpriced` reason"):
        fixed_prices._price(
            "bootDisk", {"tiers": [{"name": "P10", "gb": 128, "monthly": None}]}, "USD", "r", "d", "azure"
        )
    hourly = fixed_prices._price("bootDisk", {"perGbHour": 0.0025, "source": "s"}, "CNY", "r", "d", "tencentcloud")
    assert hourly.per_gb_month == pytest.approx(0.0025 * HOURS_PER_MONTH) and hourly.text == "0.0025/GB-hour"


def test_gcp_logs_and_alerts_are_named_as_not_counted_with_their_rates():
    from .conftest import plan_stack

    costs = plan_stack("gcp-slurm-elastic").as_json()["summary"]["costs"]
    items = {i["item"]: i for i in costs["items"]}
    assert items["logs"]["hourly"] is None and "$0.50/GiB" in items["logs"]["unpriced"]
    assert "per sample ingested" in items["alerts"]["unpriced"]
    assert any(n.startswith("the nodes' logs in Cloud Logging (billed by use") for n in costs["notCounted"])
