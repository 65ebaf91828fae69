"""The head's gpu-cluster-slurm-conf (bootstrap/slurm_conf_sync.sh) and the clouds' hooks that read the GPU nodes'
Slurm configuration from their in-place channel, run for real against stubbed curl, aws, systemctl and scontrol."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import pytest

from components.bootstrap import script
from components.bootstrap.slurm import CONF_HOOK_PATH, conf_part, head_parts
from components.bootstrap.slurm_conf import compute_config_text
from components.layout.slurm import slurm_layout

from .conftest import aws_values, spec_of
from .hook_helpers import (
    ALICLOUD_HARDENED_METADATA,
    BOOTSTRAP,
    assert_shellcheck_clean,
    rendered_hook,
    run_hook,
    stub_bin,
)

SYNC = BOOTSTRAP / "slurm_conf_sync.sh"
HOOKS = ("aws_slurm_conf.sh", "gcp_slurm_conf.sh", "azure_slurm_conf.sh", "alicloud_slurm_conf.sh")
TOOLS = ("cat", "cmp", "cp", "mktemp", "mkdir", "rm", "mv", "install", "basename", "dirname", "tr", "grep")


def layout(nodes: int = 2):
    out = slurm_layout(spec_of(aws_values(scheduler="slurm", nodes=nodes)))
    assert out is not None
    return out


class Head:
    """A scratch head: the channel's text in a file the hook stub prints, systemctl and scontrol stubbed and logged."""

    def __init__(self, tmp: Path, *, active: bool = True, reconfigure_exit: int = 0) -> None:
        self.tmp = tmp
        self.text = tmp / "channel.txt"
        self.calls = tmp / "calls.log"
        self.conf_dir = tmp / "etc-slurm"
        self.applied = tmp / "applied"
        self.bin = stub_bin(
            tmp,
            {
                "hook": f'cat "{self.text}"\n',
                "systemctl": f'echo "systemctl $*" >>"{self.calls}"\n' + ("exit 0\n" if active else "exit 3\n"),
                "scontrol": f'echo "scontrol $*" >>"{self.calls}"\nexit {reconfigure_exit}\n',
            },
            TOOLS,
        )

    def run(self, *args: str):
        env = {
            "ENV_FILE": str(self.tmp / "none.env"),
            "CONF_HOOK": str(self.bin / "hook"),
            "CONF_DIR": str(self.conf_dir),
            "APPLIED": str(self.applied),
        }
        return run_hook(SYNC, self.bin, env, isolated=True) if not args else _run_args(self.bin, env, args)

    def called(self) -> list[str]:
        return self.calls.read_text().splitlines() if self.calls.exists() else []


def _run_args(bin_dir: Path, env: dict[str, str], args: tuple[str, ...]):
    import shutil
    import subprocess

    bash = shutil.which("bash")
    assert bash
    return subprocess.run(
        [bash, str(SYNC), *args], env={"PATH": str(bin_dir), **env}, capture_output=True, text=True, timeout=30
    )


def test_shellcheck_clean():
    for name in ("slurm_conf_sync.sh", *HOOKS):
        if name == "alicloud_slurm_conf.sh":
            continue  # sources alicloud_rpc.sh: checked as rendered below
        assert_shellcheck_clean(BOOTSTRAP / name)


def test_alicloud_hook_as_rendered_is_shellcheck_clean(tmp_path):
    rendered_hook(tmp_path, "alicloud_slurm_conf.sh", "alicloud_rpc.sh", "rpc_call")


def test_install_writes_the_files_before_slurmctld_without_reconfigure(tmp_path):
    head = Head(tmp_path, active=False)
    lay = layout()
    head.text.write_text(lay.compute_config)
    proc = head.run("--install")
    assert proc.returncode == 0, proc.stderr
    assert (head.conf_dir / "nodes.conf").read_text() == lay.nodes_conf
    assert head.applied.read_text() == lay.compute_config
    assert not any(c.startswith("scontrol") for c in head.called())


def test_a_changed_text_is_written_and_reconfigured_once(tmp_path):
    head = Head(tmp_path)
    head.text.write_text(layout(2).compute_config)
    assert head.run("--install").returncode == 0
    # the same text again: nothing to do
    proc = head.run()
    assert proc.returncode == 0 and proc.stderr == "" and head.called() == ["systemctl is-active --quiet slurmctld"]
    # nodes 2 -> 4: MaxNodeCount 4 -> 8 reaches /etc/slurm and slurmctld re-reads it
    grown = layout(4)
    head.text.write_text(grown.compute_config)
    proc = head.run()
    assert proc.returncode == 0, proc.stderr
    assert (head.conf_dir / "nodes.conf").read_text() == grown.nodes_conf
    assert "MaxNodeCount=8\n" in grown.nodes_conf
    assert head.called()[-1] == "scontrol reconfigure"
    assert "reconfigured: MaxNodeCount=8" in proc.stderr
    assert head.applied.read_text() == grown.compute_config
    assert not list(head.conf_dir.glob("*.new"))


