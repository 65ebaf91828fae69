"""Existing resources keep their identity: `pulumi up` on a stack deployed before a reshaping replaces nothing.

`tests/urns/<stack>.txt` holds the URN of every resource of every shipped stack as deployed before
the cloud packages were split into one module per concern. Every one of them must still be
planned, under the same URN or carried by a new resource in its `aliases` (the engine then moves
the state instead of deleting and creating). New resources may be added.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from components.plan.runner import run_program
from components.plan.stackfile import StackFile

from .conftest import ROOT, plan_stack, shipped_stacks

BASELINE = Path(__file__).parent / "urns"
STACKS = sorted(p.stem for p in BASELINE.glob("*.txt"))


def test_every_shipped_stack_has_a_baseline():
    assert shipped_stacks() == STACKS


@pytest.mark.parametrize("stack", STACKS)
def test_every_deployed_urn_is_still_planned_or_aliased(stack):
    before = set((BASELINE / f"{stack}.txt").read_text().split())
    plan = plan_stack(stack)
    now = {r.urn for r in plan.resources}
    carried = {alias for r in plan.resources for alias in r.aliases}
    lost = sorted(before - now - carried)
    assert not lost, f"{stack}: these deployed resources would be deleted and recreated: {lost}"


def test_aliases_are_recorded_as_the_urns_they_stand_for(tmp_path):
    program = tmp_path / "__main__.py"
    program.write_text(
        "import pulumi\n"
        "class Box(pulumi.ComponentResource):\n"
        "    def __init__(self, name, opts=None):\n"
        "        super().__init__('test:index:Box', name, {}, opts)\n"
        "old = Box('old-parent')\n"
        "Box('renamed', pulumi.ResourceOptions(aliases=[pulumi.Alias(name='before')]))\n"
        "Box('moved', pulumi.ResourceOptions(aliases=[pulumi.Alias(parent=old)]))\n"
    )
    stack = StackFile("proj", "dev", tmp_path / "Pulumi.dev.yaml", {}, ())
    run = run_program(program, stack, "r")
    by_name = {r.name: r for r in run.resources}
    assert by_name["renamed"].aliases == ("urn:pulumi:dev::proj::test:index:Box::before",)
    assert by_name["moved"].aliases == ("urn:pulumi:dev::proj::test:index:Box$test:index:Box::moved",)
    assert by_name["old-parent"].aliases == ()
    assert by_name["renamed"].as_json()["aliases"] == ["urn:pulumi:dev::proj::test:index:Box::before"]


def test_every_cloud_is_registered_and_loads_no_other_sdk():
    import subprocess
    import sys

    from components.catalog import CLOUDS
    from components.catalog.clouds import cloud_entries

    assert tuple(cloud_entries()) == CLOUDS  # every cloud has its registry row (catalog/clouds.yaml)
    code = (
        "import sys; from components.contract import contract; "
        "[contract(c).plan for c in sys.argv[1:]]; "
        "sdks = ('pulumi_', 'pulumiverse_', 'tencentcloud_'); "
        "print(sorted(m.split('.')[0] for m in sys.modules if m.startswith(sdks)))"
    )
    proc = subprocess.run([sys.executable, "-c", code, *CLOUDS], capture_output=True, text=True, cwd=ROOT, check=True)
    assert proc.stdout.strip() == "[]"  # layouts are pure: no provider SDK until a component is built
