"""The self-hosted Prometheus and Grafana on Huawei Cloud: the login node's part and its target list from ECS
ListServersDetails (layout/huaweicloud/monitoring.py, bootstrap/huaweicloud_prometheus_targets.sh), the agency's role,
the exporters' rules, and the script on a stubbed curl, its signature checked against huaweicloudsdkcore's signer."""

from __future__ import annotations

import base64
import gzip
import json
import subprocess
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import pytest
import yaml
from huaweicloudsdkcore.auth.credentials import BasicCredentials
from huaweicloudsdkcore.sdk_request import SdkRequest
from huaweicloudsdkcore.signer.signer import Signer

from components import bootstrap
from components.bootstrap import monitoring
from components.diff import diff_plans
from components.errors import ConfigErrors
from components.layout import file_sd
from components.layout import huaweicloud as hw
from components.layout.huaweicloud import monitoring as hw_monitoring
from components.layout.huaweicloud.nodes import user_data_max

from .conftest import ROOT, load_stack, plan_json, plan_stack_with, plan_values, resources_of, spec_of
from .hook_helpers import assert_shellcheck_clean, run_hook, stub_bin
from .test_huaweicloud_resources import huawei_values

SCRIPT = ROOT / "components" / "bootstrap" / "huaweicloud_prometheus_targets.sh"
STACKS = ("huaweicloud-dev", "huaweicloud-p3")


def with_login(**cluster):
    return huawei_values(login={}, **cluster)


def _by_name(plan, suffix):
    found = [r.as_json() for r in plan.resources if r.name.endswith(suffix)]
    assert len(found) == 1, suffix
    return found[0]


def cloud_config(user_data: str) -> str:
    """The login node's cloud-config: plain, or gzip in base64 where the parts outgrow 32 KB (logs, notify)."""
    return user_data if user_data.startswith("#cloud-config") else gzip.decompress(base64.b64decode(user_data)).decode()


def files_of(user_data: str) -> dict[str, str]:
    doc = yaml.safe_load(cloud_config(user_data))
    return {f["path"]: f["content"] for f in doc.get("write_files", [])}


# --- the spec and the layout ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("stack", STACKS)
def test_auto_is_self_hosted_on_the_shipped_stacks_with_a_login_node(stack):
    layout = hw.plan(spec_of(load_stack(ROOT, stack).values, stack))
    assert layout.spec.prometheus == "selfHosted" and layout.monitoring is not None


def test_auto_is_none_without_a_login_node_and_self_hosted_without_one_is_refused():
    layout = hw.plan(spec_of(huawei_values()))
    assert layout.spec.prometheus == "none" and layout.monitoring is None and layout.login_user_data is None
    with pytest.raises(ConfigErrors) as caught:
        spec_of(huawei_values(monitoring={"prometheus": "selfHosted"}))
    lines = [e for e in str(caught.value).splitlines() if "monitoring.prometheus" in e]
    assert len(lines) == 1 and "needs a host: add a login node" in lines[0]


def test_the_discovery_is_the_file_the_timer_writes_and_relabels_as_the_other_clouds():
    d = hw_monitoring.discovery()
    assert d.kind == "file" and d.config == {"files": [hw_monitoring.TARGETS_FILE]}
    assert d.address_label == "__meta_huaweicloud_private_ip"
    assert [r["target_label"] for r in d.relabel] == ["node", "instance_id", "instance_type"]


def test_the_scripts_settings_name_the_regions_endpoint_the_tags_and_the_login_node():
    env = hw_monitoring.targets_env(spec_of(with_login(name="c1"), stack="prod"))
    assert env["ECS_ENDPOINT"] == "ecs.cn-north-4.myhuaweicloud.com"
    assert env["METADATA_URL"] == "http://169.254.169.254"
    assert (env["CLUSTER_TAG"], env["CLUSTER"], env["STACK_TAG"], env["STACK"]) == (
        "gpu-cluster:cluster", "c1", "gpu-cluster:stack", "prod"
    )  # fmt: skip
    assert env["SKIP_NAMES"] == "c1-login"


