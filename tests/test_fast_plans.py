"""Issue 35 (fast plans): a plan reads only its own cloud's data, and the bench's floor loads what it names."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bench.floor import floor_command
from components.catalog import rows
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
