"""The interruption part: a GPU node drains itself before it goes (scheduler slurm or none; not Kubernetes).

- `gpu-cluster-drain REASON [DEADLINE]` (drain.sh): Slurm: the node DRAIN, its running batch jobs requeued, then a
  wait until no job is left or the deadline; no scheduler: logged.
- `gpu-cluster-interruption` (interruption_<cloud>.sh, a service): watches the cloud's metadata service for the
  notices that take the node away (AWS Spot and Auto Scaling termination, GCP preemption and terminating
  maintenance, Azure Scheduled Events, Alibaba and Tencent spot reclaim), drains, then tells the cloud it is done
  where the cloud waits for it (AWS complete-lifecycle-action, Azure StartRequests). Its endpoints, fields and
  timings are catalog/interruption.yaml's, written to its EnvironmentFile.
- `gpu-cluster-drain.service`: drains at every shutdown (ExecStop), before slurmd stops and the node leaves Slurm.

Kubernetes nodes get none of it: their node identity may not evict pods; the in-cluster handler or the managed pool
drains them (catalog/interruption.yaml `kubernetes:`).
"""

from __future__ import annotations

from typing import Any

from ..catalog.interruption import cloud_data
from ..catalog.update import cloud_update
from . import File, Part, env_file, script

NAME = "interruption"
DRAIN_PATH = "/usr/local/sbin/gpu-cluster-drain"
DRAIN_ENV = "/etc/gpu-cluster/drain.env"
WATCHER_UNIT = f"gpu-cluster-{NAME}.service"
SHUTDOWN_UNIT = "gpu-cluster-drain.service"


def _words(values: Any) -> str:
    return " ".join(str(v) for v in values)


def _aws_hook() -> tuple[str, int]:
    """The managed groups' termination hook name, and the longest drain budget it can hold (catalog/update.yaml)."""
    entry = cloud_update("aws")
    assert entry.hook is not None and entry.drain is not None and entry.drain.max is not None
    return entry.hook.name, entry.drain.max


# Each watcher's settings, by the variable its script reads: the key in catalog/interruption.yaml `clouds.<cloud>`
# that holds it (a dotted path into a block; a list is written space-separated).
_ENV_KEYS: dict[str, dict[str, str]] = {
    "aws": {
        "IMDS": "metadata",
        "TOKEN_PATH": "tokenPath",
        "TOKEN_TTL_HEADER": "tokenTtlHeader",
        "TOKEN_HEADER": "tokenHeader",
        "TOKEN_TTL_SECONDS": "tokenTtlSeconds",
        "INSTANCE_ID_PATH": "instanceIdPath",
        "REGION_PATH": "regionPath",
        "SPOT_PATH": "spotPath",
        "SPOT_ACTION_FIELD": "spotFields.action",
        "SPOT_TIME_FIELD": "spotFields.time",
        "SPOT_NOTICE_SECONDS": "spotNoticeSeconds",
        "LIFECYCLE_PATH": "lifecyclePath",
        "LIFECYCLE_TERMINATED": "lifecycleTerminated",
        "LIFECYCLE_RESULT": "lifecycleResult",
    },
    "gcp": {
        "METADATA": "metadata",
        "HEADER": "header",
        "PREEMPTED_PATH": "preemptedPath",
        "PREEMPTED_VALUE": "preemptedValue",
        "PREEMPT_NOTICE_SECONDS": "preemptNoticeSeconds",
        "MAINTENANCE_PATH": "maintenancePath",
        "MAINTENANCE_STOPS": "maintenanceStops",
        "MAINTENANCE_NOTICE_SECONDS": "maintenanceNoticeSeconds",
    },
    "azure": {
        "METADATA": "metadata",
        "HEADER": "header",
        "EVENTS_PATH": "eventsPath",
        "EVENTS_API_VERSION": "eventsApiVersion",
        "NAME_PATH": "instanceNamePath",
        "INSTANCE_API_VERSION": "instanceApiVersion",
        "DRAIN_EVENTS": "drainEvents",
    },
    "alicloud": {
        "METADATA": "metadata",
        "TOKEN_PATH": "tokenPath",
        "TOKEN_TTL_HEADER": "tokenTtlHeader",
        "TOKEN_HEADER": "tokenHeader",
        "TOKEN_TTL_SECONDS": "tokenTtlSeconds",
        "SPOT_PATH": "spotPath",
        "SPOT_NOTICE_SECONDS": "spotNoticeSeconds",
    },
    "tencentcloud": {"METADATA": "metadata", "SPOT_PATH": "spotPath", "SPOT_TIME_ZONE": "spotTimeZone"},
}