def _settings() -> monitoring.Monitoring:
    spec = spec_of(with_login())
    thresholds = monitoring.Thresholds(**spec.monitoring.alerts.model_dump())
    return monitoring.Monitoring("c", hw_monitoring.discovery(), 15, thresholds)


def test_the_rendered_config_with_file_sd_passes_promtool_with_the_list_the_script_writes(promtool, tmp_path):
    m = _settings()
    rules = tmp_path / "rules.yml"
    rules.write_text(monitoring.alert_rules(m))
    config = tmp_path / "prometheus.yml"
    text = monitoring.prometheus_config(m).replace(monitoring.RULES_YML, str(rules))
    config.write_text(text.replace(hw_monitoring.TARGETS_FILE, str(tmp_path / "targets.json")))
    (tmp_path / "run").mkdir()
    proc, _, written = run_targets(tmp_path / "run", {"1": page([server(1), server(2)], 2)})
    assert proc.returncode == 0, proc.stderr
    (tmp_path / "targets.json").write_text(written.read_text())
    run = subprocess.run([promtool, "check", "config", str(config)], capture_output=True, text=True)
    assert run.returncode == 0 and "does not exist" not in run.stdout, run.stdout + run.stderr
    (tmp_path / "targets.json").write_text('[{"targets": ["10.0.0.5"], "labels": {"bad-name": "x"}}]')
    assert subprocess.run([promtool, "check", "config", str(config)], capture_output=True).returncode != 0


# --- the stacks registered with the mocks ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def dev():
    return plan_stack_with("huaweicloud-dev")


@pytest.mark.parametrize("stack", STACKS)
def test_the_login_nodes_user_data_is_the_part_and_stays_under_the_limit(stack):
    login = _by_name(plan_stack_with(stack), "-huaweicloud-login")["inputs"]
    # 32 KB as sent (capabilities userData): the plain text, or its gzip (huaweicloud-p3 with logs)
    plain = login["userData"].startswith("#cloud-config")
    assert len(login["userData"].encode() if plain else base64.b64decode(login["userData"])) <= user_data_max()
    files = files_of(login["userData"])
    assert files[file_sd.TARGETS_SCRIPT] == bootstrap.script("huaweicloud_prometheus_targets.sh")
    assert "OnUnitActiveSec=60" in files[f"/etc/systemd/system/{file_sd.TARGETS_UNIT}.timer"]
    assert 'ECS_ENDPOINT="ecs.' in files[file_sd.TARGETS_ENV]
    prom = yaml.safe_load(files[monitoring.PROMETHEUS_YML])
    assert prom["scrape_configs"][0]["file_sd_configs"] == [{"files": [hw_monitoring.TARGETS_FILE]}]
    doc = yaml.safe_load(cloud_config(login["userData"]))
    assert ["systemctl", "enable", "--now", "--no-block", "gpu-cluster-monitoring.service"] in doc["runcmd"]
    assert "grafana-admin-password" not in json.dumps(doc["runcmd"])  # generated on the node, never in user data


def test_the_agency_gets_ecs_read_only_next_to_its_other_roles(dev):
    (agency,) = resources_of(dev, "Iam/agency:Agency")
    assert agency["inputs"]["allResourcesRoles"] == ["ECS ReadOnlyAccess"]
    p3 = plan_stack_with("huaweicloud-p3")
    # readStorage, ICAgent's role (monitoring.logs, shipped on), then the Prometheus target list
    assert resources_of(p3, "Iam/agency:Agency")[0]["inputs"]["allResourcesRoles"] == [
        "OBS ReadOnlyAccess",
        "APM Administrator",
        "ECS ReadOnlyAccess",
    ]
    off = plan_stack_with("huaweicloud-dev", monitoring={"prometheus": "none"})
    assert "allResourcesRoles" not in resources_of(off, "Iam/agency:Agency")[0]["inputs"]


def test_an_existing_agency_is_granted_nothing_and_warned():
    layout = hw.plan(spec_of(with_login(identity={"existing": "my-agency"})))
    assert layout.monitoring is not None and not layout.identity.create
    assert any("grant the agency my-agency ECS ReadOnlyAccess" in w for w in layout.warnings)


