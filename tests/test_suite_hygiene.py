"""The test suite's own behaviour (issue 26 defects 9 and 11): a passing run prints no traceback, README states the
suite's measured figures once, and the shipped stacks are a list, so a team's own stack under stacks/ breaks nothing."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from components.spec import build_spec

from .conftest import ROOT, SHIPPED_STACKS

# --- defect 11: xdist worker exit ------------------------------------------------------------------------------


def test_an_xdist_worker_freezes_its_heap_before_pytest_collects_it_at_exit(tmp_path):
    """The worker's end-of-run collections must not overrun execnet's 5 s grace (tests/conftest.py
    `pytest_sessionfinish`): by the time pytest's unconfigure runs `gc.collect()`, the heap is frozen."""
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "conftest.py").write_text(
        "import gc, os, pytest\n"
        "from tests.conftest import pytest_sessionfinish  # noqa: F401  (the hook under test)\n"
        "@pytest.hookimpl(tryfirst=True)\n"
        "def pytest_unconfigure(config):\n"
        "    if os.environ.get('PYTEST_XDIST_WORKER'):\n"
        "        open(os.environ['FREEZE_OUT'], 'w').write(str(gc.get_freeze_count()))\n"
    )
    (tmp_path / "test_heap.py").write_text(
        "HEAP = []\n"
        "def test_keeps_a_heap():\n"
        "    for i in range(200_000):\n"
        "        d = {'i': i}\n"
        "        d['self'] = d\n"
        "        HEAP.append(d)\n"
    )
    out = tmp_path / "frozen.txt"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "FREEZE_OUT": str(out)}
    env.pop("PYTEST_XDIST_WORKER", None)
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "1", "-q", str(tmp_path)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert int(out.read_text()) >= 200_000  # the kept heap is frozen: the unconfigure passes skip it
    assert "KeyboardInterrupt" not in run.stdout + run.stderr


# --- defect 11: README's figures ----------------------------------------------------------------------------------

_FIGURE = re.compile(r"\b\d[\d,]* (tests|passed)\b")


def test_readme_states_the_suites_measured_figures_on_one_line():
    lines = [
        (path.relative_to(ROOT).as_posix(), line)
        for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
        for line in path.read_text().splitlines()
        if _FIGURE.search(line)
    ]
    assert len(lines) == 1 and lines[0][0] == "README.md", lines
    line = lines[0][1]
    # what was measured (count, wall time), how (the command's worker count) and where (the machine)
    assert re.search(r"\d[\d,]* tests", line) and re.search(r"wall", line), line
    assert "-n auto" in line and "2-core" in line and re.search(r"\bmeasured\b", line), line


# --- defect 9: the shipped stacks are a list ----------------------------------------------------------------------


def test_every_shipped_stack_exists_and_is_on_its_cloud():
    assert len(SHIPPED_STACKS) == len(set(SHIPPED_STACKS)) >= 23
    for name, cloud in SHIPPED_STACKS.items():
        path = ROOT / "stacks" / f"Pulumi.{name}.yaml"
        assert path.exists(), f"{name} is listed as shipped but {path} is missing"
        config = yaml.safe_load(path.read_text())["config"]
        assert config["gpu-cluster:cloud"] == cloud, name
        assert name.startswith(f"{cloud}-"), name


def test_the_list_names_every_stack_the_project_ships():
    # a stack file under git in stacks/ is shipped; a team's own untracked file is not
    tracked = subprocess.run(
        ["git", "ls-files", "stacks/Pulumi.*.yaml"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    if tracked.returncode != 0 or not tracked.stdout.strip():
        pytest.skip("not a git checkout: the tracked stack files cannot be listed")
    names = {Path(p).name.removeprefix("Pulumi.").removesuffix(".yaml") for p in tracked.stdout.split()}
    assert names == set(SHIPPED_STACKS)


OWN_STACK = """# issue 12: our own training stack (a comment the shipped stacks may not have)
config:
  aws:region: us-east-1
  gpu-cluster:cloud: aws
  gpu-cluster:cluster:
    name: team
    gpu: L4:1
    nodes: 1
    zone: us-east-1a
    network:
      sshCidrs: [0.0.0.0/0]
"""


def test_a_teams_own_stack_under_stacks_breaks_no_shipped_stack_test(tmp_path):
    """A copy of the project with a stack of a team's own beside the shipped ones (a valid stack that no shipped-stack
    test would pass: no URN baseline, an open SSH rule, an "issue" comment): no collected test is parametrized by it,
    the tests that read stacks/ at run time pass, and the benchmark's flagships stay the shipped ones."""
    project = tmp_path / "project"
    ignore = shutil.ignore_patterns(".venv", ".git", "__pycache__", ".hypothesis", "mutants", "*.pyc", ".mypy_cache")
    shutil.copytree(ROOT, project, ignore=ignore)
    (project / "stacks" / "Pulumi.aws-team-own.yaml").write_text(OWN_STACK)
    build_spec(yaml.safe_load(OWN_STACK)["config"], "aws-team-own")  # a valid stack, only not a shipped one
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_XDIST_WORKER"}

    def pytest_in_copy(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "0", *args]
        return subprocess.run(command, cwd=project, env=env, capture_output=True, text=True, timeout=900)

    collected = pytest_in_copy("--collect-only", "-q", "tests")
    assert collected.returncode == 0, collected.stdout[-3000:] + collected.stderr[-3000:]
    assert "aws-team-own" not in collected.stdout  # no test is parametrized by a scan of stacks/
    run = pytest_in_copy(
        "-q",
        "tests/test_identity_of_resources.py::test_every_shipped_stack_has_a_baseline",
        "tests/test_plan_cli.py::test_shipped_stack_comments_speak_to_users",
        "tests/test_suite_hygiene.py::test_every_shipped_stack_exists_and_is_on_its_cloud",
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]

    from bench.stacks import shipped_stacks as bench_shipped

    found, invalid = bench_shipped(project)
    assert [s.stack for s in found] == list(SHIPPED_STACKS) and not invalid


# Where a scan of a folder of stack files is meant: the invalid-config corpus, and the benchmark's fallback for a
# project without stacks/shipped.yaml.
_SCANS_ALLOWED = {
    "tests/invalid/make_corpus.py",
    "tests/test_safety.py",
    "tests/test_suite_hygiene.py",
    "bench/stacks.py",
}


def test_no_test_or_benchmark_scans_the_stacks_folder():
    found = [
        f"{path.relative_to(ROOT).as_posix()}:{n}: {line.strip()}"
        for folder in ("tests", "bench")
        for path in sorted((ROOT / folder).rglob("*.py"))
        if path.relative_to(ROOT).as_posix() not in _SCANS_ALLOWED
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if "glob(" in line and ('"stacks"' in line or "Pulumi." in line)
    ]
    assert not found, "read the shipped stacks from tests/conftest.py SHIPPED_STACKS instead:\n" + "\n".join(found)
