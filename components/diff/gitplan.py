"""Plans at a git revision: a temporary `git worktree`, the base revision's own code, the current venv.

The base plan runs `python -m components plan --config ... --format json` inside the worktree (cwd and
PYTHONPATH), so it is what that revision's program registers, not today's code reading an old stack
file. The worktree lives in a temporary directory and is removed afterwards, even on error.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..plan.stackfile import project_info

# A change to any of these can change every stack's plan.
TOUCHES_ALL = ("components/", "__main__.py", "Pulumi.yaml", "pyproject.toml", "uv.lock")
PLAN_TIMEOUT_S = 600


def git(root: Path, *args: str) -> str:
    try:
        proc = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=120)
    except FileNotFoundError:
        raise ConfigError("--base", "git is not installed; give two plan files instead") from None
    if proc.returncode != 0:
        detail = (proc.stderr.strip().splitlines() or ["failed"])[-1]
        raise ConfigError("--base", f"git {' '.join(args[:2])}: {detail}")
    return proc.stdout


def resolve(root: Path, rev: str) -> str:
    """The commit `rev` names, or one clear error."""
    proc = subprocess.run(
        ["git", "-C", str(root), "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    if proc.returncode != 0:
        raise ConfigError("--base", f"got {rev!r}; not a commit in the repository at {root}")
    return proc.stdout.strip()


def toplevel(project: Path) -> tuple[Path, Path]:
    """(repository root, the project's path inside it)."""
    top = Path(git(project, "rev-parse", "--show-toplevel").strip()).resolve()
    return top, project.resolve().relative_to(top)


@contextmanager
def worktree(top: Path, commit: str) -> Iterator[Path]:
    tmp = Path(tempfile.mkdtemp(prefix="gpu-cluster-base-"))
    path = tmp / "base"
    try:
        git(top, "worktree", "add", "--detach", "--quiet", str(path), commit)
        yield path
    finally:
        subprocess.run(["git", "-C", str(top), "worktree", "remove", "--force", str(path)], capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)
        subprocess.run(["git", "-C", str(top), "worktree", "prune"], capture_output=True)


def stack_file(project: Path, stack: str) -> Path:
    return project_info(project)[1] / f"Pulumi.{stack}.yaml"


def stacks_in(project: Path) -> set[str]:
    if not (project / "Pulumi.yaml").exists():
        return set()
    folder = project_info(project)[1]
    return {p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in folder.glob("Pulumi.*.yaml")}


def touched_stacks(project: Path, commit: str, base_project: Path) -> list[str]:
    """Stacks whose plan the change since `commit` can alter (working tree, untracked files included)."""
    top, rel = toplevel(project)
    changed = git(top, "diff", "--name-only", commit, "--", str(rel)).splitlines()
    changed += git(top, "ls-files", "--others", "--exclude-standard", "--", str(rel)).splitlines()
    prefix = "" if str(rel) == "." else f"{rel.as_posix()}/"
    files = [f.removeprefix(prefix) for f in changed]
    everything = stacks_in(project) | stacks_in(base_project)
    if any(f.startswith(TOUCHES_ALL[0]) or f in TOUCHES_ALL[1:] for f in files):
        return sorted(everything)
    stack_dirs = {
        project_info(p)[1].resolve().relative_to(p.resolve()).as_posix()
        for p in (project, base_project)
        if (p / "Pulumi.yaml").exists()
    }
    touched = set()
    for f in files:
        folder, _, name = f.rpartition("/")
        if (folder or ".") in stack_dirs and name.startswith("Pulumi.") and name.endswith(".yaml"):
            touched.add(name.removeprefix("Pulumi.").removesuffix(".yaml"))
    return sorted(touched & everything)


def plan_in_tree(tree: Path, stack: str, python: str = sys.executable) -> dict[str, Any] | None:
    """The plan JSON of `stack` as the code in `tree` builds it; None when the stack is not there."""
    if not (tree / "Pulumi.yaml").exists() or not stack_file(tree, stack).exists():
        return None
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(tree), os.environ.get("PYTHONPATH")]))}
    cmd = [python, "-m", "components", "plan", "--config", str(stack_file(tree, stack)), "--format", "json"]
    proc = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True, timeout=PLAN_TIMEOUT_S)
    # 3 = a mandatory policy is violated: the plan is still printed, and a PR that fixes the
    # violation must still be diffable against its base
    if proc.returncode not in (0, 3):
        detail = (proc.stderr.strip().splitlines() or ["no message"])[-1]
        raise ConfigError(f"--base: stack {stack}", f"the base revision's plan failed: {detail}")
    doc: dict[str, Any] = json.loads(proc.stdout)
    return doc


def plan_here(project: Path, stack: str) -> dict[str, Any] | None:
    """The working tree's plan, in process (the code that is running is the working tree's)."""
    from ..plan import load_stack, make_plan

    if not stack_file(project, stack).exists():
        return None
    doc = make_plan(project, load_stack(project, stack)).as_json()
    parsed: dict[str, Any] = json.loads(json.dumps(doc, default=str))  # exactly what `plan -f json` prints
    return parsed
