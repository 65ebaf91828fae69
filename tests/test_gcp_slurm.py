"""scheduler slurm on GCP, through the offline plan: head node, MUNGE secret in Secret Manager, the three bootstraps,
the rendered configuration for a3-megagpu-8g, and the munge-key hook against stubbed commands."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from rich.console import Console

from components.bootstrap.mounts import SOURCE_PLACEHOLDER
from components.bootstrap.slurm_conf import HEAD_PLACEHOLDER
from components.layout import gcp as gcp_layout
from components.layout.gcp import slurm as gcp_slurm
from components.plan.render import render_markdown, render_table

from .conftest import one, plan_values, resources_of, spec_of
from .hook_helpers import assert_shellcheck_clean, rendered_hook, run_gcp_secret_hook
from .test_layout_gcp import gcp_values

HOOK = Path(__file__).resolve().parent.parent / "components" / "bootstrap" / "gcp_munge_key.sh"
HEAD_IP = "<private ip of test-gcp-head>"
MOCK_KEY = "<base64 of test-gcp-munge-key-bytes>"  # what the offline plan's random provider answers
SECRET_ID = "gpu-cluster-test-test-munge-key"


def slurm_values(**cluster):
    return gcp_values(scheduler="slurm", **cluster)


@pytest.fixture(scope="module")
def plan():
    return plan_values(slurm_values())


def by_name(plan, suffix: str) -> dict[str, dict]:
    return {r["name"]: r["inputs"] for r in resources_of(plan, suffix)}


def env_of(script: str, name: str) -> dict[str, str]:
    """A part's settings file as the startup script writes it (a heredoc)."""
    match = re.search(rf"cat > /etc/gpu-cluster/{name}\.env <<'(GPU_CLUSTER_EOF_\d+)'\n(.*?)\n\1\n", script, re.S)
    assert match, f"no {name}.env"
    return {k: json.loads(v) for k, v in (line.split("=", 1) for line in match.group(2).splitlines())}


def scripts(plan) -> dict[str, str]:
    out = {}
    for r in resources_of(plan, ""):
        script = (r["inputs"].get("metadata") or {}).get("startup-script")
        if script:
            out[r["name"]] = script
    return out


def test_head_node_is_private_in_the_host_subnet_on_the_node_service_account(plan):
    head = by_name(plan, "compute/instance:Instance")["test-gcp-head"]
    assert head["networkInterfaces"] == [{"subnetwork": "<id of test-gcp-nodes>"}]  # no access config: no public IP
    assert head["machineType"] == "e2-standard-2"  # slurm.headInstanceType defaults to GCP's loginDefaultType
    assert head["serviceAccount"]["email"] == "<email of test-gcp-sa>"
    assert head["metadata"]["enable-oslogin"] == "TRUE" and head["metadata"]["block-project-ssh-keys"] == "TRUE"
    assert head["shieldedInstanceConfig"] == {
        "enableSecureBoot": True,
        "enableVtpm": True,
        "enableIntegrityMonitoring": True,
    }
    assert (
        head["bootDisk"]["initializeParams"]["image"] == "projects/ubuntu-os-cloud/global/images/family/ubuntu-2204-lts"
    )
    assert head["labels"]["gpu-cluster_role"] == "slurm-head"
    text = head["metadata"]["startup-script"]
    assert "gpu-cluster-slurm-head" in text and "SlurmctldParameters=enable_configless" in text
    # the GPU nodes are in the project metadata item the head reads, not in its startup script (issue 28)
    assert "Gres=gpu:h100:8" not in text and "Include nodes.conf" in text
    item = by_name(plan, "compute/projectMetadataItem:ProjectMetadataItem")["test-gcp-slurm-compute-conf"]
    assert item["key"] == "gpu-cluster-test-test-slurm-conf" and item["key"] in text
    assert "Gres=gpu:h100:8" in item["value"] and "MaxNodeCount=4\n" in item["value"]


def test_munge_key_is_a_secret_readable_only_by_the_node_service_account(plan):
    assert one(plan, "randomBytes:RandomBytes")["inputs"] == {"length": 128}
    secret = one(plan, "secretmanager/secret:Secret")["inputs"]
    assert secret["secretId"] == SECRET_ID
    assert secret["replication"] == {"userManaged": {"replicas": [{"location": "us-central1"}]}}
    version = one(plan, "secretmanager/secretVersion:SecretVersion")["inputs"]
    assert version == {"secret": "<id of test-gcp-munge-key>", "secretData": "[secret]", "isSecretDataBase64": True}
    grant = one(plan, "secretmanager/secretIamMember:SecretIamMember")["inputs"]
    assert grant == {
        "secretId": "<id of test-gcp-munge-key>",
        "project": "my-project",
        "role": "roles/secretmanager.secretAccessor",
        "member": "serviceAccount:<email of test-gcp-sa>",
    }
    # scoped to the secret: no project-wide Secret Manager role
    assert not [g for g in by_name(plan, "projects/iAMMember:IAMMember").values() if "secretmanager" in g["role"]]