def test_the_nodes_group_admits_the_exporters_from_the_login_nodes_group_only(dev):
    rules = {
        r["name"]: r["inputs"] for r in resources_of(dev, "Vpc/secgroupRule:SecgroupRule") if "from-login" in r["name"]
    }
    exporters = {n: r for n, r in rules.items() if "exporter" in n}
    assert {(r["ports"], r["remoteGroupId"], r["securityGroupId"], r["direction"]) for r in exporters.values()} == {
        ("9400", "<id of hw-dev-huaweicloud-login-sg>", "<id of hw-dev-huaweicloud-sg>", "ingress"),
        ("9100", "<id of hw-dev-huaweicloud-login-sg>", "<id of hw-dev-huaweicloud-sg>", "ingress"),
    }
    assert all("remoteIpPrefix" not in r and r["protocol"] == "tcp" for r in exporters.values())


def test_without_a_login_node_nothing_is_added():
    plan = plan_values(huawei_values(), "test")
    assert not [r for r in resources_of(plan, "Vpc/secgroupRule:SecgroupRule") if "exporter" in r["name"]]
    assert plan.as_json()["summary"]["monitoring"] == {"prometheus": "none", "grafana": None}


def test_the_output_says_how_to_reach_grafana(dev):
    m = dev.as_json()["summary"]["monitoring"]
    assert m["prometheus"] == "selfHosted" and m["host"] == "login node"
    assert m["grafana"]["url"] == "http://localhost:3000" and "ssh -N -L 3000:127.0.0.1:3000 root@" in str(
        m["grafana"]["forward"]
    )
    assert "ListServersDetails" in m["targets"]


def test_turning_it_on_for_a_deployed_stack_changes_the_login_node_and_the_agency_only(dev):
    old = plan_json(plan_stack_with("huaweicloud-dev", monitoring={"prometheus": "none"}))
    d = diff_plans(old, plan_json(dev))
    changed = {(c.name, c.verdict, tuple(sorted({x.path.split(".")[0] for x in c.changes}))) for c in d.changed}
    assert changed == {
        ("hw-dev-huaweicloud-agency", "update", ("allResourcesRoles",)),
        # user data: pulumi-huaweicloud 0.0.12 says nothing either way (diff/replacement/huaweicloud.yaml)
        ("hw-dev-huaweicloud-login", "may-replace", ("userData",)),
    }, changed
    assert d.deleted == []
    assert sorted(urn.rsplit("::", 1)[1] for urn in d.created) == [
        "hw-dev-huaweicloud-sg-dcgm-exporter-from-login",
        "hw-dev-huaweicloud-sg-node-exporter-from-login",
    ]
    said = {c.key: c for c in d.spec_changes}
    assert said["cluster.monitoring.prometheus"].policy == "replace"  # the login node: spec/updates.yaml when cloud


# --- the target list script on a stubbed curl ----------------------------------------------------------------------

AK, SK, TOKEN, PROJECT = "TMPAK", "tmp/secret+1", "tok+en==", "0123456789abcdef0123456789abcdef"
CREDS = {"credential": {"access": AK, "secret": SK, "securitytoken": TOKEN, "expires_at": "2033-05-18T03:33:19Z"}}
META = "http://169.254.169.254"
CURL = rf"""
url="${{@: -1}}"
case "$url" in
  {META}/meta-data/latest/api/token) [ -n "${{META_TOKEN:-}}" ] && echo "$META_TOKEN" && exit 0; exit 22 ;;
  {META}/openstack/latest/securitykey) cat "${{5#@}}" >>"$META_LOG"; cat "$CREDS" ;;
  {META}/openstack/latest/meta_data.json) echo '{{"uuid": "u", "project_id": "{PROJECT}"}}' ;;
  https://ecs.cn-north-4.myhuaweicloud.com/*) exec python3 "$ECS_STUB" "$@" ;;
  *) exit 22 ;;
esac
"""
# answers ListServersDetails from $PAGES (offset -> [curl exit status, body]), logging each request's headers and url
ECS_STUB = r"""
import json, os, sys
from urllib.parse import parse_qs, urlsplit
args = sys.argv[1:]
headers = {}
for i, a in enumerate(args):
    if a == "-H":
        for line in open(args[i + 1][1:]).read().splitlines():
            k, _, v = line.partition(": ")
            headers[k] = v
url = args[-1]
assert "-X" not in args and "--data-binary" not in args  # a GET
with open(os.environ["LOG"], "a") as log:
    log.write(json.dumps({"headers": headers, "url": url}) + "\n")
status, answer = json.load(open(os.environ["PAGES"]))[parse_qs(urlsplit(url).query)["offset"][0]]
if status:
    sys.exit(status)  # curl -f on an HTTP error: nothing on stdout
print(json.dumps(answer))
"""


