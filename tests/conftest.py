"""Shared fixtures. Plans are cached per session: planning a stack runs the real program once."""

from __future__ import annotations

import copy
import gc
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import settings

from components.plan import Plan, load_stack, make_plan
from components.plan.stackfile import StackFile
from components.spec import ClusterSpec, build_spec

ROOT = Path(__file__).resolve().parent.parent
_PLANS: dict[str, Plan] = {}
# The shipped stacks and their clouds (stacks/shipped.yaml): a list, not a scan of stacks/, where a team keeps its
# own stacks too (README). Every test that iterates the shipped stacks reads this.
SHIPPED_STACKS: dict[str, str] = dict(sorted(yaml.safe_load((ROOT / "stacks" / "shipped.yaml").read_text()).items()))


def plan_stack(name: str) -> Plan:
    """The offline plan of a shipped stack (cached for the session). Under mutmut, which runs only the tests it saw
    reach a mutated function, every call plans anew: a cached plan would credit only the first test that used it."""
    if "MUTANT_UNDER_TEST" in os.environ:
        return make_plan(ROOT, load_stack(ROOT, name))
    if name not in _PLANS:
        _PLANS[name] = make_plan(ROOT, load_stack(ROOT, name))
    return _PLANS[name]


def plan_values(values: dict[str, Any], stack: str = "test") -> Plan:
    """Plan an in-memory stack config (flat `namespace:key` values)."""
    return make_plan(ROOT, StackFile("gpu-cluster", stack, ROOT / f"Pulumi.{stack}.yaml", values, ()))


def aws_values(**cluster: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"gpu": "H100:8", "nodes": 2, "zone": "us-east-1a"}
    base.update(cluster)
    return {"gpu-cluster:cloud": "aws", "aws:region": "us-east-1", "gpu-cluster:cluster": base}


def gcp_values(**cluster: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"gpu": "L4:1", "nodes": 1, "zone": "us-central1-a"}
    base.update(cluster)
    return {
        "gpu-cluster:cloud": "gcp",
        "gcp:project": "my-gpu-project",
        "gcp:region": "us-central1",
        "gpu-cluster:cluster": base,
    }


def shipped_stacks(cloud: str | None = None) -> list[str]:
    """The names of the shipped stacks (stacks/shipped.yaml), of one cloud when `cloud` is given."""
    return [name for name, on in SHIPPED_STACKS.items() if cloud is None or on == cloud]


def plan_stack_with(stack: str, **cluster: Any) -> Plan:
    """A shipped stack planned with `cluster` set over its `gpu-cluster:cluster` keys (not cached)."""
    values = copy.deepcopy(load_stack(ROOT, stack).values)
    values["gpu-cluster:cluster"].update(cluster)
    return plan_values(values, stack)


def resources_text(plan: Plan) -> str:
    """A plan's resources as one canonical text: two plans register the same resources iff their texts are equal."""
    return json.dumps(plan.as_json()["resources"], sort_keys=True, default=str)


def plan_json(plan: Plan) -> dict[str, Any]:
    """A plan as the JSON `gpu-cluster plan --format json` writes, read back (what `diff_plans` compares)."""
    loaded: dict[str, Any] = json.loads(json.dumps(plan.as_json(), default=str))
    return loaded


def spec_of(values: dict[str, Any], stack: str = "test") -> ClusterSpec:
    return build_spec(copy.deepcopy(values), stack)


def resources_of(plan: Plan, type_suffix: str) -> list[dict[str, Any]]:
    return [r.as_json() for r in plan.resources if r.type.endswith(type_suffix)]


def one(plan: Plan, type_suffix: str) -> dict[str, Any]:
    found = resources_of(plan, type_suffix)
    assert len(found) == 1, f"expected one {type_suffix}, found {len(found)}"
    return found[0]


@pytest.fixture(scope="session")
def stack_plan() -> Callable[[str], Plan]:
    return plan_stack


# Hypothesis is deterministic: the same examples on every run and machine, no example database
# (a property that fails once in 30 runs is a bug to fix, not a flaky test to retry). No deadline: a
# loaded machine must not turn a slow example into a failure.
settings.register_profile("deterministic", derandomize=True, database=None, print_blob=True, deadline=None)
settings.load_profile("deterministic")


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish() -> None:
    """On a pytest-xdist worker: collect the session's garbage, then freeze what is left, before the worker reports
    itself finished (xdist sends `workerfinished` after every `pytest_sessionfinish`).

    Why: the controller then stops the worker's gateway, and execnet sends the worker a SIGINT when its run has not
    ended 5 s later (gateway_base.py `_terminate_execution`). pytest's unraisable-exception plugin runs
    `gc.collect()` twice at unconfigure, after `workerfinished`; over a worker's heap of cached plans (about 870,000
    objects for the 23 shipped stacks alone, 2 s per pass on 2 cores) that overran the 5 s, and the SIGINT landed in
    the first Python code to run after the collection: hypothesis' gc callback (junkdrawer.py `gc_callback`, installed
    by every ConjectureData, whatever the settings), printed as a `KeyboardInterrupt` traceback in a passing run. The
    collection here still runs every finalizer under pytest's unraisable hook; the frozen survivors are skipped by
    the later passes, and the process exits right after."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        gc.collect()
        gc.freeze()


@pytest.fixture
def constructed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """`"<type> <name>"` of every pulumi.Resource the program constructs from now on, under the plan's mocks (the
    runtime's Stack root aside): a config refused before anything is registered leaves it empty."""
    import pulumi

    found: list[str] = []
    construct = pulumi.Resource.__init__

    def counting(self: Any, t: str, name: str, *args: Any, **kwargs: Any) -> None:
        if t != "pulumi:pulumi:Stack":  # the runtime's root, made before the program runs
            found.append(f"{t} {name}")
        construct(self, t, name, *args, **kwargs)

    monkeypatch.setattr(pulumi.Resource, "__init__", counting)
    return found


@pytest.fixture
def promtool() -> str:
    """The path of Prometheus' own checker (`promtool check config|rules`, `promtool test rules`)."""
    path = shutil.which("promtool")
    if path is None:
        pytest.skip("promtool is not installed (Debian package prometheus)")
    return path
