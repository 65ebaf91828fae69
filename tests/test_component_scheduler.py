"""The typed API of `scheduler`: args fields `scheduler`, `kubernetes`, `slurm` (Python and schema), typed outputs
`kubernetes`, `kubeconfig` (secret), `slurm` (None where absent), and the stack facts the policies read."""

from __future__ import annotations

import json
from typing import Any

import pytest
from typer.testing import CliRunner

from components import GpuClusterArgs, GpuClusterArgsError
from components.cli import app
from components.errors import CLUSTER_KEY
from components.provider import to_args
from components.provider_types import GpuSoftware, Scheduler

from .conftest import ROOT, plan_stack

TOKEN = "gpu-cluster:index:GpuCluster"
AWS = {"cloud": "aws", "region": "us-east-1", "gpu": "H100:8"}


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    result = CliRunner().invoke(app, ["schema"])
    assert result.exit_code == 0, result.output
    parsed: dict[str, Any] = json.loads(result.stdout)
    return parsed


def test_the_schema_takes_the_scheduler_and_its_blocks(schema: dict[str, Any]) -> None:
    inputs = schema["resources"][TOKEN]["inputProperties"]
    assert inputs["scheduler"]["$ref"] == "#/types/gpu-cluster:index:Scheduler"
    values = [e["value"] for e in schema["types"]["gpu-cluster:index:Scheduler"]["enum"]]
    assert values == ["none", "kubernetes", "slurm"]
    kube = schema["types"][inputs["kubernetes"]["$ref"].removeprefix("#/types/")]["properties"]
    assert set(kube) == {
        "version", "publicEndpoint", "publicCidrs", "gpuSoftware", "systemInstanceType", "systemNodes",
        "serviceMonitor", "gpuSharing", "clusterName",
    }  # fmt: skip
    assert kube["publicCidrs"]["type"] == "array"
    sharing = schema["types"][kube["gpuSharing"]["$ref"].removeprefix("#/types/")]["properties"]
    assert set(sharing) == {"mode", "replicas", "migProfile"}
    modes = [e["value"] for e in schema["types"][sharing["mode"]["$ref"].removeprefix("#/types/")]["enum"]]
    assert modes == ["none", "timeSlicing", "mps", "mig"]
    slurm = schema["types"][inputs["slurm"]["$ref"].removeprefix("#/types/")]["properties"]
    assert set(slurm) == {
        "headInstanceType", "accounting", "partition", "partitions", "suspendAfterSeconds", "resumeTimeoutSeconds",
        "users", "containers", "mps",
    }  # fmt: skip
    assert slurm["mps"]["type"] == "boolean"


def test_the_schema_outputs_are_optional_and_the_kubeconfig_a_string(schema: dict[str, Any]) -> None:
    resource = schema["resources"][TOKEN]
    assert resource["properties"]["kubeconfig"]["type"] == "string"
    # typed output objects (components/output_types.py), not untyped maps
    assert resource["properties"]["kubernetes"]["$ref"] == "#/types/gpu-cluster:index:ClusterKubernetes"
    assert resource["properties"]["slurm"]["$ref"] == "#/types/gpu-cluster:index:ClusterSlurm"
    assert resource["properties"]["kubeconfig"]["secret"] is True
    assert not {"kubernetes", "kubeconfig", "slurm"} & set(resource["required"])  # None without that scheduler


