"""The multi-language package: the schema Pulumi infers from `components/provider.py`, the plugin manifest,
and the YAML example program (every property it sets exists in the schema, and the clusters it declares
validate and build under mocks through the provider's own input mapping)."""

from __future__ import annotations

import ast
import inspect
import json
import re
import textwrap
import typing
from pathlib import Path
from typing import Any

import pytest
import yaml
from pulumi.provider.experimental.component import ComponentProvider
from typer.testing import CliRunner

from components import cluster, output_types, provider, provider_types
from components.cli import app
from components.errors import ConfigError

from .conftest import ROOT
from .test_component_api import run_typed

TOKEN = "gpu-cluster:index:GpuCluster"
EXAMPLE = ROOT / "examples" / "yaml" / "Pulumi.yaml"


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    result = CliRunner().invoke(app, ["schema"])
    assert result.exit_code == 0, result.output
    parsed: dict[str, Any] = json.loads(result.stdout)
    return parsed


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def test_the_resource_token_and_every_input_with_type_and_description(schema: dict[str, Any]) -> None:
    assert schema["name"] == "gpu-cluster"
    resource = schema["resources"][TOKEN]
    assert resource["isComponent"] is True
    inputs = resource["inputProperties"]
    expected = {_camel(k) for k in provider.GpuClusterInputs.__annotations__}
    assert set(inputs) == expected
    for name, prop in inputs.items():
        assert prop.get("description"), name
        assert "type" in prop or "$ref" in prop, name
    assert resource["requiredInputs"] == ["cloud"]
    assert inputs["cloud"]["$ref"] == "#/types/gpu-cluster:index:Cloud"
    cloud_enum = schema["types"]["gpu-cluster:index:Cloud"]["enum"]
    assert [e["value"] for e in cloud_enum] == ["aws", "azure", "gcp", "alicloud", "tencentcloud", "huaweicloud"]
    # member names as codegen keeps them: TypeScript `Cloud.Aws`, Go `CloudAws` (README's examples use these)
    assert [e["name"] for e in cloud_enum] == ["Aws", "Azure", "Gcp", "Alicloud", "Tencentcloud", "Huaweicloud"]


@pytest.mark.parametrize(
    ("value", "name"),
    [("aws", "Aws"), ("capacity-block", "CapacityBlock"), ("onDemand", "OnDemand"), ("USD", "USD"), ("PL0", "PL0"),
     ("gpu-utilization", "GpuUtilization"), ("aes256", "Aes256")],
)  # fmt: skip
def test_enum_member_names_read_naturally(value: str, name: str) -> None:
    assert provider._pascal(value) == name


def test_every_enum_member_name_is_its_value_in_pascal_case(schema: dict[str, Any]) -> None:
    enums = {token: t["enum"] for token, t in schema["types"].items() if "enum" in t}
    assert len(enums) > 10
    for token, members in enums.items():
        assert [m["name"] for m in members] == [provider._pascal(m["value"]) for m in members], token


def _takes_output_paths() -> set[str]:
    """The dotted camelCase keys spec/model.py marks `TakesOutput` (the package schema's non-plain inputs)."""
    from pydantic import BaseModel

    from components.spec.markers import TakesOutput
    from components.spec.model import ClusterConfig, StackKeys

    def walk(model: type[BaseModel], prefix: str) -> set[str]:
        found: set[str] = set()
        for name, info in model.model_fields.items():
            key = f"{prefix}{_camel(name)}"
            if any(isinstance(m, TakesOutput) for m in info.metadata):
                found.add(key)
            for inner in (info.annotation, *typing.get_args(info.annotation)):
                if isinstance(inner, type) and issubclass(inner, BaseModel):
                    found |= walk(inner, f"{key}.")
                for item in typing.get_args(inner):  # tuple[SlurmUser, ...]
                    if isinstance(item, type) and issubclass(item, BaseModel):
                        found |= walk(item, f"{key}.")
        return found

    return walk(ClusterConfig, "") | walk(StackKeys, "")


