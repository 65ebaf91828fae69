"""monitoring.notify on Huawei Cloud, pure: an SMN topic with one email subscription per address, the login node's
Alertmanager posting to a webhook beside it that publishes to the topic (bootstrap/huaweicloud_smn.py), and the
agency's custom policy publishing to that topic only (catalog/monitoring.yaml notify.huaweicloud).

The topic's name is decided here, so the policy's resource is known before anything is built; its URN (which
PublishMessage's path takes) is known at deploy and filled into the login node's user data.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from ...bootstrap.huaweicloud_smn import SmnWebhook
from ...catalog import monitoring as catalog_monitoring
from ...spec import ClusterSpec

_TOPIC = re.compile(r"[^A-Za-z0-9_-]")  # smn.Topic name: letters, digits, '_' and '-', from a letter or digit, <= 255
_ROLE = re.compile(r"[^A-Za-z0-9_.-]")  # the custom policy's name, as scheduler slurm's (layout/huaweicloud/slurm.py)


@dataclass(frozen=True)
class HuaweiAlerts:
    emails: tuple[str, ...]
    topic_name: str
    display_name: str  # the email sender's name (smn.Topic display_name: at most 192 characters)
    role_name: str  # the agency's custom policy (iam.Role) publishing to the topic
    role_type: str
    role_policy: str  # its JSON document
    action: str  # what it allows on the topic (an existing agency is told to grant it)


def _entry() -> dict[str, Any]:
    entry = catalog_monitoring.notify("huaweicloud")
    assert entry is not None  # the spec refuses notify where catalog/monitoring.yaml does not build it
    return entry


def webhook(spec: ClusterSpec) -> SmnWebhook:
    entry = _entry()
    hosted = catalog_monitoring.self_hosted("huaweicloud")
    assert hosted is not None
    return SmnWebhook(
        endpoint=str(entry["endpoint"]).format(region=spec.region),
        metadata_url=str(hosted["credentials"]),
        listen=str(entry["webhookListen"]),
        subject_max_bytes=int(entry["subjectMaxBytes"]),
        message_max_bytes=int(entry["messageMaxBytes"]),
    )


def plan(spec: ClusterSpec) -> HuaweiAlerts | None:
    if not spec.monitoring.notify:
        return None
    grant = _entry()["grant"]
    topic = _TOPIC.sub("-", f"{spec.name}-{spec.stack}-alerts")[:255]
    resource = str(grant["resource"]).format(name=topic)
    statement = {"Action": [str(grant["action"])], "Effect": "Allow", "Resource": [resource]}
    return HuaweiAlerts(
        emails=tuple(spec.monitoring.notify),
        topic_name=topic,
        display_name=f"gpu-cluster {spec.name} alerts"[:192],
        role_name=_ROLE.sub("-", f"{spec.name}-{spec.stack}-alerts-publish")[:64],
        role_type=str(grant["roleType"]),
        role_policy=json.dumps({"Statement": [statement], "Version": "1.1"}, sort_keys=True),
        action=str(grant["action"]),
    )
