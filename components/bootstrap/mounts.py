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
    client: str  # fsx-lustre-apt | amlfs-apt | gcp-lustre-apt | ms-config-apt | efs-stunnel-apt | apt | none
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


# Where a client fragment's functions go: before the first of mounts.sh's own helpers that follow `packages`. The
# AZNFS fragment (mounts_aznfs.sh) adds its client in the install's case and its mount helper in the installed-client
# check.
_FRAGMENT_BEFORE = "newest_amlfs_client() {\n"
_AZNFS_CASE = ("    apt) ;;\n", "    ms-config-apt) add_ms_config_repo ;;\n    apt) ;;\n")
_AZNFS_INSTALLED = (
    "    *) command -v mount.nfs >/dev/null 2>&1 ;;\n",
    "    aznfs) command -v mount.aznfs >/dev/null 2>&1 ;;\n    *) command -v mount.nfs >/dev/null 2>&1 ;;\n",
)


# Where the EFS TLS fragment (mounts_efs_tls.sh) goes: its functions at the same place; its client in the install's
# case; stunnel4 in the installed-client check; the tunnel started before the mount unit is written, and that unit
# requiring it (and ordered after it).
_EFS_TLS_CASE = ("    apt) ;;\n", "    efs-stunnel-apt) ;;\n    apt) ;;\n")
_EFS_TLS_INSTALLED = (
    "client_installed() {\n",
    "client_installed() {\n  command -v stunnel4 >/dev/null 2>&1 || return 1\n",
)
_EFS_TLS_START = ("install_client\nmkdir -p", "install_client\nstart_tunnel\nmkdir -p")
_EFS_TLS_UNIT = (
    "After=network-online.target\n\n[Mount]\n",
    "After=network-online.target $TLS_SERVICE\nRequires=$TLS_SERVICE\n\n[Mount]\n",
)


def _splice(text: str, fragment: str, *edits: tuple[str, str]) -> str:
    anchors = (_FRAGMENT_BEFORE, *(old for old, _new in edits))
    assert all(text.count(a) == 1 for a in anchors), "mounts.sh anchors moved"
    text = text.replace(
        _FRAGMENT_BEFORE, script(fragment).replace("# shellcheck shell=bash\n", "", 1) + _FRAGMENT_BEFORE, 1
    )
    for old, new in edits:
        text = text.replace(old, new, 1)
    return text


def mounts_script(client: str = "") -> str:
    """mounts.sh; for the AZNFS client (`ms-config-apt`) with mounts_aznfs.sh spliced in, for EFS over TLS
    (`efs-stunnel-apt`) with mounts_efs_tls.sh. For every other client, byte for byte the script nodes had before:
    no deployed node's user data changes for it."""
    text = script("mounts.sh")
    if client == "ms-config-apt":
        return _splice(text, "mounts_aznfs.sh", _AZNFS_CASE, _AZNFS_INSTALLED)
    if client == "efs-stunnel-apt":
        return _splice(text, "mounts_efs_tls.sh", _EFS_TLS_CASE, _EFS_TLS_INSTALLED, _EFS_TLS_START, _EFS_TLS_UNIT)
    return text


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
