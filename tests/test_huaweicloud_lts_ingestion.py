"""`monitoring.logs` on Huawei Cloud, which files LTS collects: the `LtsIngestion` dynamic resource as registered with
the mocks (the cluster's instances, the stream, the files), and its provider's create, diff, update and delete
against a stubbed huaweicloudsdklts client that records the SDK's own request models; credentials from the stack's
config or the HW_* environment; the wait for ICAgent's hosts; the provider pickled as Pulumi does; with an AS group
the LABEL host group of the stack's identifier and an AGENT configuration; with CCE the LABEL host group and K8S_CCE
configuration of the cluster; and the SDK kept out of every plan."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from typing import Any

import dill
import pytest
from huaweicloudsdklts.v2 import model
from pulumi.dynamic import ConfigureRequest
from pulumi.dynamic.config import Config
from pulumi.dynamic.dynamic import serialize_provider

from components.diff import diff_plans
from components.errors import ConfigError
from components.huaweicloud import lts_ingestion
from components.huaweicloud.lts_ingestion import LtsApi, LtsIngestionProvider
from components.layout.huaweicloud.logs import data
from components.plan import load_stack

from .conftest import ROOT, one, plan_json, plan_stack_with, plan_values, resources_of

STACK = "huaweicloud-dev"
LOGS_ON = {"logs": {"enabled": True}}
TYPE = "pulumi-python:dynamic/huaweicloud:LtsIngestion"
NODE, LOGIN = "3f1c2a9e-0000-4000-8000-000000000001", "3f1c2a9e-0000-4000-8000-000000000002"
PROPS: dict[str, Any] = {
    "region": "cn-north-4",
    "hostGroupName": "hw-dev-huaweicloud-dev-hosts",
    "accessConfigName": "hw-dev-huaweicloud-dev-nodes",
    "hostIds": [NODE, LOGIN],
    "logGroupId": "group-1",
    "logStreamId": "stream-1",
    "paths": ["/var/log/cloud-init.log", "/var/log/syslog"],
    "singleLineMode": "system",
    "tags": {"environment": "dev"},
}


@pytest.fixture(scope="module")
def plan():
    return plan_stack_with(STACK, monitoring=LOGS_ON)


# --- registered with the mocks --------------------------------------------------------------------------------


def test_the_ingestion_binds_the_files_on_every_instance_to_the_stream(plan):
    ingestion = one(plan, ":LtsIngestion")
    assert ingestion["type"] == TYPE
    inputs = ingestion["inputs"]
    assert inputs["hostIds"] == ["<id of hw-dev-huaweicloud-node-0>", "<id of hw-dev-huaweicloud-login>"]
    assert inputs["logGroupId"] == "<id of hw-dev-huaweicloud-logs>"
    assert inputs["logStreamId"] == "<id of hw-dev-huaweicloud-logs-stream>"
    assert inputs["paths"] == [str(s["path"]) for s in data()["sources"]]
    assert inputs["region"] == "cn-north-4" and inputs["singleLineMode"] == "system"
    assert inputs["hostGroupName"] == "hw-dev-huaweicloud-dev-hosts"
    assert inputs["accessConfigName"] == "hw-dev-huaweicloud-dev-nodes"
    assert inputs["tags"]["gpu-cluster:cluster"] == "hw-dev"
    # the provider is pickled by reference with plain settings: no credential in the inputs
    provider = dill.loads(base64.b64decode(inputs["__provider"]))
    assert isinstance(provider, LtsIngestionProvider) and provider.settings == {}
    assert (provider.group_type, provider.agent_access_type, provider.access_config_type) == ("linux", "IP", "AGENT")
    assert provider.wait_minutes == data()["ingestion"]["hostWaitMinutes"]
    assert not [k for k in inputs if "key" in k.lower() or "secret" in k.lower()]


def test_the_stack_output_names_the_host_group_and_access_configuration(plan):
    out = plan.as_json()["outputs"]["logs"]
    assert out["hostGroup"] == "hw-dev-huaweicloud-dev-hosts"
    assert out["accessConfig"] == "hw-dev-huaweicloud-dev-nodes"
    assert out["accessConfigId"] == "<id of hw-dev-huaweicloud-logs-ingestion>"


def test_day2_more_nodes_update_the_ingestion_in_place(plan):
    bigger = plan_stack_with(STACK, monitoring=LOGS_ON, nodes=2, fabric="none")
    d = diff_plans(plan_json(plan), plan_json(bigger))
    (change,) = [c for c in d.changed if c.name == "hw-dev-huaweicloud-logs-ingestion"]
    assert change.verdict == "update" and {x.path.split("[")[0] for x in change.changes} == {"hostIds"}


# --- with CCE: LTS's CCE ingestion ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cce_plan():
    return plan_stack_with("huaweicloud-cce", monitoring=LOGS_ON)


def test_with_cce_the_ingestion_is_the_clusters_by_the_identifier_its_icagent_reports(cce_plan):
    ingestion = by_name(cce_plan, "hw-cce-huaweicloud-logs-ingestion")["inputs"]
    assert ingestion["clusterId"] == "<id of hw-cce-huaweicloud-cce>"
    # LTS's CCE ingestion checks for a host group of the custom identifier k8s-log-<cluster id> (catalog kubernetes)
    assert ingestion["labels"] == ["k8s-log-<id of hw-cce-huaweicloud-cce>"]
    assert ingestion["hostIds"] == []  # the pool nodes are CCE's: none is listed by id, none waited for
    assert ingestion["pathType"] == "host_file"
    assert ingestion["paths"] == ["/var/log/messages", "/var/log/cce/kubernetes/kubelet.log"]
    assert ingestion["logStreamId"] == "<id of hw-cce-huaweicloud-logs-stream>"
    provider = dill.loads(base64.b64decode(ingestion["__provider"]))
    assert (provider.group_type, provider.agent_access_type, provider.access_config_type) == (
        "linux",
        "LABEL",
        "K8S_CCE",
    )


def test_with_cce_no_node_gets_icagent_of_ours_and_the_agency_no_role_for_it(cce_plan):
    pools = [r for r in cce_plan.as_json()["resources"] if r["type"].endswith("nodePool:NodePool")]
    assert pools and not any("icagent" in json.dumps(p["inputs"]) for p in pools)
    login = [r for r in cce_plan.as_json()["resources"] if r["name"] == "hw-cce-huaweicloud-login"]
    assert all("icagent" not in (r["inputs"].get("userData") or "") for r in login)
    agency = one(cce_plan, "Iam/agency:Agency")["inputs"]
    assert "APM Administrator" not in agency.get("allResourcesRoles", [])
    out = cce_plan.as_json()["outputs"]["logs"]
    assert out["agencyRole"] is None and out["hostGroupLabel"] == "k8s-log-{cluster_id}"


def test_with_cce_the_plan_says_the_login_node_is_not_collected(cce_plan):
    warnings = [w for w in cce_plan.as_json()["warnings"] if ".monitoring.logs" in w]
    assert any("login node" in w and "not collected" in w for w in warnings)
    assert not any("accessIps" in w or "network.egress" in w for w in warnings)


def test_with_cce_a_region_without_an_icagent_access_address_is_not_refused():
    values = load_stack(ROOT, "huaweicloud-cce").values
    values = {**values, "huaweicloud:region": "cn-east-3", "gpu-cluster:cluster": dict(values["gpu-cluster:cluster"])}
    values["gpu-cluster:cluster"] |= {"monitoring": LOGS_ON, "zone": "cn-east-3a"}
    plan = plan_values(values, "huaweicloud-cce")  # CCE's ICAgent is CCE's: no access address of ours needed
    assert by_name(plan, "hw-cce-huaweicloud-logs-ingestion")["inputs"]["region"] == "cn-east-3"


def test_day2_cce_logs_on_adds_the_lts_resources_and_changes_nothing_deployed(cce_plan):
    d = diff_plans(plan_json(plan_stack_with("huaweicloud-cce", monitoring={})), plan_json(cce_plan))
    added = sorted(urn.split("::")[-2].split("$")[-1].split(":")[-1] for urn in d.created)
    assert added == ["Group", "LtsIngestion", "LtsIngestion", "Stream", "Stream"]  # the files' and the stdout's
    assert not d.deleted and not d.changed  # the cluster, pools and agency as deployed


def test_no_plan_loads_the_lts_sdk():
    code = (
        "import sys; from pathlib import Path; from components.plan import load_stack, make_plan; "
        "from tests.conftest import plan_stack_with; "
        f"plan_stack_with('{STACK}', monitoring={LOGS_ON!r}); "
        "make_plan(Path('.'), load_stack(Path('.'), 'tencentcloud-dev')); "
        "print(sorted(m for m in sys.modules if m.startswith('huaweicloudsdk')))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=180)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "[]"  # only the provider process talks to LTS


# --- the provider against a stubbed SDK client ----------------------------------------------------------------


class StubClient:
    """huaweicloudsdklts.v2.LtsClient's calls: records each request as the SDK serialises it, answers with the
    SDK's response models; `reporting` is which hosts ICAgent has reported so far."""

    def __init__(self, reporting: list[set[str]] | None = None, fail_access: bool = False) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.reporting = reporting or [{NODE, LOGIN}]
        self.fail_access = fail_access

    def _record(self, name: str, request: Any) -> None:
        self.calls.append((name, request.body.to_dict()))

    def list_host(self, request: Any) -> Any:
        self._record("list_host", request)
        seen = self.reporting.pop(0) if len(self.reporting) > 1 else self.reporting[0]
        return model.ListHostResponse(result=[model.GetHostListInfo(host_id=h) for h in sorted(seen)])

    def create_host_group(self, request: Any) -> Any:
        self._record("create_host_group", request)
        return model.CreateHostGroupResponse(host_group_id="hg-1")

    def update_host_group(self, request: Any) -> Any:
        self._record("update_host_group", request)
        return model.UpdateHostGroupResponse()

    def delete_host_group(self, request: Any) -> Any:
        self._record("delete_host_group", request)
        return model.DeleteHostGroupResponse()

    def create_access_config(self, request: Any) -> Any:
        self._record("create_access_config", request)
        if self.fail_access:
            raise RuntimeError("LTS.0201 access config name exists")
        return model.CreateAccessConfigResponse(access_config_id="ac-1")

    def update_access_config(self, request: Any) -> Any:
        self._record("update_access_config", request)
        return model.UpdateAccessConfigResponse()

    def delete_access_config(self, request: Any) -> Any:
        self._record("delete_access_config", request)
        return model.DeleteAccessConfigResponse()


