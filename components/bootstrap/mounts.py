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
    fstype: str  # lustre | nfs | nfs4 | aznfs
    options: str
    client: str  # fsx-lustre-apt | amlfs-apt | gcp-lustre-apt | ms-config-apt | apt | none (mounts.sh)
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


# Where the AZNFS fragment (mounts_aznfs.sh) goes: its functions before the first of mounts.sh's own helpers that
# follow `packages`, its client in the install's case and its mount helper in the installed-client check.
_AZNFS_BEFORE = "newest_amlfs_client() {\n"
_AZNFS_CASE = ("    apt) ;;\n", "    ms-config-apt) add_ms_config_repo ;;\n    apt) ;;\n")
_AZNFS_INSTALLED = (
    "    *) command -v mount.nfs >/dev/null 2>&1 ;;\n",
    "    aznfs) command -v mount.aznfs >/dev/null 2>&1 ;;\n    *) command -v mount.nfs >/dev/null 2>&1 ;;\n",
)


def mounts_script(client: str = "") -> str:
    """mounts.sh; for the AZNFS client (`ms-config-apt`), with mounts_aznfs.sh spliced in. For every other client,
    byte for byte the script nodes had before: no deployed node's user data changes for it."""
    text = script("mounts.sh")
    if client != "ms-config-apt":
        return text
    anchors = (_AZNFS_BEFORE, _AZNFS_CASE[0], _AZNFS_INSTALLED[0])
    assert all(text.count(a) == 1 for a in anchors), "mounts.sh anchors moved"
    fragment = script("mounts_aznfs.sh").replace("# shellcheck shell=bash\n", "", 1)
    text = text.replace(_AZNFS_BEFORE, fragment + _AZNFS_BEFORE, 1)
    return text.replace(*_AZNFS_CASE, 1).replace(*_AZNFS_INSTALLED, 1)


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
        script_text=mounts_script(mount.client),
        env=mount.env(),
        unit=UNIT,
        no_block=True,  # a filesystem still creating must not hold the boot
        summary=f"mounts the shared {mount.fstype} filesystem at {mount.path} ({RESULT_PATH}).",
    )
