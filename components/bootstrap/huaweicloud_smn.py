"""monitoring.notify on Huawei Cloud: the login node's Alertmanager posts to a webhook that publishes to SMN.

Alertmanager has no SMN receiver, so its webhook_config posts to a systemd socket on the loopback (Accept=yes: one
huaweicloud_smn_publish.sh per connection, no long-running server to keep alive); the script calls SMN
PublishMessage signed with the login node's agency. The topic's URN is known at deploy (`TOPIC_PLACEHOLDER`, which
the cloud's package fills in the login node's user data).
"""

from __future__ import annotations

from dataclasses import dataclass

from . import File, env_file, script
from .alertmanager import Receiver

TOPIC_PLACEHOLDER = "@@GPU_CLUSTER_ALERT_TOPIC@@"  # the SMN topic's URN, known at deploy
ENV_PATH = "/etc/gpu-cluster/smn-publish.env"
SCRIPT_PATH = "/usr/local/sbin/gpu-cluster-smn-publish"
SOCKET = "gpu-cluster-smn-publish.socket"


@dataclass(frozen=True)
class SmnWebhook:
    endpoint: str  # the region's SMN API host
    metadata_url: str  # where the agency's temporary credentials come from
    listen: str  # host:port on the loopback
    subject_max_bytes: int
    message_max_bytes: int


SOCKET_UNIT = """[Unit]
Description=gpu-cluster: Alertmanager's webhook to SMN (monitoring.notify), on {listen} only

[Socket]
ListenStream={listen}
Accept=yes

[Install]
WantedBy=sockets.target
"""

# one instance per connection, the connection on stdin and stdout; no user of its own is kept (DynamicUser)
SERVICE_UNIT = f"""[Unit]
Description=gpu-cluster: publish one Alertmanager notification to SMN

[Service]
Type=oneshot
DynamicUser=yes
EnvironmentFile={ENV_PATH}
ExecStart={SCRIPT_PATH}
StandardInput=socket
StandardOutput=socket
StandardError=journal
TimeoutStartSec=60
"""


def receiver(hook: SmnWebhook) -> Receiver:
    """Alertmanager's webhook receiver and what serves it."""
    env = {
        "SMN_ENDPOINT": hook.endpoint,
        "TOPIC_URN": TOPIC_PLACEHOLDER,
        "METADATA_URL": hook.metadata_url,
        "SUBJECT_MAX_BYTES": str(hook.subject_max_bytes),
        "MESSAGE_MAX_BYTES": str(hook.message_max_bytes),
    }
    files = (
        File(SCRIPT_PATH, script("huaweicloud_smn_publish.sh"), "0755"),
        File(ENV_PATH, env_file(env)),
        File(f"/etc/systemd/system/{SOCKET}", SOCKET_UNIT.format(listen=hook.listen)),
        File("/etc/systemd/system/gpu-cluster-smn-publish@.service", SERVICE_UNIT),
    )
    return Receiver(
        "webhook",
        {"url": f"http://{hook.listen}/"},
        label="SMN (a webhook on the login node publishing to the cluster's topic)",
        files=files,
        commands=(("systemctl", "daemon-reload"), ("systemctl", "enable", "--now", SOCKET)),
    )