def provider_with(client: StubClient, monkeypatch: pytest.MonkeyPatch) -> LtsIngestionProvider:
    provider = LtsIngestionProvider("linux", "IP", "AGENT", 1)
    monkeypatch.setattr(provider, "api", lambda region: LtsApi(client))
    monkeypatch.setattr(lts_ingestion, "_sleep", lambda seconds: None)
    return provider


def names(client: StubClient) -> list[str]:
    return [name for name, _ in client.calls]


def test_create_groups_the_hosts_then_binds_the_files_to_the_stream(monkeypatch):
    client = StubClient()
    result = provider_with(client, monkeypatch).create(dict(PROPS))
    assert names(client) == ["list_host", "create_host_group", "create_access_config"]
    assert client.calls[0][1]["host_id_list"] == [NODE, LOGIN]
    group = client.calls[1][1]
    assert group["host_group_name"] == "hw-dev-huaweicloud-dev-hosts"
    assert (group["host_group_type"], group["agent_access_type"]) == ("linux", "IP")
    assert group["host_id_list"] == [NODE, LOGIN]
    assert group["host_group_tag"] == [{"key": "environment", "value": "dev"}]
    access = client.calls[2][1]
    assert access["access_config_name"] == "hw-dev-huaweicloud-dev-nodes"
    assert access["access_config_type"] == "AGENT"
    assert access["access_config_detail"]["paths"] == PROPS["paths"]
    assert access["access_config_detail"]["format"]["single"]["mode"] == "system"
    assert access["log_info"] == {"log_group_id": "group-1", "log_stream_id": "stream-1"}
    assert access["host_group_info"] == {"host_group_id_list": ["hg-1"]}
    assert result.id == "ac-1" and result.outs["hostGroupId"] == "hg-1"