def _setting(entry: dict[str, Any], key: str) -> str:
    value: Any = entry
    for part in key.split("."):
        value = value[part]
    return _words(value) if isinstance(value, list) else str(value)


def watcher_env(cloud: str, *, managed: bool) -> dict[str, str]:
    """The watcher's settings: catalog/interruption.yaml `clouds.<cloud>` under the names its script reads.

    `managed`: the node is in an Auto Scaling group (AWS): it watches the group's target lifecycle state too.
    """
    d = cloud_data(cloud)
    env = {var: _setting(d, key) for var, key in _ENV_KEYS[cloud].items()}
    if cloud == "aws":  # the hook the groups get (catalog/update.yaml), not this catalog's
        hook, wait = _aws_hook()
        env |= {"LIFECYCLE_HOOK": hook if managed else "", "LIFECYCLE_WAIT_SECONDS": str(wait)}
    return {**env, "POLL_SECONDS": str(d["pollSeconds"])}  # DRAIN and STATE_FILE: the script's defaults


def watcher_unit(cloud: str) -> str:
    poll = cloud_data(cloud)["pollSeconds"]
    return (
        "[Unit]\n"
        f"Description=gpu-cluster: drain on {cloud} interruption notices\n"
        "Wants=network-online.target\n"
        "After=network-online.target\n\n"
        "[Service]\n"
        "Type=simple\n"
        f"EnvironmentFile=/etc/gpu-cluster/{NAME}.env\n"
        f"ExecStart=/usr/local/sbin/gpu-cluster-{NAME}\n"
        "Restart=always\n"
        f"RestartSec={poll}\n\n"
        "[Install]\n"
        "WantedBy=multi-user.target\n"
    )


def shutdown_unit(scheduler: str) -> str:
    """Stopped at shutdown before slurmd and munge (it starts after them) and before the node leaves Slurm
    (gpu-cluster-slurm-leave.service deletes only an idle node): the jobs are requeued first."""
    slurm = " munge.service slurmd.service gpu-cluster-slurm-leave.service" if scheduler == "slurm" else ""
    return (
        "[Unit]\n"
        "Description=gpu-cluster: drain at shutdown\n"
        f"After=network-online.target{slurm}\n\n"
        "[Service]\n"
        "Type=oneshot\n"
        "RemainAfterExit=yes\n"
        "ExecStart=/bin/true\n"
        f'ExecStop={DRAIN_PATH} "gpu-cluster: the node is shutting down"\n\n'
        "[Install]\n"
        "WantedBy=multi-user.target\n"
    )


def shutdown_script() -> str:
    """GCP's `shutdown-script` metadata: Compute Engine runs it when the VM stops or is deleted (a MIG's included)."""
    return (
        "#!/bin/bash\n"
        "# gpu-cluster: Compute Engine runs this when the VM stops or is deleted: drain first (gpu-cluster-drain)\n"
        f'[ -x {DRAIN_PATH} ] && exec {DRAIN_PATH} "gpu-cluster: Compute Engine is stopping or deleting this VM"\n'
    )


def interruption_part(cloud: str, scheduler: str, *, managed: bool) -> Part:
    """The drain, the watcher of `cloud`'s notices and the shutdown drain; empty for Kubernetes nodes."""
    if scheduler == "kubernetes" or cloud_data(cloud).get("watcher") is False:  # the cloud sends no notice to watch
        return Part(NAME)
    poll = str(cloud_data(cloud)["pollSeconds"])
    drain_env = {"SCHEDULER": "slurm" if scheduler == "slurm" else "none", "STEP_SECONDS": poll}
    what = "drains it in Slurm and requeues its jobs" if scheduler == "slurm" else "logs it (no scheduler)"
    return Part(
        NAME,
        files=(
            File(DRAIN_PATH, script("drain.sh"), "0755"),
            File(DRAIN_ENV, env_file(drain_env)),
            File(f"/usr/local/sbin/gpu-cluster-{NAME}", script(f"interruption_{cloud}.sh"), "0755"),
            File(f"/etc/gpu-cluster/{NAME}.env", env_file(watcher_env(cloud, managed=managed))),
            File(f"/etc/systemd/system/{WATCHER_UNIT}", watcher_unit(cloud)),
            File(f"/etc/systemd/system/{SHUTDOWN_UNIT}", shutdown_unit(scheduler)),
        ),
        commands=(
            ("systemctl", "daemon-reload"),
            ("systemctl", "enable", "--now", "--no-block", WATCHER_UNIT, SHUTDOWN_UNIT),
        ),
        summary=f"watches {cloud}'s interruption notices and, before the node goes, {what}",
    )
