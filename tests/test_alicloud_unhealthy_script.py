"""The Alibaba ESS unhealthy hook, run for real against a stubbed metadata service and ESS endpoint (curl)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import pytest

from components import bootstrap
from components.layout.alicloud.health import unhealthy_hook

from .hook_helpers import (
    ALICLOUD_HARDENED_METADATA,
    alicloud_signature,
    assert_shellcheck_clean,
    rendered_hook,
    run_hook,
    stub_bin,
)

SCRIPT = Path(__file__).resolve().parent.parent / "components" / "bootstrap" / "alicloud_unhealthy.sh"
TOOLS = ("cat", "sed", "head", "sort", "paste", "date", "openssl")
CREDS = (
    '{\\n  "AccessKeyId" : "STS.testid",\\n  "AccessKeySecret" : "test/secret+1",\\n'
    '  "Expiration" : "2030-01-01T00:00:00Z",\\n  "SecurityToken" : "CAIS+tok/en==",\\n  "Code" : "Success"\\n}'
)
# curl: metadata answers by path; the ESS call is logged and answered with a RequestId
CURL = (
    ALICLOUD_HARDENED_METADATA
    + rf"""
url="${{@: -1}}"
case "$url" in
  */meta-data/instance-id) echo i-bp1node ;;
  */meta-data/ram/security-credentials/) [ -n "${{NO_ROLE:-}}" ] || echo erdma-train-nodes ;;
  */meta-data/ram/security-credentials/erdma-train-nodes) printf '{CREDS}' ;;
  https://ess.aliyuncs.com/*) echo "$url" > "$ESS_LOG"; echo '{{"RequestId": "B755AE57"}}' ;;
  *) exit 22 ;;
esac
"""
)


def run(tmp_path: Path, **env: str) -> tuple[subprocess.CompletedProcess[str], str | None]:
    log = tmp_path / "ess.log"
    full = {"ESS_LOG": str(log), "DRIVER_BOOT_FILE": str(tmp_path / "none"), **env}
    proc = run_hook(SCRIPT, stub_bin(tmp_path, {"curl": CURL}, TOOLS), full, isolated=True)
    return proc, log.read_text().strip() if log.exists() else None


def test_script_is_the_hook_the_layout_ships():
    assert unhealthy_hook() == bootstrap.script("alicloud_unhealthy.sh")


def test_signature_reproduces_alibabas_worked_example():
    params = {
        "AccessKeyId": "testid",
        "Action": "DescribeRegions",
        "Format": "XML",
        "SignatureMethod": "HMAC-SHA1",
        "SignatureNonce": "3ee8c1b8-83d3-44af-a94f-4e0ad82fd6cf",
        "SignatureVersion": "1.0",
        "Timestamp": "2016-02-23T12:46:24Z",
        "Version": "2014-05-26",
    }
    args = [f"{k}={v}" for k, v in params.items()]
    out = subprocess.run(
        ["bash", "-c", f'source "{SCRIPT}"; rpc_signature testsecret "$@"', "sig", *args],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert out.stdout == "OLeaidS1JvxuMvnyHOwuJ+uX5qY=" == alicloud_signature("testsecret", params)


def test_marks_its_own_instance_unhealthy_with_a_valid_signature(tmp_path):
    proc, url = run(tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert url is not None and url.startswith("https://ess.aliyuncs.com/?")
    query = dict(parse_qsl(urlsplit(url).query, keep_blank_values=True))
    assert {k: query[k] for k in ("Action", "HealthStatus", "InstanceId", "Version")} == {
        "Action": "SetInstanceHealth",
        "HealthStatus": "Unhealthy",
        "InstanceId": "i-bp1node",
        "Version": "2014-08-28",
    }
    # the role's STS credentials from the metadata service, the token passed as SecurityToken
    assert (query["AccessKeyId"], query["SecurityToken"]) == ("STS.testid", "CAIS+tok/en==")
    sent = query.pop("Signature")
    assert sent == alicloud_signature("test/secret+1", query)


def test_never_replaces_a_node_whose_driver_is_being_installed(tmp_path):
    (tmp_path / "boot_id").write_text("boot-1\n")
    (tmp_path / "driver-boot").write_text("boot-1\n")
    env = {"BOOT_ID_FILE": str(tmp_path / "boot_id"), "DRIVER_BOOT_FILE": str(tmp_path / "driver-boot")}
    proc, url = run(tmp_path, **env)
    assert proc.returncode == 0 and url is None
    assert "GPU driver is being installed" in proc.stderr
    # a later boot (driver installed, node rebooted): a failure is acted on
    (tmp_path / "boot_id").write_text("boot-2\n")
    proc, url = run(tmp_path, **env)
    assert proc.returncode == 0 and url is not None


def test_without_a_ram_role_it_fails_and_says_why(tmp_path):
    proc, url = run(tmp_path, NO_ROLE="1")
    assert proc.returncode == 1 and url is None
    assert "no RAM role attached" in proc.stderr


def test_shellcheck_clean():
    assert_shellcheck_clean(SCRIPT)


@pytest.mark.parametrize("name", ["alicloud_unhealthy.sh", "alicloud_munge_key.sh"])
def test_a_node_gets_one_self_contained_script(tmp_path, name):
    """The hooks source alicloud_rpc.sh beside them; what a node gets has the library inlined in its place."""
    rendered_hook(tmp_path, name, "alicloud_rpc.sh", "rpc_call")
