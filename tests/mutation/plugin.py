"""pytest plugin for the shell mutation harness: point the script tests at a mutated copy.

Loaded with `-p tests.mutation.plugin` by `shell_mutants.py` only. `GPU_CLUSTER_MUTANT_ORIGINAL` is the
shipped script, `GPU_CLUSTER_MUTANT_COPY` the mutated copy: every collected test module whose `SCRIPT`
is the shipped script runs the copy instead (the tests call `bash SCRIPT`, so they run what it names).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    original = os.environ.get("GPU_CLUSTER_MUTANT_ORIGINAL")
    copy = os.environ.get("GPU_CLUSTER_MUTANT_COPY")
    if not original or not copy:
        return
    patched = 0
    modules = {item.module for item in items if isinstance(item, pytest.Function)}
    modules |= {m for name, m in sys.modules.items() if name.startswith("tests.")}  # helpers imported by tests
    for module in modules:
        script = getattr(module, "SCRIPT", None)
        if isinstance(script, Path) and script.resolve() == Path(original).resolve():
            module.SCRIPT = Path(copy)
            patched += 1
    if not patched:
        raise pytest.UsageError(f"no collected test module has SCRIPT = {original}")
