#!/bin/bash
# gpu-cluster Slurm: the people who submit jobs (slurm.users), the same Linux user and uid on every node. A timer runs
# it every minute on the head, the login node and the GPU nodes, so adding a user changes no node's user data.
#   the head:  reads USERS_SOURCE (users.conf from the cloud's channel, in /etc/slurm), publishes it to USERS_PUBLISH
#              on the shared /home, and (HOMES=true) creates each home with its ~/.ssh/authorized_keys
#   the others: read USERS_SOURCE = the published copy on /home
# A line of users.conf: "<name> <uid> <sudo: true|false> <OpenSSH public key, base64, or ->". A user no longer listed
# is locked (its files stay); one listed again is unlocked. Sudo rights go to /etc/sudoers.d/gpu-cluster-users,
# checked with visudo before it is installed. Settings (/etc/gpu-cluster/slurm-users.env):
#   USERS_SOURCE USERS_PUBLISH HOMES HOME_DIR (default /home) SUDOERS STATE (the names applied last)
set -uo pipefail

ENV_FILE="${ENV_FILE:-/etc/gpu-cluster/slurm-users.env}"
# shellcheck source=/dev/null
[ -r "$ENV_FILE" ] && . "$ENV_FILE"
USERS_SOURCE="${USERS_SOURCE:-/home/.gpu-cluster/users.conf}"
USERS_PUBLISH="${USERS_PUBLISH:-}"
HOMES="${HOMES:-false}"
HOME_DIR="${HOME_DIR:-/home}"
SUDOERS="${SUDOERS:-/etc/sudoers.d/gpu-cluster-users}"
STATE="${STATE:-/var/lib/gpu-cluster/slurm-users}"

log() { echo "gpu-cluster-slurm-users: $*" >&2; }

# ensure_user NAME UID: the group and the user with exactly that id (a clash is reported, never forced)
ensure_user() {
  local name="$1" uid="$2" have
  if have=$(id -u "$name" 2>/dev/null); then
    [ "$have" = "$uid" ] || { log "${name} exists with uid ${have}, not ${uid}: left as it is"; return 1; }
    usermod -U -e '' "$name" >/dev/null 2>&1 || true
    return 0
  fi
  if getent group "$name" >/dev/null 2>&1; then
    [ "$(getent group "$name" | cut -d: -f3)" = "$uid" ] || { log "group ${name} has another gid"; return 1; }
  else
    groupadd --gid "$uid" "$name" || return 1
  fi
  useradd --uid "$uid" --gid "$uid" --no-create-home --home-dir "${HOME_DIR}/${name}" --shell /bin/bash "$name" \
    && log "created ${name} (uid ${uid})"
}

# ensure_home NAME UID KEY_B64: the home (once) and its authorized_keys (every run, as listed)
ensure_home() {
  local name="$1" uid="$2" key="$3" home="${HOME_DIR}/$1"
  if [ ! -d "$home" ]; then
    mkdir -p "$home" && cp -a /etc/skel/. "$home/" 2>/dev/null
    chown -R "$uid:$uid" "$home" && chmod 0700 "$home" || return 1
  fi
  [ "$key" = "-" ] && return 0
  install -d -m 0700 -o "$uid" -g "$uid" "$home/.ssh" || return 1
  printf '%s\n' "$key" | base64 -d >"$home/.ssh/authorized_keys.new" && printf '\n' >>"$home/.ssh/authorized_keys.new" \
    && chown "$uid:$uid" "$home/.ssh/authorized_keys.new" && chmod 0600 "$home/.ssh/authorized_keys.new" \
    && mv -f "$home/.ssh/authorized_keys.new" "$home/.ssh/authorized_keys"
}

main() {
  local name uid sudo key status=0 listed="" sudoers
  [ -r "$USERS_SOURCE" ] || { log "no ${USERS_SOURCE} yet"; return 0; }
  if [ -n "$USERS_PUBLISH" ]; then
    mkdir -p "$(dirname "$USERS_PUBLISH")" && install -m 0644 "$USERS_SOURCE" "${USERS_PUBLISH}.new" \
      && mv -f "${USERS_PUBLISH}.new" "$USERS_PUBLISH" || status=1
  fi
  sudoers=$(mktemp) || return 1
  while read -r name uid sudo key; do
    [ -n "${name:-}" ] || continue
    case "$name" in *[!a-z0-9_-]*) log "refused user name '${name}'"; status=1; continue ;; esac
    case "$uid" in "" | *[!0-9]*) log "refused uid '${uid}' for ${name}"; status=1; continue ;; esac
    listed="${listed} ${name}"
    ensure_user "$name" "$uid" || { status=1; continue; }
    if [ "$HOMES" = true ]; then ensure_home "$name" "$uid" "${key:--}" || status=1; fi
    [ "$sudo" = true ] && printf '%s ALL=(ALL) NOPASSWD:ALL\n' "$name" >>"$sudoers"
  done <"$USERS_SOURCE"
  if visudo -cqf "$sudoers"; then
    install -m 0440 "$sudoers" "$SUDOERS" || status=1
  else
    log "sudoers refused by visudo: the previous one stays"
    status=1
  fi
  rm -f "$sudoers"
  # a user dropped from the list is locked, not deleted: its files and jobs' output stay
  mkdir -p "$(dirname "$STATE")" && touch "$STATE"
  while read -r name; do
    [ -n "$name" ] || continue
    case " ${listed} " in *" ${name} "*) ;; *) usermod -L -e 1 "$name" >/dev/null 2>&1 && log "locked ${name}" ;; esac
  done <"$STATE"
  printf '%s\n' "${listed# }" | tr ' ' '\n' >"$STATE"
  return "$status"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  main "$@"
fi
