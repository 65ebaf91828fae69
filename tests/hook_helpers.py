"""What the node hooks' tests share: stubbed commands, running a hook on them, shellcheck, the rendered hook (its
libraries inlined, as a node gets it) and Alibaba's RPC signature written independently of the shell."""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import shutil
import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path
from urllib.parse import quote

from components import bootstrap

BOOTSTRAP = Path(bootstrap.__file__).resolve().parent


# A curl stub's first lines for Alibaba's metadata service in security-hardening mode (the nodes' http_tokens
# required): PUT /latest/api/token with a TTL header answers a token; a metadata GET without that token is refused as
# the service refuses it (403: curl -f fails, 22). `url` is the stub's last argument.
ALICLOUD_METADATA_TOKEN = "stub-metadata-token"
ALICLOUD_HARDENED_METADATA = rf"""
url="${{@: -1}}"
case "$url" in
  http://100.100.100.200/latest/api/token)
    [[ " $* " == *" -X PUT "* && "$*" == *"X-aliyun-ecs-metadata-token-ttl-seconds: "* ]] || exit 22
    echo {ALICLOUD_METADATA_TOKEN}
    exit 0 ;;
  http://100.100.100.200/*)
    [[ "$*" == *"X-aliyun-ecs-metadata-token: {ALICLOUD_METADATA_TOKEN}"* ]] || exit 22 ;;
esac
"""


def alicloud_kms_curl(role: str, key_id: str, secret: str, token: str, plaintext: str) -> str:
    """A curl stub for the Alibaba hooks that decrypt with KMS on the node's RAM role: the hardened metadata service
    names `role` and its STS credentials (none with NO_ROLE set), and the cn-beijing KMS VPC endpoint logs the request
    to $KMS_LOG and answers `plaintext` (its shell expression), or fails with KMS_DENY set."""
    creds = (
        f'{{\\n  "AccessKeyId" : "{key_id}",\\n  "AccessKeySecret" : "{secret}",\\n  "SecurityToken" : "{token}",\\n}}'
    )
    return (
        ALICLOUD_HARDENED_METADATA
        + rf"""
url="${{@: -1}}"
case "$url" in
  */meta-data/ram/security-credentials/) [ -n "${{NO_ROLE:-}}" ] || echo {role} ;;
  */meta-data/ram/security-credentials/{role}) printf '{creds}' ;;
  https://kms-vpc.cn-beijing.aliyuncs.com/*)
    echo "$url" > "$KMS_LOG"
    [ -z "${{KMS_DENY:-}}" ] || exit 22
    echo '{{"KeyId": "key-1", "Plaintext": "{plaintext}", "RequestId": "R1"}}' ;;
  *) exit 22 ;;
esac
"""
    )


def stub_bin(tmp_path: Path, stubs: Mapping[str, str], tools: Iterable[str] = ()) -> Path:
    """tmp_path/bin with a bash stub per name (its body) and links to the real `tools`."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for tool in tools:
        found = shutil.which(tool)
        assert found, tool
        if not (bin_dir / tool).exists():
            (bin_dir / tool).symlink_to(found)
    for name, body in stubs.items():
        (bin_dir / name).write_text("#!/bin/bash\n" + body)
        (bin_dir / name).chmod(0o755)
    return bin_dir


def run_hook(
    script: Path, bin_dir: Path, env: Mapping[str, str], *, isolated: bool = False
) -> subprocess.CompletedProcess[str]:
    """`bash script` with the stubs first on PATH; `isolated`: on PATH only them (a command not stubbed or linked
    fails instead of running for real)."""
    bash = shutil.which("bash")
    assert bash
    path = str(bin_dir) if isolated else f"{bin_dir}:{os.environ['PATH']}"
    return subprocess.run([bash, str(script)], env={"PATH": path, **env}, capture_output=True, text=True, timeout=30)


def run_aws_secret_hook(
    tmp_path: Path, script: Path, env_line: str, answer: str
) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """An AWS secret hook (aws_munge_key.sh, aws_db_password.sh) with its env file holding `env_line`, IMDSv2 answering
    us-east-1 and the AWS CLI answering `answer`: the run, and the CLI's arguments."""
    calls = tmp_path / "calls"
    imds = 'case "$*" in *api/token*) echo TOKEN ;; *region*) echo us-east-1 ;; esac\n'
    bin_dir = stub_bin(tmp_path, {"curl": imds, "aws": f'echo "$*" >"{calls}"\necho {answer}\n'})
    env_file = tmp_path / "hook.env"
    env_file.write_text(env_line + "\n")
    proc = run_hook(script, bin_dir, {"ENV_FILE": str(env_file)})
    return proc, calls.read_text().split() if calls.exists() else []