def test_a_failed_reconfigure_is_tried_again_at_the_next_run(tmp_path):
    head = Head(tmp_path, reconfigure_exit=1)
    head.text.write_text(layout(2).compute_config)
    assert head.run("--install").returncode == 0
    head.text.write_text(layout(4).compute_config)
    proc = head.run()
    assert proc.returncode == 1 and "scontrol reconfigure failed" in proc.stderr
    assert head.applied.read_text() == layout(2).compute_config  # not recorded: the next run reconfigures again
    assert head.run().returncode == 1 and head.called().count("scontrol reconfigure") == 2


def test_before_slurmctld_runs_the_timer_leaves_the_files_to_the_head_part(tmp_path):
    head = Head(tmp_path, active=False)
    head.text.write_text(layout().compute_config)
    assert head.run().returncode == 0
    assert not head.conf_dir.exists() and not head.applied.exists()


@pytest.mark.parametrize(
    "text, error",
    [
        ("", "no configuration from"),
        ("MaxNodeCount=4\n", "text before the first file header"),
        (compute_config_text({"../slurm.conf": "x\n"}), "refused file name '../slurm.conf'"),
        (compute_config_text({"a b": "x\n"}), "refused file name 'a b'"),
    ],
)
def test_a_bad_text_changes_nothing(tmp_path, text, error):
    head = Head(tmp_path)
    head.text.write_text(text)
    proc = head.run()
    assert proc.returncode == 1 and error in proc.stderr
    assert not (head.conf_dir / "nodes.conf").exists() and not head.applied.exists()
    assert not any(c.startswith("scontrol") for c in head.called())


def test_two_files_with_a_topology_are_both_written(tmp_path):
    lay = slurm_layout(spec_of(aws_values(scheduler="slurm", nodes=2)), switches=("pg-a", "pg-b"))
    assert lay is not None and lay.topology_yaml is not None
    head = Head(tmp_path)
    head.text.write_text(lay.compute_config)
    assert head.run("--install").returncode == 0
    assert (head.conf_dir / "topology.yaml").read_text() == lay.topology_yaml
    assert (head.conf_dir / "nodes.conf").read_text() == lay.nodes_conf


def test_the_head_part_installs_the_sync_its_hook_and_its_timer():
    lay = layout()
    parts = head_parts(lay, key_hook="#!/bin/bash\n", conf_hook="#!/bin/bash\necho hook\n", conf_hook_env={"K": "v"})
    names = [p.name for p in parts]
    assert names.index("slurm-conf") < names.index("slurm-head")  # its files exist when the head part runs
    part = conf_part("#!/bin/bash\necho hook\n", {"K": "v"})
    files = {f.path: f for f in part.files}
    assert files[CONF_HOOK_PATH].content == "#!/bin/bash\necho hook\n" and files[CONF_HOOK_PATH].permissions == "0755"
    assert files["/usr/local/sbin/gpu-cluster-slurm-conf"].content == script("slurm_conf_sync.sh")
    assert 'K="v"' in files["/etc/gpu-cluster/slurm-conf.env"].content
    timer = files["/etc/systemd/system/gpu-cluster-slurm-conf.timer"].content
    assert "OnUnitActiveSec=60\n" in timer
    # the head's own files: the controller-wide ones only
    head_files = {f.path for p in parts for f in p.files if f.path.startswith("/etc/gpu-cluster/slurm/")}
    assert head_files == {f"/etc/gpu-cluster/slurm/{n}" for n in ("slurm.conf", "gres.conf", "cgroup.conf")}


# --- the clouds' hooks ------------------------------------------------------------------------------------
TEXT = compute_config_text({"nodes.conf": "MaxNodeCount=8\nPartitionName=gpu Nodes=gpu_nodes\n"})


