"""Drain-first replacements on Azure (`update:`): the scale set's Rolling upgrade policy gated by the Application Health
extension, its Scheduled Events Terminate notification (the drain budget), Manual where there is no health signal,
the AKS GPU pool's upgradeSettings, as registered with the mocks; the refusals; and the diff of an image bump."""

import pytest

from components.diff import diff_plans
from components.errors import ConfigError

from .conftest import one, plan_json, plan_stack_with, plan_values, resources_of, spec_of
from .test_azure_resources import azure_values

VMSS = "azure-native:compute:VirtualMachineScaleSet"


@pytest.mark.parametrize("stack", ["azure-h100", "azure-dev", "azure-h100-cmk"])
def test_every_shipped_scale_set_rolls_health_gated_and_notifies_before_terminating(stack_plan, stack):
    vmss = one(stack_plan(stack), "compute:VirtualMachineScaleSet")["inputs"]
    nodes = vmss["sku"]["capacity"]
    batch = 100 // nodes  # one VM per batch (minHealthyPercent 90, no surge): 50% of 2, 100% of 1
    assert vmss["upgradePolicy"] == {
        "mode": "Rolling",
        "rollingUpgradePolicy": {
            "maxBatchInstancePercent": batch,
            "maxUnhealthyInstancePercent": batch,  # the batch itself may be down, nothing more
            "maxSurge": False,
            "rollbackFailedInstancesOnPolicyBreach": True,
            "prioritizeUnhealthyInstances": True,
        },
    }
    # the health signal Rolling needs: the Application Health extension of the scale set
    extensions = vmss["virtualMachineProfile"]["extensionProfile"]["extensions"]
    assert any(e["type"].startswith("ApplicationHealth") for e in extensions)
    assert vmss["virtualMachineProfile"]["scheduledEventsProfile"] == {
        "terminateNotificationProfile": {"enable": True, "notBeforeTimeout": "PT5M"}  # Azure's default, 5 minutes
    }


def test_the_update_block_sets_batches_surge_and_drain_budget():
    plan = plan_values(
        azure_values(nodes=4, update={"maxSurge": 2, "minHealthyPercent": 100, "drainTimeoutSeconds": 900})
    )
    vmss = one(plan, "compute:VirtualMachineScaleSet")["inputs"]
    rolling = vmss["upgradePolicy"]["rollingUpgradePolicy"]
    assert (rolling["maxBatchInstancePercent"], rolling["maxSurge"]) == (50, True)
    notice = vmss["virtualMachineProfile"]["scheduledEventsProfile"]["terminateNotificationProfile"]
    assert notice["notBeforeTimeout"] == "PT15M"
    assert any("MaxSurgeRollingUpgrade" in w for w in plan.run.warnings + list(plan.layout.warnings))


def test_without_a_health_signal_the_scale_set_stays_manual_and_says_how_to_roll():
    plan = plan_values(azure_values(health={"enabled": False}))
    vmss = one(plan, "compute:VirtualMachineScaleSet")["inputs"]
    assert vmss["upgradePolicy"] == {"mode": "Manual"}
    assert "scheduledEventsProfile" in vmss["virtualMachineProfile"]  # a scale-in still drains
    assert any("az vmss update-instances" in w for w in plan.layout.warnings)


def test_manual_strategy_keeps_the_terminate_notification():
    vmss = one(plan_values(azure_values(update={"strategy": "manual"})), "compute:VirtualMachineScaleSet")["inputs"]
    assert vmss["upgradePolicy"] == {"mode": "Manual"}
    assert vmss["virtualMachineProfile"]["scheduledEventsProfile"]["terminateNotificationProfile"]["enable"] is True


def test_the_aks_gpu_pool_drains_within_the_budget(stack_plan):
    pools = resources_of(stack_plan("azure-aks-h100"), "containerservice:AgentPool")
    gpu = next(p["inputs"] for p in pools if p["inputs"]["agentPoolName"] == "gpu")
    assert gpu["upgradeSettings"] == {"maxSurge": "0", "maxUnavailable": "1", "drainTimeoutInMinutes": 30}


@pytest.mark.parametrize(
    ("update", "key", "says"),
    [
        ({"drainTimeoutSeconds": 1200}, "drainTimeoutSeconds", "allowed: 300 to 900"),
        ({"drainTimeoutSeconds": 330}, "drainTimeoutSeconds", "whole minutes"),
        ({"minHealthyPercent": 100}, "minHealthyPercent", "maxSurge 1 or more"),
    ],
)
def test_refusals_name_the_key(update, key, says):
    with pytest.raises(ConfigError) as info:
        spec_of(azure_values(update=update))
    assert info.value.key == f"gpu-cluster:cluster.update.{key}"
    assert says in info.value.message


def test_an_image_bump_on_a_scale_set_is_an_in_place_update_that_rolls():
    urn = "/subscriptions/0/resourceGroups/g/providers/Microsoft.Compute/galleries/x/images/gpu/versions"
    d = diff_plans(
        plan_json(plan_stack_with("azure-dev", image=f"{urn}/1.0.0")),
        plan_json(plan_stack_with("azure-dev", image=f"{urn}/1.0.1")),
    )
    vmss = next(c for c in d.changed if c.type == VMSS)
    assert vmss.verdict == "refresh"  # the scale set's model is updated in place, not replaced
    assert not d.may_replace
    assert any("rolled out by the group itself" in w for w in d.warnings)