def test_the_args_fields_write_the_stack_files_keys() -> None:
    args = GpuClusterArgs(
        **AWS,
        scheduler="kubernetes",
        kubernetes={"version": "1.33", "publicEndpoint": True, "publicCidrs": ["203.0.113.0/24"]},
    )
    values, _ = args.to_config()
    assert values[CLUSTER_KEY]["scheduler"] == "kubernetes"
    assert values[CLUSTER_KEY]["kubernetes"] == {
        "version": "1.33",
        "publicEndpoint": True,
        "publicCidrs": ["203.0.113.0/24"],
    }
    back = GpuClusterArgs.from_config({**values, CLUSTER_KEY: json.dumps(values[CLUSTER_KEY])})
    assert back.scheduler == "kubernetes" and back.kubernetes == values[CLUSTER_KEY]["kubernetes"]


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"scheduler": "nomad"}, "args.scheduler: "),
        ({"scheduler": "slurm", "slurm": {"headInstanceType": "p5.48xlarge"}}, "args.slurm.headInstanceType: "),
        ({"scheduler": "slurm", "kubernetes": {"version": "1.33"}}, "args.kubernetes: "),
        ({"scheduler": "kubernetes", "kubernetes": {"publicEndpoint": True}}, "args.kubernetes.publicCidrs: "),
    ],
)
def test_bad_scheduler_args_name_the_field(kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(GpuClusterArgsError) as info:
        GpuClusterArgs(**AWS, **kwargs).to_spec("test", python_names=True)
    assert field in str(info.value)


def test_the_providers_inputs_become_the_same_args() -> None:
    args = to_args(
        {
            "cloud": "aws",  # type: ignore[typeddict-item]
            "scheduler": Scheduler.KUBERNETES,
            "kubernetes": {"gpu_software": GpuSoftware.DEVICE_PLUGIN, "system_nodes": 3, "public_cidrs": []},
            "slurm": {"head_instance_type": "m7i.large"},
        }
    )
    assert args.scheduler == "kubernetes"
    assert args.kubernetes == {"gpuSoftware": "device-plugin", "systemNodes": 3, "publicCidrs": []}
    assert args.slurm == {"headInstanceType": "m7i.large"}


def _facts(stack: str) -> dict[str, Any]:
    plan = plan_stack(stack)
    component = next(r for r in plan.resources if r.type == TOKEN)
    facts: dict[str, Any] = component.inputs["stackFacts"]
    return facts


def test_without_a_scheduler_nothing_is_added() -> None:
    cluster = plan_stack("aws-h100").run.program_globals["cluster"]
    assert cluster.kubernetes is None and cluster.kubeconfig is None and cluster.slurm is None
    assert not {"scheduler", "kubernetesPublicEndpoint", "kubernetesPublicCidrs"} & set(_facts("aws-h100"))


KUBERNETES_STACKS = [
    s
    for s in ("aws-eks-h100", "gcp-gke-a3mega", "azure-aks-h100", "alicloud-ack-erdma")
    if (ROOT / "stacks" / f"Pulumi.{s}.yaml").exists()
]


@pytest.mark.parametrize("stack", KUBERNETES_STACKS)
def test_a_kubernetes_cluster_has_its_outputs_and_a_secret_kubeconfig(stack: str) -> None:
    plan = plan_stack(stack)
    cluster = plan.run.program_globals["cluster"]
    assert cluster.kubernetes is not None and cluster.kubeconfig is not None and cluster.slurm is None
    assert plan.run.outputs["kubeconfig"] == "[secret]"
    info = plan.run.outputs["kubernetes"]
    assert {"clusterName", "endpoint", "version", "nodePools", "credentials", "releases"} <= set(info)
    facts = _facts(stack)
    assert facts["scheduler"] == "kubernetes"
    assert facts["kubernetesPublicEndpoint"] is plan.spec.kubernetes.public_endpoint  # type: ignore[union-attr]
    assert facts["kubernetesPublicCidrs"] == list(plan.spec.kubernetes.public_cidrs)  # type: ignore[union-attr]


def test_a_slurm_cluster_has_its_output_and_no_kubernetes() -> None:
    if not (ROOT / "stacks" / "Pulumi.aws-slurm-h100.yaml").exists():
        pytest.skip("the Slurm stack is not shipped yet")
    cluster = plan_stack("aws-slurm-h100").run.program_globals["cluster"]
    assert cluster.slurm is not None and cluster.kubernetes is None and cluster.kubeconfig is None
    assert _facts("aws-slurm-h100")["scheduler"] == "slurm"
