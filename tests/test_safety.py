"""Safety: invalid input never gets through, changes keep identity, secrets never leak."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pulumi
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from components.cli import app
from components.errors import ConfigError
from components.plan import make_plan
from components.plan.render import render_json, render_markdown, render_table
from components.plan.runner import PlanMocks, RecordingMonitor, run_program
from components.plan.stackfile import StackFile, read_stack_file
from components.spec import build_spec

from .conftest import ROOT, aws_values, plan_values

CORPUS = sorted((ROOT / "tests" / "invalid").glob("Pulumi.*.yaml"))
runner = CliRunner()


def expectation(path: Path) -> tuple[str, bool]:
    text = path.read_text()
    key = re.search(r"^# expect: (.*)$", text, re.M)
    assert key, f"{path.name} has no '# expect:' header"
    return key.group(1), "# level: file" in text


def test_the_corpus_is_large_and_covers_every_cloud():
    assert len(CORPUS) >= 150
    for cloud in ("aws", "azure", "gcp", "alicloud"):
        assert sum(p.name.startswith(f"Pulumi.{cloud}-") for p in CORPUS) >= 15, cloud


@pytest.mark.parametrize("path", CORPUS, ids=[p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in CORPUS])
def test_invalid_config_gets_one_keyed_error_and_never_registers_a_resource(path):
    key, file_level = expectation(path)
    result = runner.invoke(app, ["plan", "--config", str(path)])
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    # one line per problem, the expected one among them (every cross-field problem is reported at once)
    assert lines and all(line.startswith("error: ") for line in lines), result.stderr
    assert any(key in line for line in lines), f"message does not name {key}: {lines}"
    assert "Traceback" not in result.output + result.stderr
    if file_level:
        return  # the Pulumi CLI itself rejects a broken stack file before any program runs
    # `pulumi up`: the program, run as the engine runs it, raises the same message first.
    stack = read_stack_file(path, "gpu-cluster")
    monitor = RecordingMonitor(PlanMocks("mock-region"))
    with pytest.raises(pulumi.RunError) as info:  # what `pulumi up` prints as one line, no traceback
        run_program(ROOT / "__main__.py", stack, "mock-region", monitor)
    assert [f"error: {line}" for line in str(info.value).splitlines()] == lines
    assert monitor.registered == []


_yaml_scalars = st.none() | st.booleans() | st.integers(-5, 10**6) | st.text(max_size=8)
_values = st.recursive(
    _yaml_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)
_cluster_keys = st.sampled_from(
    ["gpu", "instanceType", "nodes", "maxNodes", "nodeGroup", "zone", "spot", "fabric", "placement", "storage",
     "network", "image", "tags", "name", "reservation", "azure", "gcp", "sshPublicKey", "adminUser", "x"]
)  # fmt: skip
_top_keys = st.sampled_from(["gpu-cluster:cloud", "aws:region", "gcp:project", "gpu-cluster:maxHourlyUsd", "other"])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cluster=st.dictionaries(_cluster_keys, _values, max_size=6), top=st.dictionaries(_top_keys, _values, max_size=2))
def test_fuzzed_stack_files_are_refused_cleanly_or_accepted(tmp_path, cluster, top):
    values = {**aws_values(), **top}
    values["gpu-cluster:cluster"] = {**values["gpu-cluster:cluster"], **cluster}
    path = tmp_path / "Pulumi.fuzz.yaml"
    path.write_text(yaml.safe_dump({"config": values}))
    try:
        stack = read_stack_file(path, "gpu-cluster")
        spec = build_spec(stack.values, stack.stack, stack.project, stack.secret_keys)
    except ConfigError as exc:
        problems = getattr(exc, "errors", [exc])
        assert str(exc).splitlines() == [str(p) for p in problems]  # one line per problem, always
        assert all(p.key and p.message and "\n" not in str(p) for p in problems)
    else:
        assert spec.cloud in ("aws", "azure", "gcp", "alicloud") and spec.nodes <= spec.max_nodes


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=60))
def test_fuzzed_yaml_text_never_crashes_the_loader(text):
    path = Path("/tmp/gpu-cluster-fuzz/Pulumi.text.yaml")
    path.parent.mkdir(exist_ok=True)
    path.write_text(text)
    try:
        stack = read_stack_file(path, "gpu-cluster")
        build_spec(stack.values, stack.stack, stack.project, stack.secret_keys)
    except ConfigError as exc:
        assert str(exc)


def urns(plan):
    return {r.urn: r for r in plan.resources}


@pytest.mark.parametrize(
    "change",
    [{"nodes": 5, "maxNodes": 5}, {"tags": {"environment": "prod", "team": "ml", "owner": "x"}},
     {"network": {"sshCidrs": ["198.51.100.0/24"]}}],
)  # fmt: skip
def test_growing_retagging_or_opening_ssh_keeps_every_urn(change):
    base = plan_values(aws_values(nodes=4, maxNodes=4, tags={"environment": "prod", "team": "ml"}), "stable")
    changed = plan_values(aws_values(**{"nodes": 4, "maxNodes": 4, "tags": {"environment": "prod", "team": "ml"},
                                        **change}), "stable")  # fmt: skip
    before, after = urns(base), urns(changed)
    assert set(before) <= set(after)
    assert {after[u].name for u in before} == {before[u].name for u in before}
    added = set(after) - set(before)
    assert all("sg-ssh" in u for u in added), added


def test_instances_mode_growth_adds_only_the_new_node():
    two = plan_values(aws_values(nodeGroup="instances", nodes=2), "grow")
    three = plan_values(aws_values(nodeGroup="instances", nodes=3), "grow")
    assert set(urns(three)) - set(urns(two)) == {u for u in urns(three) if u.endswith("::grow-aws-node-2")}
    assert set(urns(two)) < set(urns(three))


def test_plans_are_deterministic(stack_plan):
    first = render_json(stack_plan("aws-h100"))
    again = render_json(make_plan(ROOT, stack_plan("aws-h100").stack))
    assert first == again


def test_retained_scratch_disk_is_kept_and_said(stack_plan):
    plan = stack_plan("aws-a100-instances")
    lt = next(r for r in plan.resources if r.type == "aws:ec2/launchTemplate:LaunchTemplate")
    scratch = lt.inputs["blockDeviceMappings"][1]["ebs"]
    assert scratch["deleteOnTermination"] == "false"
    assert "retained on delete" in plan.summary()["scratch"]


SECRET_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAITopSecretMaterialNeverToBeShown me@laptop"


def test_a_secret_config_value_never_reaches_any_output(capsys):
    values = aws_values(sshPublicKey=SECRET_KEY, tags={"environment": "dev"})
    stack = StackFile("gpu-cluster", "secret", ROOT / "Pulumi.secret.yaml", values, ("gpu-cluster:cluster",))
    plan = make_plan(ROOT, stack)
    from rich.console import Console

    console = Console(record=True, width=200)
    render_table(plan, console)
    texts = [
        render_json(plan),
        render_markdown(plan),
        console.export_text(),
        json.dumps(plan.run.outputs),
        "\n".join(plan.warnings()),
        capsys.readouterr().out,
    ]
    assert all("TopSecretMaterial" not in text for text in texts)
    key_pair = next(r for r in plan.resources if r.type == "aws:ec2/keyPair:KeyPair")
    assert key_pair.inputs["publicKey"] == "[secret]"


def test_cli_never_prints_a_secure_value(tmp_path):
    text = (ROOT / "stacks" / "Pulumi.aws-dev.yaml").read_text()
    text = text.replace("    tags:", "    sshPublicKey:\n      secure: v1:c2VjcmV0LXZhbHVl\n    tags:")
    path = tmp_path / "Pulumi.aws-dev.yaml"
    path.write_text(text)
    for fmt in ("table", "markdown", "json"):
        result = runner.invoke(app, ["plan", "--config", str(path), "--format", fmt])
        assert result.exit_code == 0
        assert "c2VjcmV0LXZhbHVl" not in result.output + result.stderr


def test_spec_catalog_layouts_and_policies_import_no_pulumi():
    code = (
        "import sys; import components.spec, components.catalog, components.policy; "
        "import components.layout.aws, components.layout.azure, components.layout.gcp, components.layout.alicloud; "
        "print(sorted(m for m in sys.modules if m.split('.')[0].startswith('pulumi')))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert proc.stdout.strip() == "[]"
