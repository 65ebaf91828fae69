#!/bin/bash
# gpu-cluster shared filesystem mount: install the client the service documents (Lustre or NFS), write
# a systemd mount unit (so the mount survives reboots and orders after the network), and mount, retrying
# until the filesystem answers (a new filesystem may still be creating when the first nodes boot).
# Runs at every boot (systemd oneshot); idempotent: an existing mount is left as it is.
#
# Settings come from the environment (written by the bootstrap to /etc/gpu-cluster/mounts.env):
#   MOUNT_PATH       where every node mounts it (storage.shared.path)
#   MOUNT_SOURCE     what to mount: HOST@tcp:/NAME (Lustre) or HOST:/EXPORT (NFS)
#   MOUNT_FSTYPE     lustre | nfs | nfs4
#   MOUNT_OPTIONS    the service's documented options
#   CLIENT           fsx-lustre-apt | amlfs-apt | gcp-lustre-apt | apt | none: how the client is installed
#   CLIENT_PACKAGES  packages to install (may name the running kernel as $(uname -r): expanded here);
#                    empty with amlfs-apt: the newest amlfs-lustre-client metapackage for the running kernel
#   CLIENT_REPO      the apt repository of the Lustre client (fsx-lustre-apt, amlfs-apt, gcp-lustre-apt): URL, or
#                    "URL SUITE"; {codename} stands for the release's codename
#   CLIENT_KEY       the URL of that repository's signing key
#   WAIT_SECONDS     how long to retry the mount before giving up (the next boot tries again)
set -euo pipefail

MOUNT_PATH="${MOUNT_PATH:?MOUNT_PATH is required}"
MOUNT_SOURCE="${MOUNT_SOURCE:?MOUNT_SOURCE is required}"
MOUNT_FSTYPE="${MOUNT_FSTYPE:-nfs4}"
MOUNT_OPTIONS="${MOUNT_OPTIONS:-defaults}"
CLIENT="${CLIENT:-none}"
CLIENT_PACKAGES="${CLIENT_PACKAGES:-}"
CLIENT_REPO="${CLIENT_REPO:-}"
CLIENT_KEY="${CLIENT_KEY:-}"
WAIT_SECONDS="${WAIT_SECONDS:-900}"
UNIT_DIR="${UNIT_DIR:-/etc/systemd/system}"
KEYRING_DIR="${KEYRING_DIR:-/usr/share/keyrings}"
APT_SOURCES="${APT_SOURCES:-/etc/apt/sources.list.d}"
RESULT="${RESULT:-/var/lib/gpu-cluster/mounts.json}"

log() { echo "gpu-cluster-mounts: $*" >&2; }

result() {
  mkdir -p "$(dirname "$RESULT")"
  printf '{"path": "%s", "source": "%s", "mounted": %s}\n' "$MOUNT_PATH" "$MOUNT_SOURCE" "$1" >"$RESULT"
}

client_installed() {
  case "$MOUNT_FSTYPE" in
    lustre) command -v mount.lustre >/dev/null 2>&1 && modinfo lustre >/dev/null 2>&1 ;;
    *) command -v mount.nfs >/dev/null 2>&1 ;;
  esac
}

packages() {
  # `$(uname -r)` in the settings names the running kernel: Lustre modules must match it exactly
  local kernel
  kernel=$(uname -r)
  echo "${CLIENT_PACKAGES//\$(uname -r)/$kernel}"
}

add_apt_repo() {
  local name=$1 codename keyring
  codename=$(sed -n 's/^VERSION_CODENAME=//p' "${OS_RELEASE:-/etc/os-release}" | tr -d '"')
  keyring="$KEYRING_DIR/$name.gpg"
  mkdir -p "$KEYRING_DIR" "$APT_SOURCES"
  curl -fsSL --retry 5 "$CLIENT_KEY" | gpg --dearmor --yes -o "$keyring"
  # a repository per release names it as {codename} (packages.microsoft.com/repos/amlfs-jammy); "URL SUITE"
  # names its own suite (us-apt.pkg.dev/projects/lustre-client-binaries lustre-client-ubuntu-jammy)
  local repo=${CLIENT_REPO//\{codename\}/$codename}
  case "$repo" in
    *" "*) echo "deb [signed-by=$keyring] $repo main" >"$APT_SOURCES/$name.list" ;;
    *) echo "deb [signed-by=$keyring] $repo $codename main" >"$APT_SOURCES/$name.list" ;;
  esac
}

newest_amlfs_client() {
  # amlfs-lustre-client-VERSION=KERNEL: the metapackage that keeps Lustre in lockstep with the kernel
  apt-cache pkgnames amlfs-lustre-client- 2>/dev/null | sort -V | tail -n 1
}

install_client() {
  local -a pkgs
  client_installed && return 0
  case "$CLIENT" in
    none) log "no client to install; $MOUNT_FSTYPE must already be there" ; return 0 ;;
    fsx-lustre-apt) add_apt_repo fsxlustreclientrepo ;;
    amlfs-apt) add_apt_repo amlfs ;;
    gcp-lustre-apt) add_apt_repo gcp-lustre-client ;;
    apt) ;;
    *) log "unknown CLIENT $CLIENT" ; return 1 ;;
  esac
  DEBIAN_FRONTEND=noninteractive apt-get update -q
  if [ "$CLIENT" = amlfs-apt ] && [ -z "$CLIENT_PACKAGES" ]; then
    CLIENT_PACKAGES="$(newest_amlfs_client)=\$(uname -r)"
  fi
  read -r -a pkgs <<<"$(packages)"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${pkgs[@]}"
  if [ "$MOUNT_FSTYPE" = lustre ]; then modprobe lustre; fi
}

write_unit() {
  local unit=$1
  cat >"$UNIT_DIR/$unit" <<EOF
[Unit]
Description=gpu-cluster shared filesystem at $MOUNT_PATH
Wants=network-online.target
After=network-online.target

[Mount]
What=$MOUNT_SOURCE
Where=$MOUNT_PATH
Type=$MOUNT_FSTYPE
Options=$MOUNT_OPTIONS,_netdev
TimeoutSec=120

[Install]
WantedBy=remote-fs.target
EOF
}

if mountpoint -q "$MOUNT_PATH"; then
  log "$MOUNT_PATH already mounted"
  result true
  exit 0
fi
result false
install_client
mkdir -p "$MOUNT_PATH"
unit=$(systemd-escape -p --suffix=mount "$MOUNT_PATH")
write_unit "$unit"
systemctl daemon-reload
systemctl enable "$unit" >/dev/null 2>&1 || log "could not enable $unit"

delay=5
deadline=$((SECONDS + WAIT_SECONDS))
until mount -t "$MOUNT_FSTYPE" -o "$MOUNT_OPTIONS" "$MOUNT_SOURCE" "$MOUNT_PATH"; do
  if [ "$SECONDS" -ge "$deadline" ]; then
    log "$MOUNT_SOURCE did not answer within ${WAIT_SECONDS}s; the next boot tries again"
    exit 1
  fi
  log "$MOUNT_SOURCE not answering yet: retrying in ${delay}s"
  sleep "$delay"
  delay=$((delay < 60 ? delay * 2 : 60))
done
result true
log "mounted $MOUNT_SOURCE at $MOUNT_PATH ($MOUNT_FSTYPE, $MOUNT_OPTIONS)"