def _non_plain_paths(schema: dict[str, Any], props: dict[str, Any], prefix: str = "") -> set[str]:
    found: set[str] = set()
    for name, prop in props.items():
        if not prop.get("plain"):
            found.add(f"{prefix}{name}")
        target = _resolve(schema, prop) or _resolve(schema, prop.get("items") or {})
        if target is not None and "properties" in target:
            found |= _non_plain_paths(schema, target["properties"], f"{prefix}{name}.")
    return found


def test_the_inputs_a_program_takes_from_another_resource_accept_outputs_and_no_other(schema: dict[str, Any]) -> None:
    """Ids of an existing network, keys, an image, a certificate: Inputs (an Output of another resource may be
    passed); everything else is plain, because it decides what is built (spec/model.py `TakesOutput`)."""
    inputs = schema["resources"][TOKEN]["inputProperties"]
    marked = _takes_output_paths()
    assert {"network.existing.vpcId", "network.existing.subnetIds", "sshPublicKey", "encryption.key"} <= marked
    assert _non_plain_paths(schema, inputs) == marked
    existing = schema["types"]["gpu-cluster:index:ExistingNetwork"]["properties"]
    assert "plain" not in existing["subnetIds"]["items"]  # TypeScript `[subnet.id]`, not `pulumi.all([...])`


def test_the_kubeconfig_output_is_secret_and_the_objects_are_typed(schema: dict[str, Any]) -> None:
    from components import output_types

    outputs = schema["resources"][TOKEN]["properties"]
    assert [name for name, prop in outputs.items() if prop.get("secret")] == ["kubeconfig"]
    for name, typed in [
        ("access", output_types.ClusterAccess),
        ("identity", output_types.ClusterIdentity),
        ("metrics", output_types.ClusterMetrics),
        ("kubernetes", output_types.ClusterKubernetes),
        ("slurm", output_types.ClusterSlurm),
    ]:
        target = _resolve(schema, outputs[name])
        assert target is not None and target["type"] == "object", name
        assert set(target["properties"]) == {_camel(k) for k in typed.__annotations__}, name
    assert not [name for name, prop in outputs.items() if prop.get("additionalProperties")]  # no untyped maps


# the clouds' output shapes: Slurm on AWS and Alibaba, each cloud's Kubernetes, GCP's group, Azure's targets
OUTPUT_STACKS = ["aws-slurm-h100", "alicloud-a100-cmk", "alicloud-ack-erdma", "gcp-gke-a3mega", "gcp-dev", "azure-dev"]


@pytest.mark.parametrize("stack", OUTPUT_STACKS)
def test_every_key_a_cloud_puts_in_an_output_object_is_a_property_of_its_type(stack: str) -> None:
    from components import output_types

    from .conftest import plan_stack

    outputs = plan_stack(stack).run.outputs
    types = {
        "access": output_types.ClusterAccess,
        "identity": output_types.ClusterIdentity,
        "metrics": output_types.ClusterMetrics,
        "kubernetes": output_types.ClusterKubernetes,
        "slurm": output_types.ClusterSlurm,
    }
    checked = []
    for key, typed in types.items():
        if outputs.get(key) is None:
            continue
        checked.append(key)
        assert set(outputs[key]) <= {_camel(k) for k in typed.__annotations__}, key
    assert {"access", "identity", "metrics"} <= set(checked)


def test_every_nested_type_property_is_described(schema: dict[str, Any]) -> None:
    for token, typ in schema["types"].items():
        for name, prop in (typ.get("properties") or {}).items():
            assert prop.get("description"), f"{token}.{name}"


