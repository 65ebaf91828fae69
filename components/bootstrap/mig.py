"""The MIG part: partition every GPU into `gpuPartition` instances at boot, before the health check."""

from __future__ import annotations

import json

from . import File, Part, script

UNIT = """[Unit]
Description=gpu-cluster MIG partitioning ({profile} x {count} per GPU)
After=nvidia-persistenced.service
Before=gpu-cluster-health.service

[Service]
Type=oneshot
RemainAfterExit=yes
EnvironmentFile=/etc/gpu-cluster/mig.env
ExecStart=/usr/local/sbin/gpu-cluster-mig

[Install]
WantedBy=multi-user.target
"""


def mig_part(partition: tuple[str, int] | None) -> Part:
    if partition is None:
        return Part("mig")
    profile, count = partition
    env = {"MIG_PROFILE": profile, "MIG_COUNT": str(count)}
    return Part(
        "mig",
        files=(
            File("/usr/local/sbin/gpu-cluster-mig", script("mig.sh"), "0755"),
            File("/etc/gpu-cluster/mig.env", "".join(f"{k}={json.dumps(v)}\n" for k, v in env.items())),
            File("/etc/systemd/system/gpu-cluster-mig.service", UNIT.format(profile=profile, count=count)),
        ),
        commands=(("systemctl", "daemon-reload"), ("systemctl", "enable", "--now", "gpu-cluster-mig.service")),
        summary=f"partitions every GPU into {count} x MIG {profile}.",
    )