def test_the_munge_key_never_appears_in_clear(plan):
    everything = json.dumps([r.as_json() for r in plan.resources]) + json.dumps(plan.run.outputs, default=str)
    console = Console(file=io.StringIO(), width=200)
    render_table(plan, console)
    printed = console.file.getvalue() + render_markdown(plan)  # type: ignore[attr-defined]
    assert len(scripts(plan)) == 3  # head, login, instance template
    for text in (everything, printed, *scripts(plan).values()):
        assert MOCK_KEY not in text
    assert everything.count("[secret]") == 1  # only the secret version's payload, masked
    assert plan.run.outputs["slurm"]["mungeKeySecret"] == "<id of test-gcp-munge-key>"


def test_gpu_nodes_register_with_the_head_and_the_login_node_runs_sackd(plan):
    template = scripts(plan)["test-gcp-template"]
    assert HEAD_PLACEHOLDER not in template
    compute = env_of(template, "slurm-compute")
    assert compute["HEAD_ADDRESS"] == HEAD_IP
    assert compute["DYNAMIC_CONF"] == "Feature=gpu Gres=gpu:h100:8 RealMemory=1821081"
    hook = env_of(template, "munge-key")
    assert hook == {
        "MUNGE_SECRET": f"projects/my-project/secrets/{SECRET_ID}",
        "METADATA_TOKEN_URL": "http://metadata.google.internal/computeMetadata/v1/instance/service-accounts/default/token",
        "SECRET_MANAGER_URL": "https://secretmanager.googleapis.com/v1",
    }
    # the GPU nodes keep every part they had: the Slurm parts come after the health check
    assert template.index("/etc/gpu-cluster/health.env") < template.index("/etc/gpu-cluster/slurm-compute.env")
    assert "gpu-cluster-gcp-fabric" in template
    login = scripts(plan)["test-gcp-login"]
    env = env_of(login, "slurm-login")
    assert env["HEAD_ADDRESS"] == HEAD_IP and HEAD_PLACEHOLDER not in login
    assert env["SLURM_PACKAGES"] == "slurm-smd slurm-smd-client slurm-smd-sackd"
    assert env_of(login, "munge-key") == hook


def test_rendered_configuration_for_a3_megagpu_8g():
    slurm = gcp_layout.plan(spec_of(slurm_values())).slurm
    assert slurm is not None
    conf = slurm.layout.slurm_conf + slurm.layout.nodes_conf
    assert slurm.layout.slurm_conf.endswith("Include nodes.conf\n")
    for line in (
        "ClusterName=test",
        "SlurmctldParameters=enable_configless",
        "SelectType=select/cons_tres",
        "GresTypes=gpu",
        "MaxNodeCount=4",
        "HealthCheckProgram=/usr/local/sbin/gpu-cluster-slurm-health",
        "MailProg=/usr/bin/logger",
        "Nodeset=gpu_nodes Feature=gpu",
        # a GPU's share: 1821081 // 8 MiB, 208 // 8 = 26 vCPUs
        "PartitionName=gpu Nodes=gpu_nodes Default=YES MaxTime=INFINITE State=UP DefCpuPerGPU=26 DefMemPerGPU=227635",
        # 208 vCPUs, 8 x H100, 1872 GiB less 5% (1,916,928 MiB - 95,846.4)
        "# GPU nodes: CPUs=208 (catalog) Gres=gpu:h100:8 RealMemory=1821081 Feature=gpu",
    ):
        assert f"{line}\n" in conf, line
    assert slurm.layout.gres_conf == "AutoDetect=nvml\n"
    # one switch (the MIG's workload placement policy) is no topology: every node under it (docs/slurm.md, Topology)
    assert slurm.layout.topology is None and slurm.layout.topology_yaml is None


def test_slurm_ports_stay_inside_the_host_vpc(plan):
    rules = by_name(plan, "compute/firewall:Firewall")
    host = {n: r for n, r in rules.items() if r["network"] == "<id of test-gcp-host>"}
    # the internal rule admits everything from the host subnet only (head, nodes and login are in it)
    assert host["test-gcp-host-internal"]["sourceRanges"] == ["10.42.0.0/16"]
    for name, rule in host.items():
        if name == "test-gcp-host-internal":
            continue
        ports = {p for a in rule["allows"] for p in a.get("ports", [])}
        assert ports <= {"22", "9500"}, name  # SSH (IAP) and the autohealing probe, nothing of Slurm


def test_outputs_say_how_to_log_in_and_check(plan):
    out = plan.run.outputs["slurm"]
    assert out["headNode"] == {"name": "<autoname:test-gcp-head>", "privateIp": HEAD_IP}
    assert out["partition"] == "gpu" and out["slurmVersion"] == "25.11.5" and out["check"] == "sinfo -N -l"
    assert out["login"].startswith("gcloud compute ssh <autoname:test-gcp-login>")
    assert "tunnel-through-iap" in out["login"]


def test_policies_pass(plan):
    assert not [v for v in plan.violations() if v.level == "mandatory"]


