"""The typed Python API: `GpuCluster(name, GpuClusterArgs(...))` is the stack program's own path.

- every shipped stack, written as typed args in a program of its own, registers exactly the resources
  (URNs, types, parents, inputs, options) and exports exactly the outputs the stack-config path does;
- typed outputs have the same names on every cloud (None where a cloud has no such thing);
- bad args raise one message naming the field (`args.max_nodes`);
- the README's "Use it from your own program" example runs under mocks.
"""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path
from typing import Any

import pytest

from components import GpuClusterArgs, GpuClusterArgsError
from components.args import _camel
from components.catalog import load
from components.cluster import OUTPUT_KEYS
from components.errors import CLUSTER_KEY, ConfigError
from components.plan import load_stack
from components.plan.runner import ProgramRun, run_program
from components.plan.stackfile import StackFile
from components.spec import build_spec

from .conftest import ROOT, plan_stack, shipped_stacks

STACKS = shipped_stacks()


def run_typed(tmp_path: Path, body: str, stack: str = "typed", region: str = "us-east-1") -> ProgramRun:
    """Run a program of our own (no stack config at all) under the plan's mocks."""
    program = tmp_path / "__main__.py"
    program.write_text(textwrap.dedent(body))
    return run_program(program, StackFile("gpu-cluster", stack, tmp_path / f"Pulumi.{stack}.yaml", {}, ()), region)


def _snake(key: str) -> str:
    return re.sub(r"(?<!^)([A-Z])", r"_\1", key).lower()


def typed_kwargs(values: dict[str, Any], secret_keys: tuple[str, ...]) -> dict[str, Any]:
    """A stack file's config written as `GpuClusterArgs` keyword arguments, by hand (not `from_config`)."""
    cloud = values["gpu-cluster:cloud"]
    rule = load(cloud).rules["region"]
    kwargs: dict[str, Any] = {"cloud": cloud, "region": values[rule["key"]]}
    if rule.get("project"):
        kwargs["project"] = values[rule["project"]]
    if load(cloud).rules["zoneKey"] in values:
        kwargs["zone"] = values[load(cloud).rules["zoneKey"]]
    kwargs.update({_snake(k): v for k, v in values[CLUSTER_KEY].items()})
    if "gpu-cluster:maxHourlyUsd" in values:
        kwargs["max_hourly_usd"] = values["gpu-cluster:maxHourlyUsd"]
    kwargs["secret"] = CLUSTER_KEY in secret_keys
    return kwargs


@pytest.mark.parametrize("stack", STACKS)
def test_typed_args_register_what_the_stack_config_registers(stack: str, tmp_path: Path) -> None:
    stack_file = load_stack(ROOT, stack)
    spec = build_spec(stack_file.values, stack, stack_file.project, stack_file.secret_keys)
    kwargs = typed_kwargs(stack_file.values, stack_file.secret_keys)
    run = run_typed(
        tmp_path,
        f"""
        import json
        import pulumi
        from components import GpuCluster, GpuClusterArgs

        cluster = GpuCluster({spec.name!r}, GpuClusterArgs(**json.loads({json.dumps(kwargs)!r})))
        for key, value in cluster.outputs.items():
            pulumi.export(key, value)
        """,
        stack=stack,
        region=spec.region,
    )
    shipped = plan_stack(stack)
    assert [r.as_json() for r in run.resources] == [r.as_json() for r in shipped.resources]
    assert run.outputs == shipped.run.outputs
    assert run.warnings == shipped.run.warnings


def test_from_config_is_lossless_for_every_shipped_stack() -> None:
    for stack in STACKS:
        stack_file = load_stack(ROOT, stack)
        engine = stack_file.engine_config()  # as the engine passes it: text, objects as JSON
        args = GpuClusterArgs.from_config(engine, stack_file.secret_keys)
        values, secret = args.to_config()
        assert secret == ({CLUSTER_KEY} if CLUSTER_KEY in stack_file.secret_keys else set())
        assert values == {**engine, CLUSTER_KEY: json.loads(engine[CLUSTER_KEY])}


@pytest.mark.parametrize("stack", STACKS)
def test_typed_outputs_have_the_same_names_on_every_cloud(stack: str) -> None:
    cluster = plan_stack(stack).run.program_globals["cluster"]
    for attr, key in OUTPUT_KEYS.items():
        value = getattr(cluster, attr)
        if key in cluster.outputs and cluster.outputs[key] is not None:
            assert value is not None, attr
        else:
            assert value is None, attr
    for attr in ("vpc_id", "subnet_ids", "security_group_id", "identity", "access", "fabric_gbps_per_node"):
        assert getattr(cluster, attr) is not None, attr
    assert (cluster.node_group is None) != (cluster.instance_ids is None)
    assert cluster.placement_requested is not None


