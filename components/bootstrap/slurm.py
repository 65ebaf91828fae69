"""The Slurm parts (`scheduler: slurm`): head node, GPU node and login node bootstrap, cloud-neutral.

Every cloud calls, with its `SlurmLayout` (components/layout/slurm.py) and its munge-key hook:

- `head_parts(layout, key_hook=..., key_hook_env=..., conf_hook=..., conf_hook_env=..., mount=...)`: the head node's
  whole bootstrap (user data), with the timer that deletes GPU nodes which stopped responding (`cleanup_part`) and
  the one that brings the compute-side configuration from the cloud's channel (`conf_part`);
- `compute_parts(layout, head_address=..., key_hook=..., key_hook_env=..., switch=...)`: appended to the GPU nodes'
  `node_parts` (after the health part: the HealthCheckProgram runs the same check), with the job map for the DCGM
  exporter's hpc_job label (`slurm_jobmap.jobmap_part`);
- `login_parts(layout, head_address=..., key_hook=..., key_hook_env=..., mount=...)`: the login node's user data.

`key_hook` is a shell script (like `<cloud>_unhealthy.sh`) that prints the MUNGE key, base64, on stdout, read from
the cloud's secret store with the node's identity; `key_hook_env` its settings (e.g. the secret's id), written to
/etc/gpu-cluster/munge-key.env. The part decodes the key into /etc/munge/munge.key (0400 munge:munge); it is never
logged. `head_address` is the head's private address or `slurm_conf.HEAD_PLACEHOLDER` (replaced at deploy).
`conf_hook` is the cloud's script that prints the compute-side configuration text (`SlurmLayout.compute_config`) from
its in-place channel (an SSM parameter, a metadata item, the VM's userData, an OOS parameter), `conf_hook_env` its
settings: the head's user data names the channel, never its content, so growing or changing the GPU nodes leaves it
unchanged. `mount` is the cloud's `Mount` of storage.shared (the GPU nodes already get it from `node_parts`).

The role scripts (slurm_<role>.sh) share slurm_common.sh, installed as a file and sourced at run time, and
slurm_node_setup.sh, the steps every role takes first, which `script` inlines in their place (so a node's script is
the same as with the steps written out).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ..catalog.slurm import data
from . import File, Part, env_file, oneshot_unit, script, service_part
from .mounts import Mount, mounts_part
from .slurm_conf import (
    CONF_DIR,
    HEAD_PLACEHOLDER,
    HEALTH_PROGRAM,
    LAUNCH_ENV,
    RESUME_FAIL_PROGRAM,
    RESUME_PROGRAM,
    SUSPEND_PROGRAM,
    SlurmLayout,
)
from .slurm_jobmap import jobmap_part
from .slurm_mps import mps_part

COMMON_PATH = "/usr/local/lib/gpu-cluster/slurm_common.sh"
KEY_HOOK_PATH = "/usr/local/sbin/gpu-cluster-munge-key"
KEY_HOOK_ENV = "/etc/gpu-cluster/munge-key.env"
CONF_SOURCE = "/etc/gpu-cluster/slurm"
CONF_SYNC = "slurm-conf"
CONF_SYNC_PATH = f"/usr/local/sbin/gpu-cluster-{CONF_SYNC}"
CONF_HOOK_PATH = f"/usr/local/sbin/gpu-cluster-{CONF_SYNC}-fetch"
POWER_HOOK_PATH = "/usr/local/lib/gpu-cluster/slurm_power_hook.sh"
POWER_ENV_PATH = "/etc/gpu-cluster/slurm-power.env"
NODE_NAME_HOOK_PATH = "/usr/local/sbin/gpu-cluster-slurm-node-name"
# slurm.accounting: slurmdbd.conf's template (no secret: the password is put in at boot) and the password hook
DBD_TEMPLATE = "/etc/gpu-cluster/slurmdbd.conf"
DB_PASSWORD_HOOK_PATH = "/usr/local/sbin/gpu-cluster-db-password"
DB_PASSWORD_ENV = "/etc/gpu-cluster/db-password.env"
SLURMDBD_PATH = "/usr/local/sbin/gpu-cluster-slurmdbd"


@dataclass(frozen=True)
class DbdHook:
    """A cloud's half of slurm.accounting on the head: `password`, a script printing the database password on stdout
    (read from the cloud's secret store with the head's identity), and its settings `env` (e.g. the secret's id)."""

    password: str
    env: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class PowerHooks:
    """A cloud's half of elastic partitions: `power` (sourced by slurm_power.sh on the head: cloud_launch,
    cloud_terminate) with its settings `power_env`, and `node_name` (run on a GPU node: prints its Slurm name)."""

    power: str
    power_env: Mapping[str, str]
    node_name: str
    node_name_env: Mapping[str, str] = field(default_factory=dict)  # the node's settings for `node_name`


def _shared_files(key_hook: str, key_hook_env: Mapping[str, str]) -> tuple[File, ...]:
    return (
        File(COMMON_PATH, script("slurm_common.sh")),
        File(KEY_HOOK_PATH, key_hook, "0755"),
        File(KEY_HOOK_ENV, env_file(key_hook_env), "0600"),
    )


def _env(layout: SlurmLayout, packages: tuple[str, ...], os_packages: tuple[str, ...]) -> dict[str, str]:
    pkg = layout.packages
    return {
        "SLURM_VERSION": pkg.version,
        "SLURM_REPO": pkg.repo,
        "SLURM_KEY": pkg.key,
        "SLURM_PIN_ORIGIN": pkg.pin_origin,
        "SLURM_PACKAGES": " ".join(packages),
        "OS_PACKAGES": " ".join(os_packages),
        "SLURM_UID": str(layout.slurm_uid),
        "MUNGE_KEY_HOOK": KEY_HOOK_PATH,
        "SHARED_PATH": layout.shared_path or "",
        "SLURM_COMMON": COMMON_PATH,
    }


def _client_env(layout: SlurmLayout, packages: tuple[str, ...], head_address: str) -> dict[str, str]:
    """A node of the head's (GPU or login): MUNGE, the NFS client for the head's /home, and where the head is."""
    pkg = layout.packages
    os_packages = pkg.munge + (pkg.nfs_client if layout.home_export else ())
    return {
        **_env(layout, packages, os_packages),
        "HEAD_ADDRESS": head_address,
        "SLURMCTLD_PORT": str(layout.ports.slurmctld),
    }


def _role_part(
    role: str,
    env: Mapping[str, str],
    *,
    description: str,
    summary: str,
    mounted: bool,
    key_hook: str,
    key_hook_env: Mapping[str, str] | None,
    extra_files: tuple[File, ...] = (),
) -> Part:
    """The part of one role: slurm_<role>.sh as the unit gpu-cluster-slurm-<role>, after the network and the mounts
    (`mounted`), with the common library and the key hook beside it."""
    after = ["network-online.target", *(["gpu-cluster-mounts.service"] if mounted else [])]
    return service_part(
        f"slurm-{role}",
        script_text=script(f"slurm_{role}.sh"),
        env=env,
        unit=oneshot_unit(description, name=f"slurm-{role}", wants=["network-online.target"], after=after),
        extra_files=(*_shared_files(key_hook, key_hook_env or {}), *extra_files),
        no_block=True,
        summary=summary,
    )


def head_parts(
    layout: SlurmLayout,
    *,
    key_hook: str,
    key_hook_env: Mapping[str, str] | None = None,
    conf_hook: str,
    conf_hook_env: Mapping[str, str] | None = None,
    mount: Mount | None = None,
    power: PowerHooks | None = None,
    dbd: DbdHook | None = None,
) -> tuple[Part, ...]:
    """The head node: slurmctld with the controller-wide files, MUNGE, /home (exported, or on storage.shared), and the
    compute-side files from the cloud's channel (`conf_part`); with elastic partitions the power-saving programs
    (`power_part`) instead of the dead-node cleanup (CLOUD nodes are powered down, never deleted); with accounting
    slurmdbd, started before slurmctld, with the cloud's password hook `dbd`."""
    pkg = layout.packages
    os_packages = pkg.munge + (pkg.nfs_server if layout.home_export else ())
    accounting = layout.accounting
    env = {
        **_env(layout, pkg.head + (accounting.packages if accounting else ()), os_packages),
        "CONF_SOURCE": CONF_SOURCE,
        "CONF_DIR": CONF_DIR,
        "STATE_DIR": layout.state_dir,
        "EXPORT_CIDR": layout.export_cidr,
        "CONF_SYNC": CONF_SYNC_PATH,
    }
    confs = tuple(File(f"{CONF_SOURCE}/{name}", text) for name, text in layout.head_files().items())
    if accounting is not None and (dbd is None or layout.slurmdbd_conf is None):
        raise ValueError("slurm.accounting needs the cloud's database password hook")
    head = _role_part(
        "head",
        env,
        description="gpu-cluster Slurm head node (slurmctld, MUNGE, /home)",
        summary=f"runs slurmctld {pkg.version} for partition {layout.partition} (configless), "
        + ("/home on storage.shared" if layout.shared_path else "exports /home over NFS"),
        mounted=mount is not None,
        key_hook=key_hook,
        key_hook_env=key_hook_env,
        extra_files=confs,
    )
    users = (users_part(head=True),) if layout.users_conf is not None else ()
    # slurm.accounting: enabled before the head's part starts slurmctld, which pulls it in
    dbd_parts = (dbd_part(layout, dbd),) if dbd is not None and layout.accounting is not None else ()
    if layout.elastic:
        if power is None:
            raise ValueError("elastic partitions need the cloud's power hooks")
        return (mounts_part(mount), conf_part(conf_hook, conf_hook_env or {}), power_part(power), *dbd_parts, head,
                *users)  # fmt: skip
    return (mounts_part(mount), conf_part(conf_hook, conf_hook_env or {}), *dbd_parts, head, cleanup_part(), *users)


SLURMDBD = "slurmdbd"


def dbd_part(layout: SlurmLayout, dbd: DbdHook) -> Part:
    """slurm.accounting on the head: a oneshot that slurmctld's start pulls in and waits for (the head's own script is
    unchanged): slurmdbd.conf from its template with the password from the cloud's hook, slurmdbd, the cluster
    registered (slurm_dbd.sh). Its failure does not stop slurmctld: jobs run, and slurmctld keeps their records for
    slurmdbd until it answers."""
    assert layout.accounting is not None and layout.slurmdbd_conf is not None
    env = {
        "DBD_TEMPLATE": DBD_TEMPLATE,
        "DB_PASSWORD_HOOK": DB_PASSWORD_HOOK_PATH,
        "CONF_DIR": CONF_DIR,
        "CLUSTER_NAME": layout.cluster_name,
    }
    unit = (
        "[Unit]\n"
        "Description=gpu-cluster: slurmdbd (its database password from the cloud), before slurmctld\n"
        "Wants=network-online.target munge.service\n"
        "After=network-online.target munge.service\n"
        "Before=slurmctld.service\n\n"
        "[Service]\n"
        "Type=oneshot\n"
        "RemainAfterExit=yes\n"
        "TimeoutStartSec=900\n"
        f"EnvironmentFile=/etc/gpu-cluster/{SLURMDBD}.env\n"
        f"ExecStart={SLURMDBD_PATH}\n\n"
        "[Install]\n"
        "WantedBy=slurmctld.service\n"
    )
    return Part(
        SLURMDBD,
        files=(
            File(SLURMDBD_PATH, script("slurm_dbd.sh"), "0755"),
            File(DBD_TEMPLATE, layout.slurmdbd_conf, "0600"),
            File(DB_PASSWORD_HOOK_PATH, dbd.password, "0700"),
            File(DB_PASSWORD_ENV, env_file(dbd.env), "0600"),
            File(f"/etc/gpu-cluster/{SLURMDBD}.env", env_file(env)),
            File(f"/etc/systemd/system/gpu-cluster-{SLURMDBD}.service", unit),
        ),
        # enabled, not started: slurmctld's start (the head's part) runs it
        commands=(("systemctl", "daemon-reload"), ("systemctl", "enable", f"gpu-cluster-{SLURMDBD}.service")),
        summary=f"slurmdbd {layout.packages.version} on {layout.accounting.service}, before slurmctld; the cluster "
        "registered, so sacct shows every job",
    )


def power_part(hooks: PowerHooks) -> Part:
    """The resume, suspend and resume-fail programs slurmctld runs (nodes.conf names them), with the cloud's hook.
    slurmctld runs them as SlurmUser: the files are readable by it and hold no secret."""
    program = script("slurm_power.sh")
    env = {"POWER_HOOK": POWER_HOOK_PATH, "LAUNCH_ENV": f"{CONF_DIR}/{LAUNCH_ENV}", **hooks.power_env}
    return Part(
        "slurm-power",
        files=(
            *(File(path, program, "0755") for path in (RESUME_PROGRAM, SUSPEND_PROGRAM, RESUME_FAIL_PROGRAM)),
            File(POWER_HOOK_PATH, hooks.power, "0644"),
            File(POWER_ENV_PATH, env_file(env), "0644"),
        ),
        summary="launches elastic partitions' nodes when jobs wait for them and deletes them when idle (power saving)",
    )


def conf_part(hook: str, hook_env: Mapping[str, str]) -> Part:
    """The head's timer bringing the compute-side configuration from the cloud's channel: when the text changed it
    writes the files and runs `scontrol reconfigure` (catalog/slurm.yaml computeConfig). Its files come before the
    head's part, which runs it once (--install) before slurmctld starts."""
    every = int(data()["computeConfig"]["everySeconds"])
    service = (
        "[Unit]\n"
        "Description=gpu-cluster: the GPU nodes' Slurm configuration from the cloud, reconfigure when it changed\n"
        "After=slurmctld.service\n\n"
        "[Service]\n"
        "Type=oneshot\n"
        f"EnvironmentFile=/etc/gpu-cluster/{CONF_SYNC}.env\n"
        f"ExecStart={CONF_SYNC_PATH}\n"
    )
    timer = (
        "[Unit]\n"
        f"Description=gpu-cluster: look for a new GPU-node Slurm configuration every {every} s\n\n"
        "[Timer]\n"
        f"OnBootSec={every}\n"
        f"OnUnitActiveSec={every}\n\n"
        "[Install]\n"
        "WantedBy=timers.target\n"
    )
    env = {"CONF_HOOK": CONF_HOOK_PATH, "CONF_DIR": CONF_DIR, **hook_env}
    return Part(
        CONF_SYNC,
        files=(
            File(CONF_SYNC_PATH, script("slurm_conf_sync.sh"), "0755"),
            File(CONF_HOOK_PATH, hook, "0755"),
            File(f"/etc/gpu-cluster/{CONF_SYNC}.env", env_file(env), "0600"),
            File(f"/etc/systemd/system/gpu-cluster-{CONF_SYNC}.service", service),
            File(f"/etc/systemd/system/gpu-cluster-{CONF_SYNC}.timer", timer),
        ),
        commands=(("systemctl", "daemon-reload"), ("systemctl", "enable", "--now", f"gpu-cluster-{CONF_SYNC}.timer")),
        summary=f"reads the GPU nodes' Slurm configuration from the cloud every {every} s; reconfigures on a change",
    )


CLEANUP = "slurm-cleanup"
USERS = "slurm-users"
USERS_PUBLISHED = "/home/.gpu-cluster/users.conf"


def timer_part(
    name: str,
    script_name: str,
    env: Mapping[str, str],
    every: int,
    *,
    does: str,
    looks: str,
    after: str,
    summary: str,
    env_mode: str = "0644",
) -> Part:
    """A oneshot `gpu-cluster-<name>` (the script, its settings) run by a timer every `every` s from boot; `does` and
    `looks` describe the service and the timer, `after` the unit it follows."""
    service = (
        "[Unit]\n"
        f"Description=gpu-cluster: {does}\n"
        f"After={after}\n\n"
        "[Service]\n"
        "Type=oneshot\n"
        f"EnvironmentFile=/etc/gpu-cluster/{name}.env\n"
        f"ExecStart=/usr/local/sbin/gpu-cluster-{name}\n"
    )
    timer = (
        "[Unit]\n"
        f"Description=gpu-cluster: {looks}\n\n"
        "[Timer]\n"
        f"OnBootSec={every}\n"
        f"OnUnitActiveSec={every}\n\n"
        "[Install]\n"
        "WantedBy=timers.target\n"
    )
    settings = env_file(env)
    return Part(
        name,
        files=(
            File(f"/usr/local/sbin/gpu-cluster-{name}", script(script_name), "0755"),
            File(f"/etc/gpu-cluster/{name}.env", settings, env_mode),
            File(f"/etc/systemd/system/gpu-cluster-{name}.service", service),
            File(f"/etc/systemd/system/gpu-cluster-{name}.timer", timer),
        ),
        commands=(("systemctl", "daemon-reload"), ("systemctl", "enable", "--now", f"gpu-cluster-{name}.timer")),
        summary=summary,
    )


def cleanup_part() -> Part:
    """The head's timer deleting the dynamic nodes that have not responded for a while (catalog/slurm.yaml
    deadNodeCleanup): a node that died without leaving frees its MaxNodeCount slot for its replacement."""
    rule = data()["deadNodeCleanup"]
    after, every = int(rule["afterSeconds"]), int(rule["everySeconds"])
    return timer_part(
        CLEANUP,
        "slurm_cleanup.sh",
        {"DEAD_AFTER_SECONDS": str(after)},
        every,
        does=f"delete Slurm nodes not responding for {after} s",
        looks=f"look for Slurm nodes not responding every {every} s",
        after="slurmctld.service",
        summary=f"deletes Slurm nodes that have not responded for {after} s (checked every {every} s)",
    )


def users_part(head: bool) -> Part:
    """slurm.users on every node: the head takes users.conf from the channel (in CONF_DIR), publishes it on the shared
    /home and makes the homes; the login and GPU nodes create the users from the published copy."""
    every = int(data()["users"]["everySeconds"])
    env = (
        {"USERS_SOURCE": f"{CONF_DIR}/users.conf", "USERS_PUBLISH": USERS_PUBLISHED, "HOMES": "true"}
        if head
        else {"USERS_SOURCE": USERS_PUBLISHED, "HOMES": "false"}
    )
    return timer_part(
        USERS,
        "slurm_users.sh",
        env,
        every,
        does="create the Slurm users (slurm.users) with their uids",
        looks=f"look for new Slurm users every {every} s",
        after="network-online.target remote-fs.target",
        summary=f"creates the people of slurm.users with their uids (every {every} s)",
    )


LEAVE_UNIT = """[Unit]
Description=gpu-cluster: remove this dynamic node from Slurm at shutdown
Wants=network-online.target
After=network-online.target gpu-cluster-slurm-compute.service slurmd.service munge.service

[Service]
Type=oneshot
RemainAfterExit=yes
EnvironmentFile=/etc/gpu-cluster/slurm-compute.env
ExecStart=/bin/true
ExecStop=/usr/local/sbin/gpu-cluster-slurm-compute leave

[Install]
WantedBy=multi-user.target
"""


def compute_parts(
    layout: SlurmLayout,
    *,
    head_address: str,
    key_hook: str,
    key_hook_env: Mapping[str, str] | None = None,
    switch: str | None = None,
    node_name_hook: str | None = None,
    node_name_env: Mapping[str, str] | None = None,
) -> tuple[Part, ...]:
    """A GPU node: slurmd registering as a dynamic node (its GRES, memory, feature and switch), leaving at shutdown;
    with elastic partitions, slurmd as the CLOUD node `node_name_hook` names (the head powers it down)."""
    env = {**_client_env(layout, layout.packages.compute, head_address), "DYNAMIC_CONF": layout.dynamic_conf(switch)}
    if node_name_hook is not None:
        env.update({"NODE_NAME_HOOK": NODE_NAME_HOOK_PATH, **(node_name_env or {})})
        part = _role_part(
            "compute",
            env,
            description="gpu-cluster Slurm GPU node (slurmd -N <its CLOUD node name>, configless)",
            summary="starts slurmd as the elastic partition node the head launched it as",
            mounted=layout.shared_path is not None,
            key_hook=key_hook,
            key_hook_env=key_hook_env,
            extra_files=(
                File(HEALTH_PROGRAM, script("slurm_health.sh"), "0755"),
                File(NODE_NAME_HOOK_PATH, node_name_hook, "0755"),
            ),
        )
        return (
            *containers_part(layout, "slurmd", enroot=True),
            *mps_part(layout),
            part,
            *_node_users(layout),
            *jobmap_part(layout),
        )
    part = _role_part(
        "compute",
        env,
        description="gpu-cluster Slurm GPU node (slurmd -Z, configless)",
        summary=f"registers with slurmctld as a dynamic node ({layout.dynamic_conf(switch)})",
        mounted=layout.shared_path is not None,
        key_hook=key_hook,
        key_hook_env=key_hook_env,
        extra_files=(
            File(HEALTH_PROGRAM, script("slurm_health.sh"), "0755"),
            File("/etc/systemd/system/gpu-cluster-slurm-leave.service", LEAVE_UNIT),
        ),
    )
    leave = Part(
        "slurm-leave",
        commands=(("systemctl", "enable", "--now", "--no-block", "gpu-cluster-slurm-leave.service"),),
        summary="removes the node from Slurm at shutdown",
    )
    # the MPS programs before slurmd starts: its first job may need the Prolog
    return (
        *containers_part(layout, "slurmd", enroot=True),
        *mps_part(layout),
        part,
        leave,
        *_node_users(layout),
        *jobmap_part(layout),
    )


def _node_users(layout: SlurmLayout) -> tuple[Part, ...]:
    return (users_part(head=False),) if layout.users_conf is not None else ()


CONTAINERS = "slurm-containers"


def containers_part(layout: SlurmLayout, daemon: str, enroot: bool) -> tuple[Part, ...]:
    """slurm.containers pyxis: enroot (GPU nodes) and pyxis built against the node's Slurm, by a oneshot that `daemon`
    (slurmd, sackd) pulls in and waits for, so it starts with the plugin; no unit of the role's changes."""
    if layout.containers != "pyxis":
        return ()
    pyxis = data()["containers"]["pyxis"]
    pkg = layout.packages
    env = {
        "SLURM_VERSION": pkg.version,
        "SLURM_REPO": pkg.repo,
        "SLURM_KEY": pkg.key,
        "SLURM_PIN_ORIGIN": pkg.pin_origin,
        "SLURM_COMMON": COMMON_PATH,
        "ENROOT": "true" if enroot else "false",
        "ENROOT_VERSION": str(pyxis["enrootVersion"]),
        "ENROOT_URL": str(pyxis["enrootUrl"]),
        "PYXIS_REPO": str(pyxis["pyxisRepo"]),
        "PYXIS_VERSION": str(pyxis["pyxisVersion"]),
        "PLUGSTACK_DIR": str(pyxis["plugstackDir"]),
    }
    unit = (
        "[Unit]\n"
        f"Description=gpu-cluster: {'enroot and ' if enroot else ''}pyxis before {daemon}\n"
        "Wants=network-online.target\n"
        "After=network-online.target\n"
        f"Before={daemon}.service\n\n"
        "[Service]\n"
        "Type=oneshot\n"
        "RemainAfterExit=yes\n"
        "TimeoutStartSec=1800\n"
        f"EnvironmentFile=/etc/gpu-cluster/{CONTAINERS}.env\n"
        f"ExecStart=/usr/local/sbin/gpu-cluster-{CONTAINERS}\n\n"
        "[Install]\n"
        f"WantedBy={daemon}.service\n"
    )
    what = f"enroot {pyxis['enrootVersion']} and " if enroot else ""
    return (
        Part(
            CONTAINERS,
            files=(
                File(f"/usr/local/sbin/gpu-cluster-{CONTAINERS}", script("slurm_containers.sh"), "0755"),
                File(f"/etc/gpu-cluster/{CONTAINERS}.env", env_file(env)),
                File(f"/etc/systemd/system/gpu-cluster-{CONTAINERS}.service", unit),
            ),
            # enabled, not started: the daemon's start runs it, after the role's own packages
            commands=(("systemctl", "daemon-reload"), ("systemctl", "enable", f"gpu-cluster-{CONTAINERS}.service")),
            summary=f"{what}pyxis {pyxis['pyxisVersion']} (srun --container-image) before {daemon} starts",
        ),
    )


def login_parts(
    layout: SlurmLayout,
    *,
    head_address: str,
    key_hook: str,
    key_hook_env: Mapping[str, str] | None = None,
    mount: Mount | None = None,
) -> tuple[Part, ...]:
    """The login node: the client commands and sackd (configless), MUNGE, /home."""
    pkg = layout.packages
    part = _role_part(
        "login",
        _client_env(layout, pkg.login, head_address),
        description="gpu-cluster Slurm login node (sackd, client commands)",
        summary=f"sbatch/srun/sinfo {pkg.version}; sackd fetches the configuration from the head",
        mounted=mount is not None,
        key_hook=key_hook,
        key_hook_env=key_hook_env,
    )
    return (
        mounts_part(mount),
        *containers_part(layout, "sackd", enroot=False),
        part,
        nccl_test_part(),
        *_node_users(layout),
    )


NCCL_TEST = "/usr/local/bin/gpu-cluster-nccl-test"


def nccl_test_part() -> Part:
    """The login node's `gpu-cluster-nccl-test`: the first two-node job, the same on every cloud (catalog/slurm.yaml
    firstJob)."""
    job = data()["firstJob"]
    env = {
        "NCCL_TESTS_REPO": str(job["ncclTestsRepo"]),
        "NCCL_TESTS_TAG": str(job["ncclTestsTag"]),
        "PREBUILT": " ".join(job["prebuilt"]),
        "MPI_HOMES": " ".join(job["mpiHomes"]),
    }
    return Part(
        "nccl-test",
        files=(
            File(NCCL_TEST, script("slurm_nccl_test.sh"), "0755"),
            File("/etc/gpu-cluster/nccl-test.env", env_file(env)),
        ),
        summary=f"gpu-cluster-nccl-test: nccl-tests {job['ncclTestsTag']} all_reduce_perf on two GPU nodes",
    )


def cluster_parts(
    layout: SlurmLayout,
    *,
    key_hook: str,
    key_hook_env: Mapping[str, str] | None = None,
    conf_hook: str,
    conf_hook_env: Mapping[str, str] | None = None,
    mount: Mount | None = None,
    power: PowerHooks | None = None,
    dbd: DbdHook | None = None,
) -> tuple[tuple[Part, ...], tuple[Part, ...], tuple[Part, ...]]:
    """The head's, the login node's and the GPU nodes' parts, with one key hook; the login and GPU nodes reach the head
    at `HEAD_PLACEHOLDER`, which the cloud replaces with the head's private address at deploy."""
    head = head_parts(
        layout,
        key_hook=key_hook,
        key_hook_env=key_hook_env,
        conf_hook=conf_hook,
        conf_hook_env=conf_hook_env,
        mount=mount,
        power=power,
        dbd=dbd,
    )
    login = login_parts(
        layout, head_address=HEAD_PLACEHOLDER, key_hook=key_hook, key_hook_env=key_hook_env, mount=mount
    )
    compute = compute_parts(
        layout,
        head_address=HEAD_PLACEHOLDER,
        key_hook=key_hook,
        key_hook_env=key_hook_env,
        node_name_hook=power.node_name if layout.elastic and power is not None else None,
        node_name_env=power.node_name_env if layout.elastic and power is not None else None,
    )
    return head, login, compute