def server(i: int, name: str | None = None, **tags: str) -> dict:
    tag_list = ["gpu-cluster:cluster=c1", *(f"{k}={v}" for k, v in tags.items())]
    return {
        "id": f"srv-{i:04d}",
        "name": name or f"c1-node-{i}",
        "OS-EXT-SRV-ATTR:hostname": name or f"c1-node-{i}",
        "flavor": {"id": "pi2.2xlarge.4", "name": "pi2.2xlarge.4"},
        "status": "ACTIVE",
        "addresses": {
            "vpc-1": [
                {"version": "4", "addr": f"100.64.0.{i}", "OS-EXT-IPS:type": "floating"},
                {"version": "4", "addr": f"10.0.0.{i}", "OS-EXT-IPS:type": "fixed"},
            ]
        },
        "tags": tag_list,
    }


def page(servers: list[dict], total: int) -> list:
    return [0, {"count": total, "servers": servers}]


def run_targets(tmp_path: Path, pages: dict, old: str | None = None, creds: dict | None = None, meta_token: str = ""):
    (tmp_path / "ecs_stub.py").write_text(ECS_STUB)
    (tmp_path / "pages.json").write_text(json.dumps(pages))
    (tmp_path / "creds.json").write_text(json.dumps(creds or CREDS))
    targets = tmp_path / "prom" / "huaweicloud-targets.json"
    if old is not None:
        targets.parent.mkdir()
        targets.write_text(old)
    env = {
        **hw_monitoring.targets_env(spec_of(with_login(name="c1"), "prod")),
        "TARGETS_FILE": str(targets),
        "LOG": str(tmp_path / "calls"),
        "META_LOG": str(tmp_path / "meta"),
        "META_TOKEN": meta_token,
        "ECS_STUB": str(tmp_path / "ecs_stub.py"),
        "PAGES": str(tmp_path / "pages.json"),
        "CREDS": str(tmp_path / "creds.json"),
        "TMPDIR": str(tmp_path),
    }
    proc = run_hook(SCRIPT, stub_bin(tmp_path, {"curl": CURL}), env)
    log = tmp_path / "calls"
    calls = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return proc, calls, targets


def sdk_authorization(headers: dict[str, str], url: str) -> str:
    """The Authorization huaweicloudsdkcore's Signer computes for this GET, with the same X-Sdk-Date."""
    parts = urlsplit(url)
    request = SdkRequest(
        method="GET",
        schema="https",
        host=parts.netloc,
        resource_path=parts.path,
        query_params=parse_qsl(parts.query),
        header_params={k: v for k, v in headers.items() if k != "Authorization"},
        body="",
    )
    signed = Signer(BasicCredentials(AK, SK, PROJECT)).sign(request)
    return str(signed.header_params["Authorization"])