@pytest.mark.parametrize("as_shipped", [False, True], ids=["beside-its-library", "as-the-node-gets-it"])
def test_aws_hook_reads_the_parameter_in_the_instance_region(tmp_path, as_shipped):
    # the hook sources aws_cli.sh beside it; a node gets it inlined (bootstrap.script), and both must work alike
    hook = None
    if as_shipped:
        text = script("aws_slurm_conf.sh")
        assert 'aws_cli.sh"' not in text and text.count("aws_region() {") == 1
        hook = tmp_path / "aws_slurm_conf.sh"
        hook.write_text(text)
        assert_shellcheck_clean(hook)
    calls = tmp_path / "calls"
    stubs = {
        "curl": 'case "$*" in *api/token*) echo TOKEN ;; *region*) echo us-east-1 ;; esac\n',
        "aws": f'echo "$*" >"{calls}"\nprintf "%s\\n" "$(cat "{tmp_path}/text")"\n',
    }
    (tmp_path / "text").write_text(TEXT)
    (tmp_path / "slurm-conf.env").write_text('SLURM_CONF_PARAMETER="/gpu-cluster/s/c/slurm-compute-conf"\n')
    proc = run_hook(
        hook or BOOTSTRAP / "aws_slurm_conf.sh",
        stub_bin(tmp_path, stubs),
        {"ENV_FILE": str(tmp_path / "slurm-conf.env")},
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == TEXT
    assert calls.read_text().split() == [
        "ssm", "get-parameter", "--region", "us-east-1", "--name", "/gpu-cluster/s/c/slurm-compute-conf",
        "--query", "Parameter.Value", "--output", "text",
    ]  # fmt: skip


def test_gcp_hook_reads_the_project_metadata_item(tmp_path):
    log = tmp_path / "curl.log"
    (tmp_path / "text").write_text(TEXT)
    curl = f'echo "$*" >"{log}"\ncat "{tmp_path}/text"\n'
    (tmp_path / "slurm-conf.env").write_text(
        'SLURM_CONF_KEY="gpu-cluster-s-c-slurm-conf"\nMETADATA_URL="http://metadata.google.internal/computeMetadata/v1"\n'
    )
    proc = run_hook(
        BOOTSTRAP / "gcp_slurm_conf.sh",
        stub_bin(tmp_path, {"curl": curl}),
        {"ENV_FILE": str(tmp_path / "slurm-conf.env")},
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == TEXT
    args = log.read_text()
    assert "-H Metadata-Flavor: Google" in args
    assert args.strip().endswith(
        "http://metadata.google.internal/computeMetadata/v1/project/attributes/gpu-cluster-s-c-slurm-conf"
    )


def test_azure_hook_decodes_the_vm_user_data_from_imds(tmp_path):
    log = tmp_path / "curl.log"
    encoded = base64.b64encode(TEXT.encode()).decode()
    curl = f'echo "$*" >"{log}"\necho {encoded}\n'
    (tmp_path / "slurm-conf.env").write_text(
        'USER_DATA_URL="http://169.254.169.254/metadata/instance/compute/userData"\nIMDS_API_VERSION="2021-01-01"\n'
    )
    env = {"ENV_FILE": str(tmp_path / "slurm-conf.env")}
    proc = run_hook(BOOTSTRAP / "azure_slurm_conf.sh", stub_bin(tmp_path, {"curl": curl}), env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == TEXT
    args = log.read_text()
    assert "-H Metadata: true" in args
    assert "http://169.254.169.254/metadata/instance/compute/userData?api-version=2021-01-01&format=text" in args
    # a VM without userData is an error, not an empty configuration
    proc = run_hook(BOOTSTRAP / "azure_slurm_conf.sh", stub_bin(tmp_path, {"curl": "echo\n"}), env)
    assert proc.returncode == 1 and proc.stdout == "" and "no userData" in proc.stderr


ALI_CREDS = (
    '{\\n  "AccessKeyId" : "STS.id",\\n  "AccessKeySecret" : "s/ecret+1",\\n  "SecurityToken" : "CAIS+tok==",\\n}'
)
ALI_ANSWER = json.dumps({"Parameter": {"Name": "p", "Value": TEXT, "ParameterVersion": 2}, "RequestId": "R1"})


def test_alicloud_hook_calls_oos_get_parameter_with_the_role_and_prints_the_value(tmp_path):
    log = tmp_path / "oos.log"
    (tmp_path / "answer.json").write_text(ALI_ANSWER)
    curl = (
        ALICLOUD_HARDENED_METADATA
        + rf"""
url="${{@: -1}}"
case "$url" in
  */meta-data/ram/security-credentials/) echo slm-test-nodes ;;
  */meta-data/ram/security-credentials/slm-test-nodes) printf '{ALI_CREDS}' ;;
  https://oos-vpc.cn-beijing.aliyuncs.com/*) echo "$url" >"{log}"; cat "{tmp_path}/answer.json" ;;
  *) exit 22 ;;
esac
"""
    )
    (tmp_path / "slurm-conf.env").write_text(
        'SLURM_CONF_PARAMETER="gpu-cluster-test-slm-slurm-compute-conf"\n'
        'OOS_ENDPOINT="https://oos-vpc.cn-beijing.aliyuncs.com"\n'
    )
    hook = rendered_hook(tmp_path, "alicloud_slurm_conf.sh", "alicloud_rpc.sh", "rpc_call")
    tools = ("cat", "sed", "head", "sort", "paste", "date", "openssl", "python3")
    proc = run_hook(
        hook, stub_bin(tmp_path, {"curl": curl}, tools), {"ENV_FILE": str(tmp_path / "slurm-conf.env")}, isolated=True
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == TEXT
    query = dict(parse_qsl(urlsplit(log.read_text().strip()).query, keep_blank_values=True))
    assert {k: query[k] for k in ("Action", "Version", "Name", "SecurityToken")} == {
        "Action": "GetParameter",
        "Version": "2019-06-01",
        "Name": "gpu-cluster-test-slm-slurm-compute-conf",
        "SecurityToken": "CAIS+tok==",
    }
