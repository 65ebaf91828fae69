"""The plan says how to log in, how to list the nodes, and what the nodes' identity may do, on every cloud."""

from __future__ import annotations

import pytest

from components.plan.render import summary_rows

from .conftest import plan_stack

CASES = [
    ("aws-h100", "ssm", "aws ssm start-session", "instance-profile"),
    ("azure-h100", "bastion", "az network bastion ssh", "managed-identity"),
    ("gcp-a3mega", "iap", "--tunnel-through-iap", "service-account"),
    ("alicloud-erdma", "session-manager", "ali-instance-cli session", "ram-role"),
]


@pytest.mark.parametrize(("stack", "method", "command", "kind"), CASES)
def test_summary_has_the_way_in_and_the_identity(stack, method, command, kind):
    plan = plan_stack(stack)
    s = plan.summary()
    assert s["access"]["method"] == method
    assert command in s["access"]["command"]
    assert s["access"]["nodes"]  # how to list the nodes' private IPs
    assert s["identity"]["kind"] == kind
    rows = dict(summary_rows(plan))
    assert rows["access"].startswith(f"{method}: ") and command in rows["access"]
    assert rows["identity"].startswith(kind)


def test_identity_row_lists_every_grant():
    rows = dict(summary_rows(plan_stack("aws-h100")))
    for grant in ("AmazonSSMManagedInstanceCore", "AmazonEC2ContainerRegistryReadOnly", "CloudWatchAgentServerPolicy"):
        assert grant in rows["identity"]


def test_a_bastion_says_it_is_billed():
    rows = dict(summary_rows(plan_stack("azure-h100")))
    assert "Bastion billed per hour" in rows["access"] or "Bastion $" in rows["access"]


def test_the_summary_reports_the_placement_applied_not_the_one_asked():
    import copy

    from components.plan import load_stack

    from .conftest import ROOT, plan_values

    values = copy.deepcopy(load_stack(ROOT, "alicloud-erdma").values)
    values["gpu-cluster:cluster"]["nodeGroup"] = "managed"
    plan = plan_values(values, "alicloud-erdma")
    s = plan.summary()
    assert s["placementRequested"] == "cluster" and s["placement"] == "none"
    assert plan.run.outputs["placement"] == "none"
    assert "none (asked: cluster" in dict(summary_rows(plan))["node group"]


def test_the_summary_says_whether_nccl_can_use_the_fabric():
    from .conftest import aws_values, plan_values

    wired = plan_stack("aws-h100").summary()
    assert wired["fabricUsable"] is True and wired["fabricMissing"] == []
    custom = plan_values(aws_values(image="ami-0123456789abcdef0"))
    s = custom.summary()
    assert s["fabricUsable"] is False and s["fabricMissing"]
    assert "NOT usable by NCCL: missing" in dict(summary_rows(custom))["fabric"]
    none = plan_stack("aws-dev").summary()
    assert none["fabric"] == "none" and "usable" not in dict(summary_rows(plan_stack("aws-dev")))["fabric"]