def test_every_output_with_type_and_description(schema: dict[str, Any]) -> None:
    outputs = schema["resources"][TOKEN]["properties"]
    assert set(outputs) == {_camel(a) for a in cluster.OUTPUT_KEYS} | {"placementRequested"}
    for name, prop in outputs.items():
        assert prop.get("description"), name
        assert "type" in prop or "$ref" in prop, name
    assert outputs["subnetIds"]["type"] == "array" and outputs["subnetIds"]["items"]["type"] == "string"
    assert outputs["fabricGbpsPerNode"]["type"] == "number"
    required = set(schema["resources"][TOKEN]["required"])
    assert {"vpcId", "subnetIds", "securityGroupId", "fabricGbpsPerNode", "access", "identity"} <= required
    assert not required & {"nodeGroup", "instanceIds", "resourceGroup", "gpuNetworkIds", "zone"}  # None on some clouds


def test_the_hosted_class_declares_exactly_the_python_components_outputs() -> None:
    assert inspect.get_annotations(provider.GpuCluster) == inspect.get_annotations(cluster.GpuCluster)


@pytest.mark.parametrize("module", [provider, cluster, output_types])
def test_modules_read_by_schema_inference_follow_its_limits(module: Any) -> None:
    source = inspect.getsource(module)
    tree = ast.parse(source)
    futures = [n for n in tree.body if isinstance(n, ast.ImportFrom) and n.module == "__future__"]
    assert not futures, "string annotations are not followed by schema inference"
    if module is not cluster:  # what inference reads: the classes' annotations and the component's __init__
        classes = [n for n in tree.body if isinstance(n, ast.ClassDef)]
        annotations = [ast.unparse(n.annotation) for c in classes for n in c.body if isinstance(n, ast.AnnAssign)]
        annotations += [ast.unparse(a.annotation) for c in classes for n in c.body
                        if isinstance(n, ast.FunctionDef) and n.name == "__init__"
                        for a in n.args.args if a.annotation is not None]  # fmt: skip
        assert annotations and not [a for a in annotations if "Literal" in a or "tuple[" in a]


def test_the_plugin_manifest_points_at_the_entry_point() -> None:
    manifest = yaml.safe_load((ROOT / "PulumiPlugin.yaml").read_text())
    assert manifest["runtime"]["name"] == "python"
    entry = ROOT / manifest["main"]
    assert entry.is_file() and "main(GpuClusterProvider(package_version()), sys.argv[1:])" in entry.read_text()


def _resolve(schema: dict[str, Any], prop: dict[str, Any]) -> dict[str, Any] | None:
    ref = prop.get("$ref", "")
    return schema["types"].get(ref.removeprefix("#/types/")) if ref.startswith("#/types/") else None


def _check_properties(schema: dict[str, Any], where: str, given: Any, props: dict[str, Any]) -> list[str]:
    problems = []
    for key, value in given.items():
        prop = props.get(key)
        if prop is None:
            problems.append(f"{where}.{key}: not in the schema (known: {', '.join(sorted(props))})")
            continue
        target = _resolve(schema, prop)
        if target is not None and "enum" in target:
            allowed = [e["value"] for e in target["enum"]]
            if value not in allowed:
                problems.append(f"{where}.{key}: {value!r} is not one of {allowed}")
        elif target is not None:
            problems += _check_properties(schema, f"{where}.{key}", value, target["properties"])
        elif prop.get("type") == "array" and not isinstance(value, list):
            problems.append(f"{where}.{key}: not a list")
    return problems


def test_every_property_the_yaml_example_sets_exists_in_the_schema(schema: dict[str, Any]) -> None:
    program = yaml.safe_load(EXAMPLE.read_text())
    resource = schema["resources"][TOKEN]
    problems: list[str] = []
    for name, declared in program["resources"].items():
        assert declared["type"] == TOKEN
        problems += _check_properties(schema, name, declared["properties"], resource["inputProperties"])
    for key, expression in program["outputs"].items():
        match = re.fullmatch(r"\$\{(\w+)\.(\w+)\}", expression)
        assert match and match.group(1) in program["resources"], key
        if match.group(2) not in resource["properties"]:
            problems.append(f"outputs.{key}: {match.group(2)} is not an output")
    assert not problems