def test_bad_args_raise_one_message_naming_the_fields() -> None:
    args = GpuClusterArgs(cloud="aws", region="us-east-1", gpu="H100:8", max_nodes=-2, network={"cidr": "8.8.0.0/16"})
    with pytest.raises(GpuClusterArgsError) as info:
        args.to_spec("test", python_names=True)
    message = str(info.value)
    assert message.startswith("invalid GpuClusterArgs: ")
    assert "args.max_nodes: got -2;" in message
    assert "args.network.cidr: got '8.8.0.0/16'" in message
    assert "\n" not in message
    assert isinstance(info.value, ConfigError)  # the stack program's handler catches it too


AWS = {"cloud": "aws", "region": "us-east-1"}


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"cloud": "aws2"}, "args.cloud"),
        ({"cloud": "aws"}, "args.region"),
        ({"cloud": "gcp", "region": "us-central1"}, "args.project"),
        ({**AWS, "gpu": "H100:8", "max_hourly_usd": -1}, "args.max_hourly_usd"),
        (
            {"cloud": "aws", "region": "us-east-1", "instance_type": "p5.48xlarge", "node_group": "asg"},
            "args.node_group",
        ),
        ({"cloud": "aws", "region": "us-east-1", "gpu": "H100:8", "storage": {"rootGB": 10}}, "args.storage.rootGB"),
        (
            {"cloud": "aws", "region": "us-east-1", "gpu": "H100:8", "identity": {"policies": ["x"]}},
            "args.identity.policies[0]",
        ),
    ],
)
def test_each_bad_field_is_named(kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(GpuClusterArgsError) as info:
        GpuClusterArgs(**kwargs).to_spec("test", python_names=True)
    assert f"{field}: " in str(info.value)


def test_a_layout_rule_names_the_field_too(tmp_path: Path) -> None:
    with pytest.raises(GpuClusterArgsError, match=r"args\.zone: required on gcp"):
        run_typed(
            tmp_path,
            """
            from components import GpuCluster, GpuClusterArgs

            # GB200:4 is a4x-highgpu-4g: no zones in catalog/availability/gcp.yaml; bought from a reservation only
            GpuCluster("c", GpuClusterArgs(cloud="gcp", project="my-project", region="us-central1", gpu="GB200:4",
                                           reservation="a4x-block"))  # fmt: skip
            """,
        )


def test_a_cluster_name_defaults_to_the_resource_name(tmp_path: Path) -> None:
    run = run_typed(
        tmp_path,
        """
        from components import GpuCluster, GpuClusterArgs

        GpuCluster("train", GpuClusterArgs(cloud="aws", region="us-east-1", gpu="T4:1", zone="us-east-1a"))
        """,
    )
    vpc = next(r for r in run.resources if r.type == "aws:ec2/vpc:Vpc")
    assert vpc.name == "train-aws-vpc" and vpc.inputs["tags"]["gpu-cluster:cluster"] == "train"
    assert vpc.inputs["tags"]["gpu-cluster:stack"] == "typed"


def readme_program() -> str:
    text = (ROOT / "README.md").read_text()
    section = text.split("## Use it from your own program", 1)[1]
    return section.split("```python", 1)[1].split("```", 1)[0]


def test_the_readme_program_creates_two_clusters_on_two_clouds(tmp_path: Path) -> None:
    body = readme_program()
    assert len(body.strip().splitlines()) <= 20
    run = run_typed(tmp_path, body, stack="dev")
    clusters = [r for r in run.resources if r.type == "gpu-cluster:index:GpuCluster"]
    assert sorted(r.name for r in clusters) == ["eu-train", "us-train"]
    clouds = {
        r.type.split(":")[1] for r in run.resources if r.type.startswith("gpu-cluster:") and r.type.endswith(":Cluster")
    }
    assert clouds == {"aws", "gcp"}
    for prefix in ("us", "eu"):
        assert run.outputs[f"{prefix}VpcId"].startswith("<")
        assert isinstance(run.outputs[f"{prefix}SubnetIds"], list)
    assert run.outputs["usFabricGbps"] == 3200


def test_camel_names_of_outputs() -> None:
    assert _camel("fabric_gbps_per_node") == "fabricGbpsPerNode"
    assert {_camel(a) for a in OUTPUT_KEYS} >= {"vpcId", "subnetIds", "securityGroupId", "nodeGroup", "instanceIds"}
