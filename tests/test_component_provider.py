"""An explicit provider (`ResourceOptions(providers=[...])` on `GpuCluster`) reaches every resource and
every invoke of the cluster, on every cloud (the mock monitor records the provider reference of each
registration and invoke: `components/plan/runner.py`)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from components.plan import load_stack
from components.plan.runner import PlanMocks, RecordingMonitor, run_program
from components.plan.stackfile import StackFile
from components.spec import build_spec

from .conftest import ROOT
from .test_component_api import STACKS, run_typed, typed_kwargs

# the provider SDK of each cloud and the provider's own region argument
PROVIDERS = {
    "aws": ("pulumi_aws", "region"),
    "azure": ("pulumi_azure_native", "location"),
    "gcp": ("pulumi_gcp", "region"),
    "alicloud": ("pulumi_alicloud", "region"),
    "tencentcloud": ("tencentcloud_iac_pulumi", "region"),
    "huaweicloud": ("pulumi_huaweicloud", "region"),
}


# clouds whose every shipped stack looks something up (AWS: the pinned DLAMI by name, zones; Alibaba: images, zones).
# GCP boots a pinned image by name since issue 28 (no compute.getImage of a family), so a VM stack may invoke nothing.
INVOKING_CLOUDS = ("aws", "alicloud")


@pytest.mark.parametrize("stack", STACKS)
def test_an_explicit_provider_is_used_by_every_resource_and_invoke(stack: str, tmp_path: Path) -> None:
    stack_file = load_stack(ROOT, stack)
    spec = build_spec(stack_file.values, stack, stack_file.project, stack_file.secret_keys)
    module, region_arg = PROVIDERS[spec.cloud]
    kwargs = typed_kwargs(stack_file.values, stack_file.secret_keys)
    monitor = RecordingMonitor(PlanMocks(spec.region))
    program = f"""
        import json
        import pulumi
        import {module} as sdk
        from components import GpuCluster, GpuClusterArgs

        explicit = sdk.Provider("explicit", {region_arg}={spec.region!r})
        cluster = GpuCluster(
            {spec.name!r},
            GpuClusterArgs(**json.loads({json.dumps(kwargs)!r})),
            pulumi.ResourceOptions(providers=[explicit]),
        )
        """
    (tmp_path / "__main__.py").write_text(textwrap.dedent(program))
    run = run_program(
        tmp_path / "__main__.py",
        StackFile("gpu-cluster", stack, tmp_path / f"Pulumi.{stack}.yaml", {}, ()),
        spec.region,
        monitor,
    )
    provider = next(r for r in run.resources if r.type.startswith("pulumi:providers:") and r.name == "explicit")
    reference = f"{provider.urn}::"
    # scheduler kubernetes: the in-cluster resources go through the cluster's own provider (its kubeconfig),
    # which nothing outside can hand in; every other resource takes the explicit one. A GKE cluster may have no
    # in-cluster resource (GKE installs the driver and device plugin itself, gcp-gke-l4-shared)
    in_cluster = [r for r in run.resources if r.type.startswith("kubernetes:")]
    own = [r for r in run.resources if r.type == "pulumi:providers:kubernetes"]
    assert bool(own) == (spec.scheduler == "kubernetes")
    assert own or not in_cluster
    own_refs = tuple(f"{r.urn}::" for r in own)
    assert all(r.provider.startswith(own_refs) for r in in_cluster)
    # monitoring.grafanaAdmins on AWS: the data source and dashboards inside Amazon Managed Grafana go through the
    # grafana provider the cluster configures with the workspace's URL and token, which nothing outside can hand in
    grafana = [r for r in run.resources if r.type == "pulumi:providers:grafana"]
    inside = [r for r in run.resources if r.type.startswith("grafana:")]
    assert bool(grafana) == bool(inside) == (spec.cloud == "aws" and bool(spec.monitoring.grafana_admins))
    assert all(r.provider.startswith(tuple(f"{g.urn}::" for g in grafana)) for r in inside)
    own, in_cluster = own + grafana, in_cluster + inside
    custom = [r for r in run.resources if r.custom and r is not provider and r not in own and r not in in_cluster]
    assert custom
    wrong = [
        f"{r.type} {r.name}: {r.provider or 'the default provider'}"
        for r in custom
        # pulumi_random (the Slurm MUNGE key) is no cloud's: it has no region or credentials to route; a dynamic
        # resource (Huawei's LTS ingestion) is served by Pulumi's Python dynamic provider, never a cloud's, and
        # takes the stack's credentials (the plan warns then)
        if not r.provider.startswith(reference) and not r.type.startswith(("random:", "pulumi-python:dynamic/"))
    ]
    assert not wrong
    invokes = [(token, ref) for token, ref in monitor.invokes if not token.startswith("pulumi:pulumi:")]
    wrong_invokes = [
        f"{token}: {ref or 'the default provider'}" for token, ref in invokes if not ref.startswith(reference)
    ]
    assert not wrong_invokes
    # not vacuous: the clouds whose programs look things up (images, zones, caller identity) did invoke, each
    # stack on its own (a check across the parametrized runs would see only one xdist worker's share of them)
    if spec.cloud in INVOKING_CLOUDS:
        assert any(token.startswith(f"{spec.cloud}:") for token, _ in invokes), invokes
    dynamic = [r for r in custom if r.type.startswith("pulumi-python:dynamic/")]
    warned = [w for w in run.warnings if "an explicit huaweicloud Provider is given" in w]
    # the Huawei stack that ships logs (LTS: huaweicloud-p3) registers the one dynamic resource
    ships_lts = spec.cloud == "huaweicloud" and spec.monitoring.logs.enabled
    assert len(warned) == len(dynamic) == (1 if ships_lts else 0)
    assert ships_lts == (stack == "huaweicloud-p3")  # not vacuous: the shipped one


def test_without_an_explicit_provider_the_default_one_is_used(tmp_path: Path) -> None:
    run = run_typed(
        tmp_path,
        """
        from components import GpuCluster, GpuClusterArgs

        GpuCluster("plain", GpuClusterArgs(cloud="aws", region="us-east-1", gpu="T4:1", zone="us-east-1a"))
        """,
    )
    assert all(not r.provider for r in run.resources)