def test_the_yaml_example_builds_through_the_providers_input_mapping(tmp_path: Path) -> None:
    """The engine hands the provider camelCase inputs; the SDK maps them (enums, nested types) for the class."""
    program = yaml.safe_load(EXAMPLE.read_text())
    host = ComponentProvider([provider.GpuCluster], "gpu-cluster")
    definition = host._component_defs["GpuCluster"]
    mapped = {name: host.map_inputs(r["properties"], definition) for name, r in program["resources"].items()}
    for args in mapped.values():
        assert isinstance(args["cloud"], provider_types.Cloud)
    (tmp_path / "mapped.json").write_text(json.dumps({n: provider._plain(a) for n, a in mapped.items()}))
    run = run_typed(
        tmp_path,
        f"""
        import json
        from components.provider import GpuCluster
        from components.provider_types import Cloud

        for name, args in json.loads(open({str(tmp_path / "mapped.json")!r}).read()).items():
            snake = {{"".join("_" + c.lower() if c.isupper() else c for c in k): v for k, v in args.items()}}
            snake["cloud"] = Cloud(snake["cloud"])
            GpuCluster(name, snake)
        """,
        stack="yaml-example",
    )
    clusters = sorted(r.name for r in run.resources if r.type == TOKEN)
    assert clusters == sorted(program["resources"])
    assert not any(r.type == "aws:ec2/vpc:Vpc" for r in run.resources)  # train joins an existing VPC


def test_the_entry_point_infers_the_schema_and_waits_for_an_engine(tmp_path: Path) -> None:
    """Run as the CLI runs it (another working directory): the provider is built, then it asks for the engine."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, str(ROOT / "plugin" / "__main__.py")], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2 and "the following arguments are required: engine" in done.stderr
    assert "Traceback" not in done.stderr


def test_the_elastic_and_encryption_keys_reach_the_args_as_the_stack_file_writes_them() -> None:
    """spot is bool-or-object in a stack file; the schema has no unions: spot plus flat spotOnDemandBase/Fallback."""
    from components.plan import load_stack

    stack_file = load_stack(ROOT, "aws-inference-fleet")
    written = stack_file.values["gpu-cluster:cluster"]
    inputs: provider.GpuClusterInputs = {
        "cloud": provider_types.Cloud.AWS,
        "region": "us-east-1",
        "name": "inference",
        "instance_type": "g6e.xlarge",
        "nodes": 1,
        "min_nodes": 0,
        "max_nodes": 20,
        "node_group": provider_types.NodeGroup.MANAGED,
        "zone": "us-east-1a",
        "placement": provider_types.Placement.NONE,
        "spot": True,
        "spot_on_demand_base": 1,
        "spot_fallback": provider_types.SpotFallback.NONE,
        "scaling": {
            "metric": provider_types.ScalingMetric.GPU_UTILIZATION,
            "target": 70,
            "scale_in_cooldown_seconds": 600,
            "time_zone": "America/New_York",
            "schedule": [{"cron": "0 22 * * *", "nodes": 0}, {"cron": "0 7 * * 1-5", "nodes": 1}],
        },
        "serve": {
            "port": 8000,
            "protocol": provider_types.ServeProtocol.HTTP,
            "health_path": "/health",
            "public": False,
        },
        "network": {"cidr": "10.70.0.0/16", "ssh_cidrs": [], "egress": provider_types.Egress.NAT},
        "tags": {"team": "inference", "environment": "prod"},
    }
    values, _ = provider.to_args(inputs).to_config()
    assert values["gpu-cluster:cluster"] == written
    encrypted = provider.to_args(
        {
            "cloud": provider_types.Cloud.ALICLOUD,
            "encryption": {"key": "auto", "algorithm": provider_types.EncryptionAlgorithm.SM4},
            "compliance": provider_types.Compliance.MLPS3,
        }
    )
    assert encrypted.encryption == {"key": "auto", "algorithm": "sm4"} and encrypted.compliance == "mlps3"


def test_spot_keys_without_spot_are_refused_naming_the_key() -> None:
    args = provider.to_args(
        {"cloud": provider_types.Cloud.AWS, "region": "us-east-1", "gpu": "L4:1", "spot_on_demand_base": 1}
    )
    assert args.spot == {"enabled": False, "onDemandBase": 1}
    with pytest.raises(ConfigError, match=r"args\.spot: onDemandBase and fallback apply only with enabled: true"):
        args.to_spec("test", python_names=True)


# --- the shape written once (issue 27): components/provider_types.py is generated from components/spec/model.py ----


def test_the_package_types_are_generated_from_the_spec_model_and_not_stale() -> None:
    from components import provider_gen

    assert provider_gen.main(["--check"]) == 0, "run: python3 -m uv run python -m components.provider_gen"


def _spec_keys(model: Any, prefix: str = "") -> set[str]:
    """Every key a stack file can set, dotted camelCase (`storage.shared.sizeGb`); a block's own key too."""
    from pydantic import BaseModel

    keys: set[str] = set()
    for name, info in model.model_fields.items():
        key = f"{prefix}{info.alias or name}"
        inner = info.annotation
        inner = (
            next((a for a in typing.get_args(inner) if isinstance(a, type)), inner) if typing.get_args(inner) else inner
        )
        if isinstance(inner, type) and issubclass(inner, BaseModel):
            nested = _spec_keys(inner, f"{key}.")
            if nested:  # a block with no keys (aws, tencentcloud) has nothing a program could set
                keys |= {key} | nested
        else:
            keys.add(key)
    return keys