def test_two_pages_become_one_target_group_per_gpu_node_signed_as_the_sdk_signs(tmp_path):
    pages = {
        "1": page([server(1), server(2, "c1-login"), *(server(i) for i in range(3, 101))], 103),
        "2": page([server(101, **{"gpu-cluster:stack": "other"}), server(102), server(103)], 103),
    }
    proc, calls, targets = run_targets(tmp_path, pages)
    assert proc.returncode == 0, proc.stderr
    groups = json.loads(targets.read_text())
    ids = [g["labels"]["__meta_huaweicloud_instance_id"] for g in groups]
    assert len(groups) == 101 and "srv-0002" not in ids and "srv-0101" not in ids  # the login node, another stack
    assert groups[0] == {
        "targets": ["10.0.0.1"],
        "labels": {
            "__meta_huaweicloud_private_ip": "10.0.0.1",
            "__meta_huaweicloud_hostname": "c1-node-1",
            "__meta_huaweicloud_instance_id": "srv-0001",
            "__meta_huaweicloud_instance_type": "pi2.2xlarge.4",
        },
    }
    assert oct(targets.stat().st_mode & 0o777) == "0o644"
    assert len(calls) == 2
    for n, call in enumerate(calls, start=1):
        h, url = call["headers"], call["url"]
        parts = urlsplit(url)
        assert parts.netloc == "ecs.cn-north-4.myhuaweicloud.com"
        assert parts.path == f"/v1/{PROJECT}/cloudservers/detail"
        assert dict(parse_qsl(parts.query)) == {
            "limit": "100", "offset": str(n), "status": "ACTIVE", "tags": "gpu-cluster:cluster=c1"
        }  # fmt: skip
        assert (h["Host"], h["X-Project-Id"], h["X-Security-Token"]) == (parts.netloc, PROJECT, TOKEN)
        auth = h["Authorization"]
        assert auth.startswith(f"SDK-HMAC-SHA256 Access={AK}, SignedHeaders=host;x-project-id;x-sdk-date;")
        assert auth == sdk_authorization(h, url)
    assert not list(tmp_path.glob("prom/huaweicloud-targets.json.*"))  # no temporary file left


def test_the_signature_check_itself_catches_a_changed_query(tmp_path):
    _, calls, _ = run_targets(tmp_path, {"1": page([server(1)], 1)})
    h, url = calls[0]["headers"], calls[0]["url"]
    assert h["Authorization"] != sdk_authorization(h, url.replace("limit=100", "limit=99"))


def test_the_metadata_token_is_sent_where_the_service_gives_one(tmp_path):
    (tmp_path / "a").mkdir()
    proc, _, _ = run_targets(tmp_path / "a", {"1": page([server(1)], 1)}, meta_token="mt-1")
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "a" / "meta").read_text() == "X-Metadata-Token: mt-1\n"
    (tmp_path / "b").mkdir()
    proc, _, _ = run_targets(tmp_path / "b", {"1": page([server(1)], 1)})  # no token service: no header
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "b" / "meta").read_text() == ""


def test_no_servers_is_an_empty_list(tmp_path):
    proc, calls, targets = run_targets(tmp_path, {"1": page([], 0)}, old='[{"targets": ["10.0.0.9"]}]')
    assert proc.returncode == 0, proc.stderr
    assert json.loads(targets.read_text()) == [] and len(calls) == 1


def test_an_http_error_keeps_the_old_list(tmp_path):
    old = '[{"targets": ["10.0.0.9"], "labels": {}}]\n'
    pages = {"1": page([server(i) for i in range(1, 101)], 150), "2": [22, {}]}
    proc, _, targets = run_targets(tmp_path, pages, old=old)
    assert proc.returncode != 0 and "ListServersDetails (page 2) failed" in proc.stderr
    assert targets.read_text() == old
    assert not list(tmp_path.glob("prom/huaweicloud-targets.json.*"))


def test_an_api_error_answer_keeps_the_old_list(tmp_path):
    old = "[]\n"
    refused = [0, {"error": {"code": "Ecs.0319", "message": "no permission"}}]
    proc, _, targets = run_targets(tmp_path, {"1": refused}, old=old)
    assert proc.returncode != 0 and "Ecs.0319: no permission" in proc.stderr
    assert targets.read_text() == old


def test_no_agency_credentials_keep_the_old_list(tmp_path):
    proc, calls, targets = run_targets(tmp_path, {}, old="[]\n", creds={"credential": {}})
    assert proc.returncode != 0 and "no agency credentials" in proc.stderr and calls == []
    assert targets.read_text() == "[]\n"


def test_an_unchanged_list_is_not_rewritten(tmp_path):
    proc, _, targets = run_targets(tmp_path, {"1": page([server(1)], 1)})
    assert proc.returncode == 0, proc.stderr
    before = targets.stat().st_ino
    proc, _, _ = run_targets(tmp_path, {"1": page([server(1)], 1)})
    assert proc.returncode == 0 and targets.stat().st_ino == before


def test_the_script_is_shellcheck_clean():
    assert_shellcheck_clean(SCRIPT)
