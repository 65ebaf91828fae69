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
    cmd = [python, "-m", "components", "plan", "--config", str(stack_file(tree, stack)), "--format", "json"]
    proc = subprocess.run(cmd, cwd=tree, env=_tree_env(tree), capture_output=True, text=True, timeout=PLAN_TIMEOUT_S)
    # 3 = a mandatory policy is violated: the plan is still printed, and a PR that fixes the
    # violation must still be diffable against its base
    if proc.returncode not in (0, 3):
        detail = (proc.stderr.strip().splitlines() or ["no message"])[-1]
        raise ConfigError(f"--base: stack {stack}", f"the base revision's plan failed: {detail}")
    doc: dict[str, Any] = json.loads(proc.stdout)
    return doc


# The base revision's plans in one process of its own code: each SDK and module imported once for all the stacks, not
# once per stack (issue 35: 24 processes cost `diff --all-stacks` minutes). The same calls as `plan --config FILE
# --format json` (cli: find_project(cwd), load_stack(project, None, FILE), make_plan), as JSON text per stack; a stack
# whose plan raises gets null, and is planned again alone by the CLI for its exact message.
_BATCH = """
import json, sys
from pathlib import Path
from components.plan import find_project, load_stack, make_plan
project = find_project(Path.cwd())
with open(sys.argv[1], "w") as out:
    for path in sys.argv[2:]:
        try:
            doc = json.dumps(make_plan(project, load_stack(project, None, Path(path)), {}).as_json(), default=str)
        except Exception:
            doc = "null"
        out.write(doc + "\\n")
"""


class BasePlans:
    """The base revision's plans of `stacks`, started in the background (one process) while the caller plans the
    working tree's: `get(stack)` waits for them, and is what `plan_in_tree` gives for that stack."""

    def __init__(self, tree: Path, stacks: list[str], python: str = sys.executable) -> None:
        self.tree = tree
        self.python = python
        self.present = [s for s in stacks if (tree / "Pulumi.yaml").exists() and stack_file(tree, s).exists()]
        self.done: dict[str, dict[str, Any] | None] | None = None
        self.proc: subprocess.Popen[bytes] | None = None
        handle, name = tempfile.mkstemp(prefix="gpu-cluster-base-", suffix=".jsonl")  # removed by close()
        os.close(handle)
        self.out = Path(name)
        if self.present:
            cmd = [python, "-c", _BATCH, str(self.out), *(str(stack_file(tree, s)) for s in self.present)]
            self.proc = subprocess.Popen(
                cmd, cwd=tree, env=_tree_env(tree), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
            )

    def _collect(self) -> dict[str, dict[str, Any] | None]:
        if self.done is None:
            lines: list[str] = []
            if self.proc is not None:
                try:
                    code = self.proc.wait(timeout=PLAN_TIMEOUT_S * len(self.present))
                    lines = self.out.read_text().splitlines() if code == 0 else []
                except subprocess.TimeoutExpired:
                    self.close()
            if len(lines) != len(self.present):
                lines = ["null"] * len(self.present)  # an older revision without these calls: one process per stack
            self.done = {s: json.loads(line) for s, line in zip(self.present, lines, strict=True)}
        return self.done

    def get(self, stack: str) -> dict[str, Any] | None:
        if stack not in self.present:
            return None
        found = self._collect()[stack]
        return found if found is not None else plan_in_tree(self.tree, stack, self.python)

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.out.unlink(missing_ok=True)


def _tree_env(tree: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(tree), os.environ.get("PYTHONPATH")]))}


def plan_here(project: Path, stack: str) -> dict[str, Any] | None:
    """The working tree's plan, in process (the code that is running is the working tree's)."""
    from ..plan import load_stack, make_plan

    if not stack_file(project, stack).exists():
        return None
    doc = make_plan(project, load_stack(project, stack)).as_json()
    parsed: dict[str, Any] = json.loads(json.dumps(doc, default=str))  # exactly what `plan -f json` prints
    return parsed