def _schema_keys(schema: dict[str, Any], props: dict[str, Any], prefix: str = "") -> set[str]:
    keys: set[str] = set()
    for name, prop in props.items():
        keys.add(f"{prefix}{name}")
        target = _resolve(schema, prop) or _resolve(schema, prop.get("items") or {})
        if target is not None and "properties" in target:
            keys |= _schema_keys(schema, target["properties"], f"{prefix}{name}.")
    return keys


def test_every_key_of_the_spec_model_is_in_the_package_schema(schema: dict[str, Any]) -> None:
    from components.spec.model import ClusterConfig, StackKeys

    inputs = schema["resources"][TOKEN]["inputProperties"]
    in_schema = _schema_keys(schema, inputs)
    # spot's object is flat in the schema (no unions in schema inference): spot + spotOnDemandBase + spotFallback
    expected = {k for k in _spec_keys(ClusterConfig) | _spec_keys(StackKeys) if not k.startswith("spot.")}
    expected |= {"spot", "spotOnDemandBase", "spotFallback"}
    assert expected - in_schema == set()
    assert {
        "storage.shared.kind",
        "storage.shared.sizeGb",
        "encryption.algorithm",
        "scaling.schedule.cron",
    } <= in_schema


# --- inputs given as Outputs (issue 31): the provider resolves them, then builds what plain values build ----------

_JOINED = """
import pulumi
from components.provider import GpuCluster
from components.provider_types import Cloud

def given(value):
    return {wrap}

cluster = GpuCluster(
    "joined",
    {{
        "cloud": Cloud.AWS,
        "region": "us-east-1",
        "zone": "us-east-1a",
        "gpu": "L4:1",
        "network": {{
            "existing": {{"vpc_id": given("vpc-0123456789abcdef0"), "subnet_ids": [given("subnet-0123456789abcdef0")]}}
        }},
        "ssh_public_key": {key}("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJoined joined@example"),
    }},
)
pulumi.export("vpcId", cluster.vpc_id)
pulumi.export("access", cluster.access)
"""