def run_gcp_secret_hook(
    tmp_path: Path, script: Path, env_text: str, token_answer: str, access_answer: str, access_exit: int = 0
) -> tuple[subprocess.CompletedProcess[str], list[str], str]:
    """A GCP Secret Manager hook (gcp_munge_key.sh, gcp_db_password.sh) with its env file holding `env_text`, the
    metadata server answering `token_answer` and Secret Manager's `versions/latest:access` answering `access_answer`
    (curl exiting `access_exit`): the run, curl's arguments per call, and what curl read on stdin."""
    log, stdin_log = tmp_path / "calls", tmp_path / "stdin"
    curl = (
        f'echo "$*" >>"{log}"\n'
        'case "$*" in\n'
        f"  *service-accounts/default/token*) printf '%s' '{token_answer}' ;;\n"
        f"  *:access*) cat >\"{stdin_log}\"; printf '%s' '{access_answer}'; exit {access_exit} ;;\n"
        "esac\n"
    )
    env_file = tmp_path / "hook.env"
    env_file.write_text(env_text)
    proc = run_hook(script, stub_bin(tmp_path, {"curl": curl}), {"ENV_FILE": str(env_file)})
    calls = log.read_text().splitlines() if log.exists() else []
    return proc, calls, stdin_log.read_text() if stdin_log.exists() else ""


def assert_shellcheck_clean(path: Path) -> None:
    proc = subprocess.run(["shellcheck", str(path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout


def rendered_hook(tmp_path: Path, name: str, library: str, defines: str) -> Path:
    """The hook as a node gets it (`bootstrap.script`): `library` inlined in place of the line sourcing it (once, with
    its function `defines`), still a whole script, shellcheck-clean; written to tmp_path/name."""
    text = bootstrap.script(name)
    assert f'{library}"' not in text and text.count(f"{defines}() {{") == 1
    assert text.startswith("#!/bin/bash\n") and text.endswith('    main "$@"\nfi\n')
    path = tmp_path / name
    path.write_text(text)
    assert_shellcheck_clean(path)
    return path


def alicloud_signature(secret: str, params: dict[str, str]) -> str:
    """Alibaba's RPC signature v1, written independently of the script."""

    def enc(text: str) -> str:
        return quote(text, safe="-_.~")

    canonical = "&".join(f"{enc(k)}={enc(v)}" for k, v in sorted(params.items()))
    string_to_sign = f"GET&{enc('/')}&{enc(canonical)}"
    return base64.b64encode(hmac.new(f"{secret}&".encode(), string_to_sign.encode(), hashlib.sha1).digest()).decode()


# scontrol for slurm_power.sh: `show hostnames` prints $HOSTS, every other call is logged to $LOG as "scontrol ARGS"
SCONTROL_STUB = 'if [ "$1" = show ]; then printf "%s\\n" ${HOSTS}; exit 0; fi\necho "scontrol $*" >>"$LOG"\n'


def run_power_program(
    tmp_path: Path, action: str, hostlist: str, hook: Path, stubs: Mapping[str, str], env: Mapping[str, str]
) -> subprocess.CompletedProcess[str]:
    """slurm_power.sh as `action` (resume, suspend, resume-fail) on `hostlist` with a cloud's `hook`, on the `stubs`
    (bash bodies, or whole scripts from their `#!`), with scontrol (SCONTROL_STUB unless stubbed), and logger and sleep
    doing nothing."""
    bodies = {"scontrol": SCONTROL_STUB, "logger": "true\n", "sleep": "true\n", **stubs}
    bin_dir = stub_bin(tmp_path, {name: body for name, body in bodies.items() if not body.startswith("#!")})
    for name, script in bodies.items():
        if script.startswith("#!"):
            (bin_dir / name).write_text(script)
            (bin_dir / name).chmod(0o755)
    program = tmp_path / f"gpu-cluster-slurm-{action}"
    program.write_text((BOOTSTRAP / "slurm_power.sh").read_text().replace("export PATH=", f"export PATH={bin_dir}:"))
    program.chmod(0o755)
    full = {
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "POWER_ENV": "/nonexistent",
        "POWER_HOOK": str(hook),
        "HOSTS": " ".join(hostlist.split(",")),
        **env,
    }
    return subprocess.run([str(program), hostlist], env=full, capture_output=True, text=True, timeout=60)
