# shellcheck shell=bash
# gpu-cluster Slurm: what the head, GPU and login parts share (sourced by slurm_head.sh, slurm_compute.sh,
# slurm_login.sh). Settings come from the part's environment file (/etc/gpu-cluster/slurm-<role>.env):
#   SLURM_VERSION SLURM_REPO SLURM_KEY SLURM_PIN_ORIGIN  the slurm-smd repository and the upstream version
#   SLURM_PACKAGES   the role's slurm-smd packages; OS_PACKAGES what Ubuntu gives (munge, NFS)
#   SLURM_UID        SlurmUser's uid on every node
#   MUNGE_KEY_HOOK   the cloud's script printing the MUNGE key (base64) on stdout
#   SHARED_PATH      storage.shared's mount point (empty: the head exports /home over NFS)
#   HEAD_ADDRESS     the head's private address (compute and login)
# The MUNGE key goes from the hook straight into /etc/munge/munge.key: never into a variable, a log or argv.

APT_LIST="${APT_LIST:-/etc/apt/sources.list.d/gpu-cluster-slurm.list}"
APT_PIN="${APT_PIN:-/etc/apt/preferences.d/gpu-cluster-slurm}"
APT_KEYRING="${APT_KEYRING:-/usr/share/keyrings/microsoft-slurm.gpg}"
MUNGE_KEY="${MUNGE_KEY:-/etc/munge/munge.key}"
LOG_DIR="${LOG_DIR:-/var/log/slurm}"
HOME_DIR="${HOME_DIR:-/home}"
ATTEMPTS="${ATTEMPTS:-30}"
RETRY_SECONDS="${RETRY_SECONDS:-10}"
export DEBIAN_FRONTEND=noninteractive

log() { echo "gpu-cluster-slurm: $*" >&2; }

retry() {
  local attempt
  for attempt in $(seq 1 "$ATTEMPTS"); do
    "$@" && return 0
    log "$1 failed (attempt ${attempt} of ${ATTEMPTS})"
    [ "$attempt" -lt "$ATTEMPTS" ] && sleep "$RETRY_SECONDS"
  done
  return 1
}

# SlurmUser with the same uid everywhere, before a package could create it with another
ensure_slurm_user() {
  getent passwd slurm >/dev/null 2>&1 && return 0
  groupadd --system --gid "$SLURM_UID" slurm 2>/dev/null || true
  useradd --system --uid "$SLURM_UID" --gid "$SLURM_UID" --home-dir /var/lib/slurm --shell /usr/sbin/nologin slurm
}

# The newest Debian revision of SLURM_VERSION the repository lists (25.11.5 -> 25.11.5-1)
slurm_debian_version() {
  apt-cache madison slurm-smd 2>/dev/null | awk -v v="$SLURM_VERSION" '{ gsub(/ /, "", $3) } index($3, v "-") == 1 { print $3; exit }'
}

add_slurm_repo() {
  [ -s "$APT_KEYRING" ] || curl -fsSL "$SLURM_KEY" | gpg --dearmor --yes -o "$APT_KEYRING" || return 1
  printf '%s\n' "$SLURM_REPO" >"$APT_LIST"
  # slurm-smd* from this repository only, never Ubuntu's slurm-wlm
  printf 'Package: slurm-smd*\nPin: origin "%s"\nPin-Priority: 990\n' "$SLURM_PIN_ORIGIN" >"$APT_PIN"
  apt-get update -q
}

install_packages() {
  local version pkg args=()
  # shellcheck disable=SC2086 # word lists
  if [ -n "${OS_PACKAGES:-}" ]; then retry apt-get install -y -q $OS_PACKAGES || return 1; fi
  [ -n "${SLURM_PACKAGES:-}" ] || return 0
  retry add_slurm_repo || return 1
  version=$(slurm_debian_version)
  if [ -z "$version" ]; then
    log "slurm-smd ${SLURM_VERSION} is not in ${SLURM_REPO}"
    return 1
  fi
  for pkg in $SLURM_PACKAGES; do args+=("${pkg}=${version}"); done
  retry apt-get install -y -q "${args[@]}" || return 1
  # shellcheck disable=SC2086
  apt-mark hold $SLURM_PACKAGES >/dev/null
  log "installed ${SLURM_PACKAGES} ${version}"
}

# The cluster's MUNGE key from the cloud's secret store (the hook), 0400 munge:munge
install_munge_key() {
  local tmp
  tmp=$(mktemp "${MUNGE_KEY}.XXXXXX") || return 1
  if ! retry fetch_key "$tmp"; then
    rm -f "$tmp"
    log "no MUNGE key from ${MUNGE_KEY_HOOK}"
    return 1
  fi
  chown munge:munge "$tmp" && chmod 0400 "$tmp" && mv -f "$tmp" "$MUNGE_KEY"
}

fetch_key() {
  # base64 in, raw key out, straight to the file; a short answer is an error, not a key
  "$MUNGE_KEY_HOOK" 2>/dev/null | base64 -d >"$1" 2>/dev/null || return 1
  [ "$(wc -c <"$1")" -ge 32 ]
}

start_munge() {
  systemctl enable munge >/dev/null 2>&1 || true
  systemctl restart munge
}

# /home from storage.shared (bind mount) or from the head's NFS export
mount_home() {
  if [ -n "${SHARED_PATH:-}" ]; then
    retry mountpoint -q "$SHARED_PATH" || return 1
    mkdir -p "${SHARED_PATH}/home"
    mountpoint -q "$HOME_DIR" && return 0
    # the first node to get there seeds it with the image's home directories (the admin user's keys)
    [ -n "$(ls -A "${SHARED_PATH}/home")" ] || cp -a "$HOME_DIR"/. "${SHARED_PATH}/home/"
    mount --bind "${SHARED_PATH}/home" "$HOME_DIR"
    return
  fi
  [ -n "${HEAD_ADDRESS:-}" ] || return 0  # the head itself
  mountpoint -q "$HOME_DIR" && return 0
  retry mount -t nfs4 -o rw,hard,_netdev "${HEAD_ADDRESS}:/home" "$HOME_DIR"
}