def _joined(tmp_path: Path, wrap: str, key: str) -> Any:
    run = run_typed(tmp_path, _JOINED.format(wrap=wrap, key=key), stack="joined")
    return run, [(r.type, r.name, json.dumps(r.inputs, sort_keys=True, default=str)) for r in run.resources]


def test_an_output_id_and_a_secret_key_are_resolved_and_build_what_plain_values_build(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    (tmp_path / "plain").mkdir()
    deferred, registered = _joined(tmp_path / "out", "pulumi.Output.from_input(value)", "pulumi.Output.secret")
    plain, registered_plain = _joined(tmp_path / "plain", "value", "str")
    assert registered == registered_plain  # same resources, same inputs: the values were resolved first
    assert plain.outputs["vpcId"] == "vpc-0123456789abcdef0"
    # a secret input makes every output secret (the provider cannot tell which outputs it reaches)
    assert deferred.outputs["vpcId"] == "[secret]"
    assert not any(r.type == "aws:ec2/vpc:Vpc" for r in deferred.resources)  # the given network is joined
    group = next(r for r in deferred.resources if r.type == "aws:ec2/securityGroup:SecurityGroup")
    assert group.inputs["vpcId"] == "vpc-0123456789abcdef0"
    assert set(plain.outputs["access"]) <= {"method", "command", "nodes"}
    component = next(r for r in deferred.resources if r.type == TOKEN)
    assert component.inputs["stackFacts"]["cloud"] == "aws"  # the policies' facts, not secret (no input value)


# --- README's snippets in other languages are cut from the examples tools/multilang/check compiles -------------


def _readme_region(path: Path) -> str:
    """The lines between `readme: begin` and `readme: end`, dedented."""
    lines = path.read_text().splitlines(keepends=True)
    begin = next(i for i, line in enumerate(lines) if line.strip() == "// readme: begin")
    end = next(i for i, line in enumerate(lines) if line.strip() == "// readme: end")
    return textwrap.dedent("".join(lines[begin + 1 : end]))


def _readme_blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", (ROOT / "README.md").read_text(), re.S)


@pytest.mark.parametrize(
    ("language", "example", "imports"),
    [
        ("typescript", "typescript/index.ts", 'import * as pulumi from "@pulumi/pulumi";\n'
                                              'import * as gpu from "@pulumi/gpu-cluster";\n\n'),
        ("go", "go/main.go", ""),
    ],
)  # fmt: skip
def test_readme_snippets_in_other_languages_are_the_compiled_examples(
    language: str, example: str, imports: str
) -> None:
    path = ROOT / "examples" / example
    region = _readme_region(path)
    assert "GpuCluster" in region and "sshPublicKey" in region.replace("SshPublicKey", "sshPublicKey")
    assert _readme_blocks(language) == [imports + region]
    if imports:
        assert all(line in path.read_text() for line in imports.splitlines() if line)


def test_the_examples_pass_outputs_and_read_typed_outputs() -> None:
    ts = (ROOT / "examples" / "typescript" / "index.ts").read_text()
    go = (ROOT / "examples" / "go" / "main.go").read_text()
    assert "pulumi.output(" in ts and 'config.requireSecret("sshPublicKey")' in ts and "cluster.access.command" in ts
    assert "ToStringOutput()" in go and 'conf.RequireSecret("sshPublicKey")' in go and "cluster.Access.Command()" in go
    assert "gpu.Cloud.Aws" in ts and "gpu.CloudAws" in go


def test_ci_runs_the_multilanguage_check() -> None:
    script = ROOT / "tools" / "multilang" / "check"
    assert script.stat().st_mode & 0o111
    assert "tools/multilang/check" in (ROOT / ".ci" / "run").read_text()
    pinned = (ROOT / "tools" / "pulumi" / "go.mod").read_text()
    assert "\ntool github.com/pulumi/pulumi/pkg/v3/cmd/pulumi\n" in pinned
    assert re.search(r"github.com/pulumi/pulumi/pkg/v3 v3\.\d+\.\d+\n", pinned)
