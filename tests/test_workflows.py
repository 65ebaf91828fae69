"""The GitHub workflows: CI runs .ci/run; the preview is sticky, fork-safe, and gated; schema-valid."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from components.diff import MARKER

from .conftest import ROOT

WORKFLOWS = ROOT / ".github" / "workflows"


def load(name: str) -> dict:
    doc = yaml.safe_load((WORKFLOWS / name).read_text())
    doc["on"] = doc.pop(True, doc.get("on"))  # YAML 1.1 reads the key `on` as True
    return doc


def test_ci_runs_the_same_script_as_local_ci():
    ci = load("ci.yml")
    assert set(ci["on"]) == {"push", "pull_request"}
    runs = [s.get("run", "") for s in ci["jobs"]["test"]["steps"]]
    assert "bash .ci/run" in runs


def test_preview_posts_one_sticky_comment_without_secrets():
    wf = load("preview.yml")
    assert set(wf["on"]) == {"pull_request"}  # never pull_request_target: fork code never gets a write token
    assert wf["permissions"] == {"contents": "read", "pull-requests": "write"}
    job = wf["jobs"]["offline-diff"]
    text = (WORKFLOWS / "preview.yml").read_text()
    assert "secrets." not in yaml.safe_dump(job)
    checkout = next(s for s in job["steps"] if s.get("uses", "").startswith("actions/checkout"))
    assert checkout["with"]["fetch-depth"] == 0
    comment = next(s for s in job["steps"] if s.get("uses", "").startswith("actions/github-script"))
    assert MARKER in comment["with"]["script"] and "updateComment" in comment["with"]["script"]
    assert comment["if"] == "github.event.pull_request.head.repo.full_name == github.repository"
    assert "gpu-cluster diff --all-stacks --base" in text


def test_real_preview_is_gated_and_uses_oidc():
    job = load("preview.yml")["jobs"]["pulumi-preview"]
    assert "vars.PULUMI_PREVIEW == 'true'" in job["if"]
    assert "github.event.pull_request.head.repo.full_name == github.repository" in job["if"]
    assert job["permissions"]["id-token"] == "write"
    assert job["strategy"]["matrix"]["stack"] == "${{ fromJSON(needs.offline-diff.outputs.stacks) }}"
    pulumi = next(s for s in job["steps"] if s.get("uses", "").startswith("pulumi/actions"))
    assert pulumi["with"]["command"] == "preview" and pulumi["with"]["comment-on-pr"] is True
    assert "matrix.stack" in pulumi["with"]["stack-name"]


def check_jsonschema() -> str | None:
    local = Path(sys.executable).parent / "check-jsonschema"
    return str(local) if local.exists() else shutil.which("check-jsonschema")


@pytest.mark.skipif(check_jsonschema() is None, reason="check-jsonschema is not installed (dev dependency)")
def test_workflows_match_the_vendored_schema(tmp_path):
    files = sorted(str(p) for p in WORKFLOWS.glob("*.yml"))
    cmd = [check_jsonschema() or "", "--builtin-schema", "vendor.github-workflows", *files]
    assert subprocess.run(cmd, capture_output=True, text=True, timeout=120).returncode == 0
    bad = tmp_path / "bad.yml"
    bad.write_text(
        "on: push\njobs:\n  x:\n    runs-on: ubuntu-latest\n    steps:\n      - uses: a/b@v1\n        wiht: {}\n"
    )
    result = subprocess.run([*cmd[:3], str(bad)], capture_output=True, text=True, timeout=120)
    assert result.returncode != 0 and "wiht" in result.stdout
