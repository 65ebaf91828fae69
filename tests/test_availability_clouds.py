"""Availability data for Azure and Tencent Cloud (Alibaba Cloud: tests/test_alicloud_catalog.py): a type the data says
is not sold in the stack's region exits 2 naming the regions that sell it; a region or type the source does not cover
is never refused; Tencent's zones check a configured zone but never default one (the deploy looks it up live)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from components import catalog
from components.catalog import availability
from components.errors import ConfigError
from components.plan import load_stack

from .conftest import ROOT, spec_of
from .test_plan_cli import STACKS


def azure(region: str = "eastus", **cluster: Any) -> dict[str, Any]:
    return {
        "gpu-cluster:cloud": "azure",
        "azure-native:location": region,
        "gpu-cluster:cluster": {"nodes": 1, "nodeGroup": "managed", **cluster},
    }


def tencent(region: str = "ap-shanghai", **cluster: Any) -> dict[str, Any]:
    return {
        "tencentcloud:region": region,
        "gpu-cluster:cloud": "tencentcloud",
        "gpu-cluster:cluster": {"nodes": 1, "nodeGroup": "instances", **cluster},
    }


# --- Azure (SkyPilot's catalog: US regions only, region level) -----------------------------------------


def test_azure_data_names_regions_only_and_leaves_h200_unknown():
    data = availability.load("azure")
    assert "@098741e70562f65d7af1cceb81e33b284f742604 catalogs/v6/azure/vms.csv" in data.source
    assert all(not o.zones for o in data.offers.values())
    assert availability.offer("azure", "Standard_ND96isr_H200_v5") is None  # no row in the source
    assert availability.sold_in("azure", "Standard_ND96isr_H100_v5", "westus2") is False
    assert availability.sold_in("azure", "Standard_ND96isr_H100_v5", "westeurope") is None  # outside the source


def test_azure_type_not_sold_in_the_region_exits_2_naming_where_it_is_sold():
    with pytest.raises(ConfigError) as info:
        spec_of(azure("centralus", gpu="H100:1"))
    assert info.value.key == "gpu-cluster:cluster.gpu"
    assert "Standard_NC40ads_H100_v5 is not sold in centralus" in info.value.message
    assert "eastus, eastus2, southcentralus, westus3" in info.value.message
    assert "catalog/availability/azure.yaml: skypilot-org/skypilot-catalog@098741e70562" in info.value.message


def test_azure_instance_type_not_sold_exits_2_on_instance_type():
    with pytest.raises(ConfigError) as info:
        spec_of(azure("westus2", instanceType="Standard_ND96isr_H100_v5", gpu="H100:8"))
    assert info.value.key == "gpu-cluster:cluster.instanceType"
    assert re.search(r"sold in westus2; .*: eastus, eastus2, westus \(", info.value.message)


def test_azure_region_outside_the_source_is_warned_not_refused():
    spec = spec_of(azure("westeurope", gpu="H100:8"))
    assert spec.instance.instanceType == "Standard_ND96isr_H100_v5"
    assert any("does not cover westeurope" in f.message for f in spec.findings)


def test_azure_unknown_type_is_never_refused():
    spec = spec_of(azure("centralus", gpu="H200:8"))  # the H200 size has no availability data
    assert spec.instance.instanceType == "Standard_ND96isr_H200_v5"
    assert spec.zone is None


# --- Tencent Cloud (Tencent's own doc: zones, never defaulted) --------------------------------------------


def test_tencent_zones_map_to_regions_and_hcc_stays_unknown():
    data = availability.load("tencentcloud")
    assert data.zone_default is False
    gt4 = availability.offer("tencentcloud", "GT4.41XLARGE948")
    assert gt4 is not None
    assert gt4.regions == ("ap-beijing", "ap-guangzhou", "ap-nanjing", "ap-shanghai")
    assert gt4.zones_in("ap-shanghai") == ("ap-shanghai-4", "ap-shanghai-5")
    assert availability.offer("tencentcloud", "HCCG5v.24XLARGE384") is None
    assert availability.offer("tencentcloud", "HCCPNV4h.48XLARGE1024") is None
    assert availability.zones_selling("tencentcloud", "GT4.41XLARGE948", "ap-shanghai") is None  # no default


def test_tencent_type_not_sold_in_the_region_exits_2_naming_where_it_is_sold():
    with pytest.raises(ConfigError) as info:
        spec_of(tencent("ap-singapore", instanceType="GT4.41XLARGE948"))
    assert info.value.key == "gpu-cluster:cluster.instanceType"
    assert (
        "GT4.41XLARGE948 is not sold in ap-singapore; regions that sell it (nearest first): "
        "ap-beijing, ap-guangzhou, ap-nanjing, ap-shanghai" in info.value.message
    )
    assert "catalog/availability/tencentcloud.yaml: tencentyun/intlcloud-documents 'GPU Computing Instance'" in (
        info.value.message
    )


def test_tencent_gpu_resolution_skips_a_type_not_sold_there():
    # V100-32GB:4 is GN10Xp.10XLARGE160 only, which Tencent's doc does not list in ap-hongkong
    with pytest.raises(catalog.CatalogError, match=re.escape("GN10Xp.10XLARGE160 is not sold in ap-hongkong")):
        catalog.resolve("tencentcloud", "V100-32GB", 4, region="ap-hongkong")
    assert catalog.resolve("tencentcloud", "V100-32GB", 4, region="ap-beijing").type.instanceType == (
        "GN10Xp.10XLARGE160"
    )


def test_tencent_unset_zone_is_left_to_the_deploy_and_a_wrong_zone_is_warned():
    spec = spec_of(tencent("ap-shanghai", gpu="T4:1"))
    assert spec.instance.instanceType == "GN7.2XLARGE32"
    assert spec.zone is None
    spec = spec_of(tencent("ap-shanghai", gpu="T4:1", zone="ap-shanghai-1"))
    assert spec.zone == "ap-shanghai-1"
    assert any(
        "not sold in zone ap-shanghai-1" in f.message and "ap-shanghai-2, ap-shanghai-3" in f.message
        for f in spec.findings
    )


def test_tencent_region_outside_the_source_is_warned_not_refused():
    spec = spec_of(tencent("na-toronto", instanceType="GN7.2XLARGE32"))  # a region the doc names for no GPU family
    assert spec.instance.instanceType == "GN7.2XLARGE32"
    assert any("does not cover na-toronto" in f.message for f in spec.findings)


# --- Alibaba Cloud: tests/test_alicloud_catalog.py ------------------------------------------------------------


# --- every shipped stack still resolves where its type is sold (test_plan_cli plans each one in full) ---------


@pytest.mark.parametrize("stack", STACKS)
def test_every_shipped_stack_resolves_where_its_type_is_sold_or_unknown(stack):
    spec = spec_of(load_stack(ROOT, stack).values, stack)
    assert availability.sold_in(spec.cloud, spec.instance.instanceType, spec.region) in (True, None)
    assert not any(f.level == "warning" and "availability" in f.message for f in spec.findings)


def test_tencent_regions_order_by_part_of_the_world():
    regions = ["ap-singapore", "eu-frankfurt", "sa-saopaulo", "na-siliconvalley"]
    order = availability.nearest_first("na-ashburn", regions)
    assert order == ["na-siliconvalley", "sa-saopaulo", "ap-singapore", "eu-frankfurt"]
