"""monitoring.notify on Tencent Cloud: refused by key, with the sourced reason (catalog/monitoring.yaml
notifyNotBuilt.tencentcloud) instead of a bare "not built"."""

from __future__ import annotations

import pytest

from components.catalog import monitoring as catalog_monitoring
from components.errors import ConfigErrors

from .conftest import spec_of


def test_notify_is_refused_by_key_saying_why_no_alarm_notice_reaches_an_address():
    values = {
        "gpu-cluster:cloud": "tencentcloud",
        "tencentcloud:region": "ap-guangzhou",
        "gpu-cluster:cluster": {
            "gpu": "T4:1",
            "nodes": 1,
            "zone": "ap-guangzhou-3",
            "login": {},
            "monitoring": {"notify": ["ops@example.com"]},
        },
    }
    with pytest.raises(ConfigErrors) as caught:
        spec_of(values)
    (error,) = [e for e in caught.value.errors if e.key == "gpu-cluster:cluster.monitoring.notify"]
    assert "sending alerts is not built on tencentcloud" in error.message
    assert "CreateMessageReceiver requires a phone number" in error.message
    assert catalog_monitoring.notify("tencentcloud") is None
    assert "598/96136" in catalog_monitoring.data()["notifyNotBuilt"]["tencentcloud"]["source"]