def test_shared_storage_is_mounted_on_the_head_and_login_with_its_source_filled_in():
    shared = {"kind": "lustre", "sizeGb": 18000, "throughput": 1000, "path": "/shared"}
    plan = plan_values(slurm_values(storage={"shared": shared}))
    for name in ("test-gcp-head", "test-gcp-login", "test-gcp-template"):
        text = scripts(plan)[name]
        assert SOURCE_PLACEHOLDER not in text and HEAD_PLACEHOLDER not in text
        assert "<ip address of test-gcp-shared>@tcp:/shared" in text, name
    assert env_of(scripts(plan)["test-gcp-head"], "slurm-head")["SHARED_PATH"] == "/shared"


def test_an_existing_service_account_gets_the_secret_grant_itself():
    email = "ml-nodes@my-project.iam.gserviceaccount.com"
    plan = plan_values(slurm_values(identity={"existing": email}))
    grant = one(plan, "secretmanager/secretIamMember:SecretIamMember")["inputs"]
    assert grant["member"] == f"serviceAccount:{email}"


def test_scheduler_none_builds_no_slurm_resource(stack_plan):
    types = {r.type for r in stack_plan("gcp-a3mega").resources}
    assert not {t for t in types if "secretmanager" in t or t.startswith("random:")}
    assert "slurm" not in stack_plan("gcp-a3mega").run.outputs


def test_secret_ids_are_sanitized_and_bounded():
    values = slurm_values(name="c")
    assert gcp_slurm.munge_secret_id(spec_of(values, stack="team.prod")) == "gpu-cluster-team-prod-c-munge-key"
    assert len(gcp_slurm.munge_secret_id(spec_of(values, stack="s" * 300))) == 255


# --- the munge-key hook, against stubbed curl ------------------------------------------------


def _hook(tmp_path: Path, token_answer: str, access_answer: str, access_exit: int = 0, hook: Path = HOOK):
    env = (
        'MUNGE_SECRET="projects/p/secrets/s"\n'
        'METADATA_TOKEN_URL="http://metadata.google.internal/computeMetadata/v1/instance/service-accounts/default/token"\n'
        'SECRET_MANAGER_URL="https://secretmanager.googleapis.com/v1"\n'
    )
    return run_gcp_secret_hook(tmp_path, hook, env, token_answer, access_answer, access_exit)


@pytest.mark.parametrize("rendered", [False, True], ids=["beside-its-library", "as-a-node-gets-it"])
def test_hook_reads_the_latest_version_with_the_metadata_token(tmp_path, rendered):
    token = '{"access_token":"ya29.TOKEN","expires_in":3599,"token_type":"Bearer"}'
    access = (
        '{\n  "name": "projects/1/secrets/s/versions/3",\n'
        '  "payload": {\n    "data": "QUJD+/=",\n    "dataCrc32c": "42"\n  }\n}'
    )
    hook = rendered_hook(tmp_path, HOOK.name, "munge_key_bearer.sh", "secret_field") if rendered else HOOK
    proc, calls, sent = _hook(tmp_path, token, access, hook=hook)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "QUJD+/=\n"  # the key alone on stdout, as the payload holds it (base64)
    assert calls[0].endswith(
        "-H Metadata-Flavor: Google http://metadata.google.internal/computeMetadata/v1/"
        "instance/service-accounts/default/token"
    )
    assert calls[1].endswith(
        "-H @- https://secretmanager.googleapis.com/v1/projects/p/secrets/s/versions/latest:access"
    )
    # the token goes to curl on stdin, never in argv; nothing of it or the key on stderr
    assert sent == "Authorization: Bearer ya29.TOKEN\n"
    assert "ya29.TOKEN" not in "\n".join(calls) and "QUJD" not in proc.stderr and "ya29" not in proc.stderr


def test_hook_fails_clearly_without_a_token_or_without_access(tmp_path):
    proc, calls, _ = _hook(tmp_path, "{}", "")
    assert proc.returncode == 1 and proc.stdout == ""
    assert "without an access_token" in proc.stderr and len(calls) == 1
    other = tmp_path / "second"
    other.mkdir()
    proc, calls, _ = _hook(other, '{"access_token":"T"}', '{"error": {"code": 403}}', access_exit=22)
    assert proc.returncode == 1 and proc.stdout == ""
    assert "reading projects/p/secrets/s failed" in proc.stderr


def test_hook_is_shellcheck_clean():
    assert_shellcheck_clean(HOOK)


def test_the_head_boot_disk_labels_are_create_time_so_a_tag_change_never_replaces_the_controller(plan):
    head = next(r for r in resources_of(plan, "compute/instance:Instance") if r["name"].endswith("-head"))
    # and its size: a larger storage.rootGb must not replace the head and its /home (the day-2 rootGb-up cell)
    assert head["ignoreChanges"] == ["bootDisk.initializeParams.labels", "bootDisk.initializeParams.size"]
    assert head["inputs"]["bootDisk"]["initializeParams"]["labels"]["gpu-cluster_role"] == "slurm-head"


def test_the_gcp_power_hook_and_node_name_hook_are_shellcheck_clean():
    for name in ("gcp_slurm_power.sh", "gcp_slurm_node_name.sh"):
        assert_shellcheck_clean(HOOK.parent / name)
