"""Issue 35 (fast plans): a plan reads only its own cloud's data, and the bench's floor loads what it names."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bench.floor import floor_command
from components.catalog import rows
from components.diff import gitplan
from components.errors import ConfigError
from components.plan import load_stack
from components.spec import build_spec

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def catalogs_read(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The cloud catalog files parsed from now on (the per-process cache emptied first, and again after)."""
    read: list[str] = []
    real = rows.load_yaml

    def recording(path: Path) -> Any:
        read.append(path.name)
        return real(path)

    rows.load.cache_clear()
    monkeypatch.setattr(rows, "load_yaml", recording)
    yield read
    rows.load.cache_clear()


@pytest.mark.parametrize("stack", ["aws-h100", "gcp-dev", "azure-dev"])
def test_a_stack_spec_reads_only_its_own_clouds_catalog(stack, catalogs_read):
    sf = load_stack(ROOT, stack)
    spec = build_spec(sf.values, sf.stack, sf.project, sf.secret_keys)
    assert [name for name in catalogs_read if name.removesuffix(".yaml") in rows.CLOUDS] == [f"{spec.cloud}.yaml"]


def test_another_clouds_key_is_still_refused_naming_that_cloud(catalogs_read):
    values = {"gpu-cluster:cloud": "aws", "aws:region": "us-east-1", "azure-native:location": "eastus"}
    with pytest.raises(ConfigError) as err:
        build_spec(values, "dev")
    assert str(err.value) == (
        "azure-native:location: is a azure setting but gpu-cluster:cloud is aws; remove it or change the cloud"
    )


def test_floor_loads_the_lazy_sdk_modules_it_names():
    """`import pulumi_aws.iam` alone leaves a lazy module that costs nothing: the floor must load it as the plan did."""
    code = floor_command(["pulumi_aws", "pulumi_aws.iam"])[2]
    probe = code + "import sys\nprint(type(sys.modules['pulumi_aws.iam']).__name__)\n"
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    assert proc.stdout.strip() == "module"


def test_base_plans_in_one_process_are_what_the_cli_plans():
    """`diff --base`: the base revision's stacks planned in one process give each stack's `plan -f json`."""
    base = gitplan.BasePlans(ROOT, ["aws-dev", "no-such-stack"])
    try:
        assert base.get("aws-dev") == gitplan.plan_in_tree(ROOT, "aws-dev")
        assert base.get("no-such-stack") is None
    finally:
        base.close()
    assert not base.out.exists()


def test_base_plans_fall_back_to_one_cli_process_per_stack(monkeypatch):
    """A base revision whose code lacks the calls the batch makes: each stack is planned by its own CLI."""
    monkeypatch.setattr(gitplan, "_BATCH", "raise SystemExit(1)")
    calls: list[str] = []
    real = gitplan.plan_in_tree

    def cli(tree: Path, stack: str, python: str = sys.executable) -> dict[str, Any] | None:
        calls.append(stack)
        return real(tree, stack, python)

    monkeypatch.setattr(gitplan, "plan_in_tree", cli)
    base = gitplan.BasePlans(ROOT, ["aws-dev"])
    try:
        assert base.get("aws-dev")["stack"] == "aws-dev"  # type: ignore[index]
    finally:
        base.close()
    assert calls == ["aws-dev"]


def test_a_vm_stack_plan_never_imports_the_kubernetes_sdk():
    """pulumi_kubernetes is the in-cluster releases' SDK (components/incluster.py): a VM stack has none to install."""
    code = (
        "import contextlib, io, sys\n"
        "from components.cli import main\n"
        "sys.argv = ['gpu-cluster', 'plan', '--stack', 'aws-dev', '--format', 'json']\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
        "    main()\n"
        "print(sorted(m for m in sys.modules if m.startswith('pulumi_kubernetes')))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
