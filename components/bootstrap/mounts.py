"""The mounts part: the shared filesystem (`storage.shared`) on every node, at every boot.

A oneshot unit runs `mounts.sh`: it installs the client the service documents, writes a systemd mount
unit (the mount survives reboots) and mounts with the service's options, retrying until the filesystem
answers. The mount source of a filesystem the stack creates is known only at deploy: the layout renders
`SOURCE_PLACEHOLDER` and the cloud's nodes module substitutes the filesystem's output for it.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import Part, oneshot_unit, script, service_part

SOURCE_PLACEHOLDER = "@@GPU_CLUSTER_SHARED_SOURCE@@"
RESULT_PATH = "/var/lib/gpu-cluster/mounts.json"


@dataclass(frozen=True)
class Mount:
    path: str
    source: str  # the mount source, or SOURCE_PLACEHOLDER until deploy
    fstype: str  # lustre | nfs | nfs4
    options: str
    client: str  # fsx-lustre-apt | amlfs-apt | gcp-lustre-apt | apt | none (mounts.sh)
    packages: str = ""
    repo: str = ""
    key: str = ""

    def env(self) -> dict[str, str]:
        return {
            "MOUNT_PATH": self.path,
            "MOUNT_SOURCE": self.source,
            "MOUNT_FSTYPE": self.fstype,
            "MOUNT_OPTIONS": self.options,
            "CLIENT": self.client,
            "CLIENT_PACKAGES": self.packages,
            "CLIENT_REPO": self.repo,
            "CLIENT_KEY": self.key,
            "RESULT": RESULT_PATH,
        }


def mounts_script() -> str:
    return script("mounts.sh")


UNIT = oneshot_unit(
    "gpu-cluster shared filesystem (client install, mount, retry until it answers)",
    name="mounts",
    wants=["network-online.target"],
    after=["network-online.target", "gpu-cluster-scratch.service"],
    before=["gpu-cluster-health.service"],
)


def mounts_part(mount: Mount | None) -> Part:
    if mount is None:
        return Part("mounts")
    return service_part(
        "mounts",
        script_text=mounts_script(),
        env=mount.env(),
        unit=UNIT,
        no_block=True,  # a filesystem still creating must not hold the boot
        summary=f"mounts the shared {mount.fstype} filesystem at {mount.path} ({RESULT_PATH}).",
    )