def test_create_waits_until_icagent_reported_every_host(monkeypatch):
    client = StubClient(reporting=[set(), {NODE}, {NODE, LOGIN}])
    provider_with(client, monkeypatch).create(dict(PROPS))
    assert names(client) == ["list_host"] * 3 + ["create_host_group", "create_access_config"]


def test_hosts_that_never_report_fail_the_create_naming_them_and_make_nothing(monkeypatch):
    client = StubClient(reporting=[{NODE}])
    with pytest.raises(RuntimeError, match=f"after 1 minutes LTS lists no ICAgent on {LOGIN}"):
        provider_with(client, monkeypatch).create(dict(PROPS))
    assert names(client) == ["list_host"] * (60 // lts_ingestion.POLL_SECONDS + 1)  # a poll every 15 s


def test_a_failed_access_configuration_removes_the_new_host_group(monkeypatch):
    client = StubClient(fail_access=True)
    with pytest.raises(RuntimeError, match=r"LTS\.0201"):
        provider_with(client, monkeypatch).create(dict(PROPS))
    assert names(client)[-1] == "delete_host_group"
    assert client.calls[-1][1] == {"host_group_id_list": ["hg-1"]}


OLDS = {**PROPS, "hostGroupId": "hg-1", "accessConfigId": "ac-1"}


def test_diff_replaces_on_a_new_stream_and_updates_the_rest(monkeypatch):
    provider = LtsIngestionProvider("linux", "IP", "AGENT", 1)
    same = provider.diff("ac-1", OLDS, dict(PROPS))
    assert same.changes is False and not same.replaces
    moved = provider.diff("ac-1", OLDS, {**PROPS, "logStreamId": "stream-2"})
    assert moved.changes is True and moved.replaces == ["logStreamId"] and moved.delete_before_replace
    more = provider.diff("ac-1", OLDS, {**PROPS, "hostIds": [NODE, LOGIN, "x"], "paths": ["/var/log/syslog"]})
    assert more.changes is True and not more.replaces


def test_update_changes_only_what_moved(monkeypatch):
    client = StubClient(reporting=[{NODE, LOGIN, "3f1c2a9e-0000-4000-8000-000000000003"}])
    provider = provider_with(client, monkeypatch)
    news = {**PROPS, "hostIds": [NODE, LOGIN, "3f1c2a9e-0000-4000-8000-000000000003"]}
    result = provider.update("ac-1", OLDS, news)
    assert names(client) == ["list_host", "update_host_group"]
    assert client.calls[1][1]["host_group_id"] == "hg-1" and len(client.calls[1][1]["host_id_list"]) == 3
    assert result.outs is not None and result.outs["hostGroupId"] == "hg-1"
    client.calls.clear()
    provider.update("ac-1", OLDS, {**PROPS, "paths": ["/var/log/syslog"]})
    assert names(client) == ["update_access_config"]
    body = client.calls[0][1]
    assert body["access_config_id"] == "ac-1" and body["access_config_detail"]["paths"] == ["/var/log/syslog"]
    assert body["host_group_info"] == {"host_group_id_list": ["hg-1"]}


def test_delete_removes_the_configuration_then_the_group(monkeypatch):
    client = StubClient()
    provider_with(client, monkeypatch).delete("ac-1", OLDS)
    assert client.calls == [
        ("delete_access_config", {"access_config_id_list": ["ac-1"]}),
        ("delete_host_group", {"host_group_id_list": ["hg-1"]}),
    ]


# --- credentials and pickling ---------------------------------------------------------------------------------


def test_credentials_come_from_the_stack_config_then_the_environment(monkeypatch):
    monkeypatch.setenv("HW_SECRET_KEY", "env-sk")
    monkeypatch.delenv("HW_ACCESS_KEY", raising=False)
    provider = LtsIngestionProvider("linux", "IP", "AGENT", 1)
    raw = {"huaweicloud:accessKey": "cfg-ak", "huaweicloud:region": "cn-north-4"}
    provider.configure(ConfigureRequest(Config(raw, "gpu-cluster")))
    assert provider.settings["accessKey"] == "cfg-ak" and provider.settings["secretKey"] == "env-sk"
    assert provider.settings["securityToken"] is None and "region" not in provider.settings  # the resource's input
    assert set(provider.settings) == set(data()["providerCredentials"]["config"])


def test_without_credentials_the_client_fails_saying_what_to_set():
    with pytest.raises(RuntimeError, match="huaweicloud:accessKey and huaweicloud:secretKey"):
        lts_ingestion.sdk_client("cn-north-4", {})


def test_the_sdk_client_is_built_for_the_region_with_the_keys():
    client = lts_ingestion.sdk_client("cn-north-4", {"accessKey": "ak", "secretKey": "sk", "projectId": "p1"})
    assert type(client).__name__ == "LtsClient"


CCE_PROPS: dict[str, Any] = {
    **PROPS,
    "hostIds": [],
    "paths": ["/var/log/messages"],
    "clusterId": "cce-1",
    "labels": ["k8s-log-cce-1"],
    "pathType": "host_file",
}


def cce_provider_with(client: StubClient, monkeypatch: pytest.MonkeyPatch) -> LtsIngestionProvider:
    provider = LtsIngestionProvider("linux", "LABEL", "K8S_CCE", 1)
    monkeypatch.setattr(provider, "api", lambda region: LtsApi(client))
    monkeypatch.setattr(lts_ingestion, "_sleep", lambda seconds: None)
    return provider


def test_cce_create_makes_a_label_group_and_a_k8s_cce_configuration_without_waiting(monkeypatch):
    client = StubClient()
    result = cce_provider_with(client, monkeypatch).create(dict(CCE_PROPS))
    assert names(client) == ["create_host_group", "create_access_config"]  # no host to wait for
    group = client.calls[0][1]
    assert (group["agent_access_type"], group["labels"]) == ("LABEL", ["k8s-log-cce-1"])
    assert group.get("host_id_list") is None
    access = client.calls[1][1]
    assert (access["access_config_type"], access["cluster_id"]) == ("K8S_CCE", "cce-1")
    assert access["access_config_detail"]["path_type"] == "host_file"
    assert access["access_config_detail"]["paths"] == ["/var/log/messages"]
    assert access["host_group_info"] == {"host_group_id_list": ["hg-1"]}
    assert result.outs["clusterId"] == "cce-1"
    # the SDK's own request models take every member sent (to_dict of the model it was built as)
    assert set(access) <= set(model.CreateAccessConfigRequestBody.openapi_types)
    assert set(group) <= set(model.CreateHostGroupRequestBody.openapi_types)


def test_cce_diff_replaces_on_a_new_cluster_and_update_keeps_the_label_and_cluster(monkeypatch):
    olds = {**CCE_PROPS, "hostGroupId": "hg-1", "accessConfigId": "ac-1"}
    client = StubClient()
    provider = cce_provider_with(client, monkeypatch)
    moved = provider.diff("ac-1", olds, {**CCE_PROPS, "clusterId": "cce-2", "labels": ["k8s-log-cce-2"]})
    assert moved.replaces == ["clusterId"] and moved.delete_before_replace
    provider.update("ac-1", olds, {**CCE_PROPS, "paths": ["/var/log/messages", "/var/log/cce/kubernetes/kubelet.log"]})
    assert names(client) == ["update_access_config"]
    body = client.calls[0][1]
    assert body["cluster_id"] == "cce-1" and body["access_config_detail"]["path_type"] == "host_file"
    assert set(body) <= set(model.UpdateAccessConfigRequestBody.openapi_types)
    client.calls.clear()
    provider.update("ac-1", olds, {**CCE_PROPS, "tags": {"environment": "prod"}})
    assert names(client) == ["update_host_group", "update_access_config"]  # tags on both, no host wait
    assert client.calls[0][1]["labels"] == ["k8s-log-cce-1"]


AS_PROPS: dict[str, Any] = {**PROPS, "hostIds": [], "labels": ["hw-as-huaweicloud-as-hosts"]}


def test_as_create_makes_a_label_group_and_an_agent_configuration_without_waiting(monkeypatch):
    client = StubClient(reporting=[set()])  # no host reported yet: an AS group's come and go
    provider = LtsIngestionProvider("linux", "LABEL", "AGENT", 1)
    monkeypatch.setattr(provider, "api", lambda region: LtsApi(client))
    result = provider.create(dict(AS_PROPS))
    assert names(client) == ["create_host_group", "create_access_config"]
    group = client.calls[0][1]
    assert (group["agent_access_type"], group["labels"]) == ("LABEL", ["hw-as-huaweicloud-as-hosts"])
    assert group.get("host_id_list") is None  # "当主机组接入类型是IP时,才可添加此字段"
    access = client.calls[1][1]
    assert access["access_config_type"] == "AGENT" and access.get("cluster_id") is None
    assert access["access_config_detail"]["paths"] == PROPS["paths"]
    assert access["access_config_detail"].get("path_type") is None  # CCE's only
    assert access["host_group_info"] == {"host_group_id_list": ["hg-1"]}
    assert result.outs["labels"] == ["hw-as-huaweicloud-as-hosts"]
    assert set(access) <= set(model.CreateAccessConfigRequestBody.openapi_types)
    assert set(group) <= set(model.CreateHostGroupRequestBody.openapi_types)
    # a new tag updates the group in place, keeping its identifier, and waits for no host
    client.calls.clear()
    olds = {**AS_PROPS, "hostGroupId": "hg-1", "accessConfigId": "ac-1"}
    provider.update("ac-1", olds, {**AS_PROPS, "tags": {"environment": "prod"}})
    assert names(client) == ["update_host_group", "update_access_config"]
    assert client.calls[0][1]["labels"] == ["hw-as-huaweicloud-as-hosts"]
    assert set(client.calls[0][1]) <= set(model.UpdateHostGroupRequestBody.openapi_types)


def test_the_provider_pickles_as_pulumi_serialises_it():
    provider = LtsIngestionProvider("linux", "IP", "AGENT", 20)
    again = dill.loads(base64.b64decode(serialize_provider(provider)))
    assert again.__dict__ == provider.__dict__
    assert serialize_provider(provider) == serialize_provider(again)  # stable: no diff from the pickle alone


# --- monitoring.logs.controlPlane on CCE: the cluster's log configuration -------------------------------------------

PLANE = {"logs": {"enabled": True, "retentionDays": 14, "controlPlane": ["scheduler", "api", "audit"]}}


@pytest.fixture(scope="module")
def plane_plan():
    return plan_stack_with("huaweicloud-cce", monitoring=PLANE)


def test_with_cce_the_control_plane_components_are_on_with_the_logs_retention(plane_plan):
    config = one(plane_plan, "Cce/clusterLogConfig:ClusterLogConfig")
    assert config["name"] == "hw-cce-huaweicloud-control-plane-logs"
    inputs = config["inputs"]
    assert inputs["clusterId"] == "<id of hw-cce-huaweicloud-cce>"
    assert inputs["ttlInDays"] == 14
    # the spec's types sorted (api, audit, scheduler) by CCE's names
    assert inputs["logConfigs"] == [
        {"name": "kube-apiserver", "enable": True},
        {"name": "audit", "enable": True},
        {"name": "kube-scheduler", "enable": True},
    ]
    out = plane_plan.as_json()["outputs"]["logs"]["controlPlane"]
    assert out == {"components": ["kube-apiserver", "audit", "kube-scheduler"], "retentionDays": 14}
    warnings = [w for w in plane_plan.as_json()["warnings"] if ".monitoring.logs.controlPlane" in w]
    assert len(warnings) == 1 and "not under the cluster's DEW key" in warnings[0]


def test_without_control_plane_no_log_configuration_is_registered(cce_plan):
    assert not resources_of(cce_plan, "Cce/clusterLogConfig:ClusterLogConfig")
    assert "controlPlane" not in cce_plan.as_json()["outputs"]["logs"]


def test_with_cce_no_cluster_name_is_needed_and_none_is_taken():
    values = load_stack(ROOT, "huaweicloud-cce").values
    values["gpu-cluster:cluster"]["monitoring"] = PLANE
    values["gpu-cluster:cluster"].setdefault("kubernetes", {})["clusterName"] = "hw-cce"
    with pytest.raises(ConfigError) as err:
        plan_values(values, "huaweicloud-cce")
    assert [e.key for e in getattr(err.value, "errors", [err.value])] == ["gpu-cluster:cluster.kubernetes.clusterName"]


@pytest.mark.parametrize(
    ("logs", "key", "words"),
    [
        ({"retentionDays": 60, "controlPlane": ["api"]}, "monitoring.logs.retentionDays", "1 to 30"),
        ({"controlPlane": ["authenticator"]}, "monitoring.logs.controlPlane", "authenticator is not shipped"),
    ],
)
def test_with_cce_what_its_log_configuration_does_not_take_is_refused_by_key(logs, key, words):
    values = load_stack(ROOT, "huaweicloud-cce").values
    values["gpu-cluster:cluster"]["monitoring"] = {"logs": {"enabled": True, **logs}}
    with pytest.raises(ConfigError) as err:
        plan_values(values, "huaweicloud-cce")
    assert [e.key for e in getattr(err.value, "errors", [err.value])] == [f"gpu-cluster:cluster.{key}"]
    assert words in str(err.value)


def test_day2_control_plane_on_adds_only_the_log_configuration(cce_plan):
    after = plan_stack_with("huaweicloud-cce", monitoring={"logs": {"enabled": True, "controlPlane": ["audit"]}})
    d = diff_plans(plan_json(cce_plan), plan_json(after))
    assert [urn.split("::")[-1] for urn in d.created] == ["hw-cce-huaweicloud-control-plane-logs"]
    assert not d.deleted and not d.changed


# --- the GPU software's container stdout: a second CCE access configuration -------------------------------------------


def test_with_cce_the_gpu_softwares_stdout_goes_to_its_own_stream(cce_plan):
    stream = by_name(cce_plan, "hw-cce-huaweicloud-logs-containers")["inputs"]
    assert stream["streamName"] == "containers" and stream["groupId"] == "<id of hw-cce-huaweicloud-logs>"
    ingestion = by_name(cce_plan, "hw-cce-huaweicloud-logs-containers-ingestion")
    inputs = ingestion["inputs"]
    assert inputs["pathType"] == "container_stdout" and inputs["paths"] == []
    assert inputs["stdout"] is True and inputs["stderr"] is True
    # huaweicloud-cce's release is the DCGM exporter (gpuSoftware device-plugin); the monitoring chart's is not GPU
    assert inputs["namespaceRegex"] == "^(dcgm-exporter)$"
    assert inputs["logStreamId"] == "<id of hw-cce-huaweicloud-logs-containers>"
    assert inputs["clusterId"] == "<id of hw-cce-huaweicloud-cce>"
    assert inputs["labels"] == ["k8s-log-<id of hw-cce-huaweicloud-cce>"]
    # its own host group and configuration names, beside the files' ones
    assert inputs["hostGroupName"] == "hw-cce-huaweicloud-cce-stdout-hosts"
    assert inputs["accessConfigName"] == "hw-cce-huaweicloud-cce-stdout"
    out = cce_plan.as_json()["outputs"]["logs"]["containers"]
    assert out["namespaces"] == ["dcgm-exporter"] and out["logStream"] == "containers"


def test_with_the_gpu_operator_its_namespace_is_collected():
    cluster = {"kubernetes": {**load_stack(ROOT, "huaweicloud-cce").values["gpu-cluster:cluster"]["kubernetes"]}}
    cluster["kubernetes"]["gpuSoftware"] = "operator"
    plan = plan_stack_with("huaweicloud-cce", monitoring=LOGS_ON, **cluster)
    inputs = by_name(plan, "hw-cce-huaweicloud-logs-containers-ingestion")["inputs"]
    assert inputs["namespaceRegex"] == "^(gpu-operator)$"


def test_the_stdout_request_is_the_sdks_container_stdout_body():
    api_client = StubClient()
    props = {
        "accessConfigName": "c", "paths": [], "singleLineMode": "system", "pathType": "container_stdout",
        "stdout": True, "stderr": True, "namespaceRegex": "^(dcgm-exporter)$", "clusterId": "cce-1",
        "logGroupId": "g", "logStreamId": "s", "tags": {},
    }  # fmt: skip
    LtsApi(api_client).create_access_config(props, "hg-1", "K8S_CCE")
    name, body = api_client.calls[-1]
    detail = body["access_config_detail"]
    assert name == "create_access_config" and body["cluster_id"] == "cce-1"
    assert (detail["path_type"], detail["stdout"], detail["stderr"]) == ("container_stdout", True, True)
    assert detail["namespace_regex"] == "^(dcgm-exporter)$" and detail.get("paths") is None


def by_name(plan, name: str) -> dict:
    found = [r for r in plan.as_json()["resources"] if r["name"] == name]
    assert len(found) == 1, name
    return found[0]


def test_day2_other_gpu_software_updates_the_stdout_configuration_in_place(cce_plan):
    cluster = {"kubernetes": {**load_stack(ROOT, "huaweicloud-cce").values["gpu-cluster:cluster"]["kubernetes"]}}
    cluster["kubernetes"]["gpuSoftware"] = "operator"
    d = diff_plans(plan_json(cce_plan), plan_json(plan_stack_with("huaweicloud-cce", monitoring=LOGS_ON, **cluster)))
    stdout = [c for c in d.changed if c.name == "hw-cce-huaweicloud-logs-containers-ingestion"]
    assert [(c.verdict, [x.path for x in c.changes]) for c in stdout] == [("update", ["namespaceRegex"])]
