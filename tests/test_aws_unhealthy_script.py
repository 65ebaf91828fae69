"""The AWS self-removal hook, run for real against a stubbed IMDSv2 (`curl`) and AWS CLI (`aws`)."""

import shutil
import subprocess
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "components" / "bootstrap" / "aws_unhealthy.sh"
# IMDSv2: a PUT for the token, then GETs that must carry it
CURL = r"""
case "$*" in
  *"-X PUT"*"/latest/api/token"*) [ -n "${NO_TOKEN:-}" ] && exit 22; echo tok123 ;;
  *"X-aws-ec2-metadata-token: tok123"*"/latest/meta-data/instance-id") echo i-0abc123 ;;
  *"X-aws-ec2-metadata-token: tok123"*"/latest/meta-data/placement/region") echo us-east-1 ;;
  *) exit 22 ;;
esac
"""
# the policy may not exist yet on a brand-new cluster: refuse the first FAILS calls
AWS = r"""
n=$(($(cat "$STATE" 2>/dev/null || echo 0) + 1)); echo "$n" > "$STATE"
[ "$n" -gt "${FAILS:-0}" ]
"""


def run(tmp_path: Path, **env: str) -> tuple[subprocess.CompletedProcess, list[str]]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    log = tmp_path / "calls.log"
    for tool in ("cat", "seq", "sleep"):
        found = shutil.which(tool)
        assert found, tool
        if not (bin_dir / tool).exists():
            (bin_dir / tool).symlink_to(found)
    for name, body in (("curl", CURL), ("aws", AWS)):
        path = bin_dir / name
        path.write_text(f'#!/bin/bash\necho "{name} $*" >> "{log}"\n{body}\n')
        path.chmod(0o755)
    full_env = {"PATH": str(bin_dir), "STATE": str(tmp_path / "attempts"), "RETRY_SECONDS": "0", **env}
    bash = shutil.which("bash")
    assert bash
    proc = subprocess.run([bash, str(SCRIPT)], env=full_env, capture_output=True, text=True, timeout=30)
    return proc, log.read_text().splitlines() if log.exists() else []


def test_marks_its_own_instance_unhealthy_in_its_region_without_the_grace_period(tmp_path):
    proc, calls = run(tmp_path)
    assert proc.returncode == 0, proc.stderr
    aws = [c for c in calls if c.startswith("aws ")]
    assert aws == [
        "aws autoscaling set-instance-health --region us-east-1 --instance-id i-0abc123 "
        "--health-status Unhealthy --no-should-respect-grace-period"
    ]
    assert "i-0abc123 marked Unhealthy" in proc.stderr


def test_retries_while_the_permission_is_not_there_yet(tmp_path):
    proc, calls = run(tmp_path, FAILS="2", ATTEMPTS="5")
    assert proc.returncode == 0, proc.stderr
    assert len([c for c in calls if c.startswith("aws ")]) == 3


def test_gives_up_after_the_attempts_and_fails(tmp_path):
    proc, calls = run(tmp_path, FAILS="99", ATTEMPTS="3")
    assert proc.returncode == 1
    assert len([c for c in calls if c.startswith("aws ")]) == 3


def test_without_imdsv2_it_calls_nothing(tmp_path):
    proc, calls = run(tmp_path, NO_TOKEN="1")
    assert proc.returncode == 1 and "no IMDSv2 token" in proc.stderr
    assert not [c for c in calls if c.startswith("aws ")]


def test_shellcheck_clean():
    proc = subprocess.run(["shellcheck", str(SCRIPT)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout
