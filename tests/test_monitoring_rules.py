"""monitoring.logs and monitoring.notify: refused, one keyed line each, where the cloud does not build them; the
retention each log service takes and the addresses, all at once (catalog/monitoring.yaml logs and notify)."""

from __future__ import annotations

from typing import Any

import pytest

from components.catalog import monitoring as data
from components.errors import ConfigErrors
from components.spec import build_spec
from components.spec.rules.monitoring import _retention_problem

from .test_budget import values as budget_values

K = "gpu-cluster:cluster.monitoring"
CLOUDS = ("aws", "gcp", "azure", "alicloud", "tencentcloud")
# a cloud with logs asked for; every cloud ships them now, so the refusal is tested with Huawei's entry taken away
HUAWEI = {
    "gpu-cluster:cloud": "huaweicloud",
    "huaweicloud:region": "cn-north-4",
    "gpu-cluster:cluster": {
        "instanceType": "pi2.2xlarge.4",
        "nodes": 1,
        "nodeGroup": "instances",
        "zone": "cn-north-4a",
        "monitoring": {"logs": {"enabled": True}},
    },
}


def values(cloud: str, **monitoring: Any) -> dict[str, Any]:
    vals = budget_values(cloud)
    cluster = {k: v for k, v in vals["gpu-cluster:cluster"].items() if k != "budget"}
    vals["gpu-cluster:cluster"] = {**cluster, "monitoring": monitoring}
    return vals


def errors_of(vals: dict[str, Any]) -> list[tuple[str, str]]:
    with pytest.raises(ConfigErrors) as info:
        build_spec(vals, "test")
    return [(e.key, e.message) for e in info.value.errors]


def test_the_defaults_ship_nothing_and_send_nothing():
    spec = build_spec(values("aws"), "t")
    assert (spec.monitoring.logs.enabled, spec.monitoring.logs.retention_days, spec.monitoring.notify) == (
        False,
        30,
        (),
    )


@pytest.mark.parametrize("cloud", [c for c in CLOUDS if data.logs(c) is not None])
def test_a_retention_the_log_service_refuses_is_one_keyed_line(cloud):
    entry = data.logs(cloud)
    assert entry is not None and entry["service"] and entry["source"]
    if _retention_problem(3653, entry["retentionDays"]) is None:
        pytest.skip(f"{entry['service']} takes 3653 days")
    got = errors_of(values(cloud, logs={"enabled": True, "retentionDays": 3653}))
    assert [k for k, _ in got] == [f"{K}.logs.retentionDays"]
    assert got[0][1].startswith(f"got 3653; {entry['service']} keeps logs for ")


@pytest.mark.parametrize("cloud", [c for c in CLOUDS if data.notify(c) is None])
def test_notify_where_not_built_is_refused(cloud):
    got = errors_of(values(cloud, notify=["ops@example.com"]))
    assert [k for k, _ in got] == [f"{K}.notify"]
    assert f"not built on {cloud}" in got[0][1]


@pytest.mark.parametrize("cloud", [c for c in CLOUDS if data.notify(c) is not None])
def test_bad_and_repeated_addresses_are_each_one_line(cloud):
    # the Prometheus notify needs (Alibaba: the managed one evaluates and sends), so only the addresses are wrong
    prometheus = data.notify(cloud)["needs"] or "selfHosted"
    got = errors_of(values(cloud, prometheus=prometheus, notify=["ops", "a@example.com", "a@example.com"]))
    keys = [k for k, _ in got]
    assert f"{K}.notify[0]" in keys and keys.count(f"{K}.notify") >= 1
    said = dict(got)
    assert said[f"{K}.notify[0]"] == "got 'ops'; an email address such as ops@example.com"
    assert said[f"{K}.notify"] == "an address is given twice; each once"


def test_the_most_addresses_a_cloud_takes_are_taken_and_one_more_is_refused():
    entry = data.notify("azure")
    assert entry is not None and entry["maxEmails"] == 1000  # an action group's email receivers

    def with_login(notify: list[str]) -> dict[str, Any]:
        vals = values("azure", prometheus="selfHosted", notify=notify)
        vals["gpu-cluster:cluster"]["login"] = {}  # the login node's Prometheus evaluates the rules on Azure
        return vals

    most = [f"ops{i}@example.com" for i in range(1000)]
    build_spec(with_login(most), "t")
    got = errors_of(with_login([*most, "one@example.com"]))
    assert [k for k, _ in got] == [f"{K}.notify"] and "at most 1000" in got[0][1]


def test_retention_problem_reads_values_and_ranges():
    assert _retention_problem(30, {"values": [1, 30, 60]}) is None
    assert _retention_problem(31, {"values": [1, 30, 60]}) == "one of 1, 30, 60"
    assert _retention_problem(4, {"min": 4, "max": 730}) is None
    assert _retention_problem(730, {"min": 4, "max": 730}) is None  # both ends are allowed
    assert _retention_problem(731, {"min": 4, "max": 730}) == "4 to 730"
    assert _retention_problem(3, {"min": 4, "max": 730}) == "4 to 730"


def test_huawei_logs_are_built():
    assert data.logs("huaweicloud") is not None and data.logs_not_built_why("huaweicloud") is None
    assert build_spec(HUAWEI, "test").monitoring.logs.enabled


def _without_huawei_logs(monkeypatch, why: str | None) -> None:
    logs = data.logs
    monkeypatch.setattr(data, "logs", lambda cloud: None if cloud == "huaweicloud" else logs(cloud))
    monkeypatch.setattr(data, "built", lambda section: ("aws", "gcp", "azure", "alicloud", "tencentcloud"))
    monkeypatch.setattr(data, "logs_not_built_why", lambda cloud: why)


def test_logs_where_not_built_are_refused_with_the_reason_and_where_they_are(monkeypatch):
    _without_huawei_logs(monkeypatch, "no host access configuration")
    got = errors_of(HUAWEI)
    assert [key for key, _ in got] == [f"{K}.logs.enabled"]
    assert "not built on huaweicloud yet: no host access configuration" in got[0][1]
    assert "(built on: aws, gcp, azure, alicloud, tencentcloud); use false" in got[0][1]


def test_a_cloud_without_a_stated_reason_is_refused_naming_where_logs_are_built(monkeypatch):
    _without_huawei_logs(monkeypatch, None)
    got = errors_of(HUAWEI)
    assert got[0][1].startswith("shipping logs is not built on huaweicloud yet (built on: aws, gcp,")
