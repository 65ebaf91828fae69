"""CNY prices on Tencent Cloud and Huawei Cloud's unpriced bill (issue 33 "prices in CNY", issue 30 costs): the GPU
node types Tencent's own price overview lists are billed at that price per hour in every Tencent shipped stack, the
totals add it to the fixed costs per hour and per 730-hour month, and every item without a sourced price (Tencent's
S5 VMs and TKE fee, every Huawei item) is named with what was searched.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from components.catalog import fixed_prices
from components.catalog import load as load_catalog
from components.catalog.fixed_prices import HOURS_PER_MONTH
from components.plan.render import cost_text, total_text

from .conftest import ROOT, plan_stack

TENCENT_STACKS = ("tencentcloud-dev", "tencentcloud-mlps3", "tencentcloud-slurm", "tencentcloud-tke")
HUAWEI_STACKS = ("huaweicloud-cce", "huaweicloud-dev", "huaweicloud-p3", "huaweicloud-shared")


def price_table(cloud: str) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((ROOT / "components/catalog/prices" / f"{cloud}.yaml").read_text())
    return data


def costs_of(stack: str) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    summary = plan_stack(stack).summary()
    return summary, {i["item"]: i for i in summary["costs"]["items"]}


def test_every_tencent_catalog_type_has_a_cny_price_or_says_why_not():
    prices = fixed_prices.load("tencentcloud")
    table = price_table("tencentcloud")["instances"]
    assert "qcloud-documents@8ec072968ccbe6d60a8de2a7d57b4739a6814542" in (prices.instances_source or "")
    assert "GPU 云服务器/购买指导/价格总览.md" in (prices.instances_source or "")
    for row in load_catalog("tencentcloud").types:
        price = prices.instance(row.instanceType, "ap-shanghai")
        if row.instanceType in table["hourly"]:
            assert (price.hourly, price.currency, price.region) == (table["hourly"][row.instanceType], "CNY",
                                                                    "mainland China")  # fmt: skip
        else:  # PNV4 and the HCC types: not on the page, and the reason says so
            assert price.hourly is None and "lists no" in (price.unpriced or ""), row.instanceType


@pytest.mark.parametrize(
    ("itype", "cny"),
    [("GN7.2XLARGE32", 8.68), ("GN7.20XLARGE320", 55.55), ("GN10Xp.2XLARGE40", 11.98), ("GT4.41XLARGE948", 237.51)],
)
def test_the_gpu_prices_are_the_pages_pay_as_you_go_figures(itype, cny):
    # GN7: the upper end of the page's range (its standard list price); GN10Xp and GT4: the page's single figure
    assert fixed_prices.load("tencentcloud").instance(itype).hourly == cny


@pytest.mark.parametrize("stack", TENCENT_STACKS)
def test_a_tencent_gn7_stack_bills_its_nodes_at_the_sourced_cny_price_times_hours(stack):
    summary, got = costs_of(stack)
    node = got["gpuNode"]
    cny = price_table("tencentcloud")["instances"]["hourly"]["GN7.2XLARGE32"]
    assert (node["hourly"], node["currency"], node["per"], node["unpriced"]) == (cny, "CNY", "node", None)
    assert "qcloud-documents@8ec0729" in node["source"] and node["region"] == "mainland China"
    totals = summary["costs"]["totals"]
    assert set(totals) == {"CNY"}  # never converted to USD
    per_node = sum(i["hourly"] for i in got.values() if i["per"] == "node" and i["hourly"] is not None)
    fixed = sum(i["hourly"] for i in got.values() if i["per"] == "stack" and i["hourly"] is not None)
    assert totals["CNY"]["perNodeHourly"] == pytest.approx(per_node, abs=0.01)
    assert totals["CNY"]["fixedHourly"] == pytest.approx(fixed, abs=0.01)
    for at in ("nodes", "minNodes", "maxNodes"):
        hourly = fixed + per_node * summary[at]
        assert totals["CNY"]["hourly"][at] == pytest.approx(hourly, abs=0.01)
        assert totals["CNY"]["monthly"][at] == pytest.approx(hourly * HOURS_PER_MONTH, abs=0.05)


def test_the_slurm_stacks_total_is_two_nodes_their_disks_and_the_nat_gateway():
    summary, got = costs_of("tencentcloud-slurm")  # 2 x GN7.2XLARGE32, 200 GB boot and 200 GB scratch SSD each
    data = price_table("tencentcloud")
    node = data["instances"]["hourly"]["GN7.2XLARGE32"] + data["items"]["bootDisk"]["perGbHour"] * (200 + 200)
    expected = 2 * node + data["items"]["natGateway"]["hourly"]
    assert summary["costs"]["totals"]["CNY"]["hourly"]["nodes"] == pytest.approx(expected, abs=0.01)
    assert summary["costs"]["totals"]["CNY"]["monthly"]["nodes"] == pytest.approx(expected * 730, abs=0.05)
    assert total_text(summary).startswith(f"{expected:,.2f} CNY/h, {expected * 730:,.2f} CNY/month (730 h)")
    # the head and login VMs (S5) have no sourced price: named, never guessed
    assert "Slurm head S5.MEDIUM4" in total_text(summary) and got["headNode"]["hourly"] is None
    assert "S5" in got["headNode"]["unpriced"] and "searched" in got["headNode"]["unpriced"]


def test_the_cost_row_shows_the_cny_node_price_and_no_usd_figure():
    summary, _ = costs_of("tencentcloud-dev")
    assert summary["hourlyUsdPerNode"] is None  # the catalog has no USD price for Tencent
    assert cost_text(summary) == "no USD price; 8.68 CNY/h per node (in est. total)"
    hcc, _ = costs_of("tencentcloud-hcc")  # HCCG5v: no price in any currency
    assert cost_text(hcc) == "unknown (no public price)"


def test_the_tke_fee_is_not_counted_and_says_which_levels_cost_what():
    _, got = costs_of("tencentcloud-tke")
    why = got["controlPlane"]["unpriced"]
    assert got["controlPlane"]["hourly"] is None
    assert "0.13 元/小时 at L5" in why and "sets no cluster_level" in why and "154e470" in why


def test_the_hcc_stack_names_its_unpriced_node_and_still_totals_its_fixed_costs():
    summary, got = costs_of("tencentcloud-hcc")
    assert got["gpuNode"]["hourly"] is None and "lists no HCC type" in got["gpuNode"]["unpriced"]
    assert (
        summary["costs"]["totals"]["CNY"]["fixedHourly"] == price_table("tencentcloud")["items"]["natGateway"]["hourly"]
    )
    assert "GPU node HCCG5v.24XLARGE384" in total_text(summary)


@pytest.mark.parametrize("stack", HUAWEI_STACKS)
def test_a_huawei_stack_names_every_item_as_unpriced_with_what_was_searched(stack):
    summary, got = costs_of(stack)
    assert summary["costs"]["totals"] == {}  # no Huawei list price in the stored sources: no total is made up
    assert total_text(summary).startswith("unknown: no item has a sourced price; not counted: GPU node ")
    for item in got.values():
        assert item["hourly"] is None and item["unpriced"], item["item"]
    for name in ("gpuNode", "bootDisk", "loginNode", "natGateway", "publicIp", "encryptionKey"):
        assert "searched" in got[name]["unpriced"] or "not built" in got[name]["unpriced"], name
    assert len(summary["costs"]["notCounted"]) == len(got)


def test_every_huawei_catalog_flavor_has_its_reason():
    prices = fixed_prices.load("huaweicloud")
    for row in load_catalog("huaweicloud").types:
        why = prices.instance(row.instanceType, "cn-north-4").unpriced or ""
        assert why.startswith("a GPU ECS flavor: no list price found"), row.instanceType


@pytest.mark.parametrize("stack", ["tencentcloud-tke", "alicloud-ack-erdma"])
def test_the_kubernetes_secrets_key_is_billed_as_a_key_and_named_when_unpriced(stack):
    # TKE and ACK wrap Secrets with a KMS key of their own (kms.Key in the plan): the bill lists it like the
    # cluster's encryption key, at that key's price or with its reason
    summary, got = costs_of(stack)
    cloud = stack.split("-")[0]
    assert any(r["type"].lower().endswith("kms/key:key") for r in plan_stack(stack).as_json()["resources"])
    key = got["kubernetesSecretsKey"]
    assert (key["per"], key["count"], key["hourly"]) == ("stack", 1, None)
    assert key["unpriced"] == fixed_prices.load(cloud).item("encryptionKey").unpriced
    assert "Secrets key" in key["unpriced"]
    assert any(n.startswith("the Kubernetes Secrets' KMS key (") for n in summary["costs"]["notCounted"])
