#!/bin/bash
# gpu-cluster Slurm head node: the compute-side configuration (nodes.conf, topology.yaml) from the cloud's in-place
# channel into CONF_DIR, and `scontrol reconfigure` when it changed. A change of the GPU nodes (nodes, maxNodes, the
# instance type, placement) changes only that channel, never the head's user data: slurmctld re-reads the files and
# the GPU and login nodes fetch them from it (configless); running jobs go on.
#
# Run by gpu-cluster-slurm-conf.timer, and once by slurm_head.sh before slurmctld starts (`--install`: no reconfigure).
# Settings (/etc/gpu-cluster/slurm-conf.env):
#   CONF_HOOK   the cloud's script printing the configuration text on stdout (components/bootstrap/<cloud>_slurm_conf.sh)
#   CONF_DIR    where slurmctld reads its files (/etc/slurm)
#   APPLIED     the text last applied (to compare with)
# The text: each file after a line "# gpu-cluster file: <name>" (components/bootstrap/slurm_conf.py FILE_HEADER).
set -uo pipefail

ENV_FILE="${ENV_FILE:-/etc/gpu-cluster/slurm-conf.env}"
# shellcheck source=/dev/null
[ -r "$ENV_FILE" ] && . "$ENV_FILE"
CONF_HOOK="${CONF_HOOK:-/usr/local/sbin/gpu-cluster-slurm-conf-fetch}"
CONF_DIR="${CONF_DIR:-/etc/slurm}"
APPLIED="${APPLIED:-/var/lib/gpu-cluster/slurm-compute.conf}"
HEADER="# gpu-cluster file: "

log() { echo "gpu-cluster-slurm-conf: $*" >&2; }

# split TEXT_FILE DIR: every file of the text into DIR; a name that is not a plain file name is refused
split_files() {
  local line name="" count=0
  while IFS= read -r line || [ -n "$line" ]; do
    if [ "${line#"$HEADER"}" != "$line" ]; then
      name="${line#"$HEADER"}"
      case "$name" in
        "" | . | .. | *[!A-Za-z0-9._-]*) log "refused file name '${name}'"; return 1 ;;
      esac
      : >"$2/$name" || return 1
      count=$((count + 1))
    elif [ -n "$name" ]; then
      printf '%s\n' "$line" >>"$2/$name" || return 1
    else
      log "text before the first file header"; return 1
    fi
  done <"$1"
  [ "$count" -gt 0 ] || { log "no file in the configuration text"; return 1; }
}

main() {
  local boot=false tmp file
  [ "${1:-}" = --install ] && boot=true
  # before slurmctld runs, slurm_head.sh installs the files itself (--install)
  $boot || systemctl is-active --quiet slurmctld || return 0
  tmp=$(mktemp -d) || return 1
  trap 'rm -rf "$tmp"' RETURN
  if ! "$CONF_HOOK" >"$tmp/text" || ! [ -s "$tmp/text" ]; then
    log "no configuration from ${CONF_HOOK}"
    return 1
  fi
  if [ -f "$APPLIED" ] && cmp -s "$tmp/text" "$APPLIED" && ! $boot; then
    return 0
  fi
  mkdir "$tmp/files" && split_files "$tmp/text" "$tmp/files" || return 1
  mkdir -p "$CONF_DIR" "$(dirname "$APPLIED")"
  for file in "$tmp/files"/*; do
    install -m 0644 "$file" "${CONF_DIR}/$(basename "$file").new" && mv -f "${CONF_DIR}/$(basename "$file").new" \
      "${CONF_DIR}/$(basename "$file")" || return 1
  done
  if ! $boot; then
    # slurmctld re-reads slurm.conf and what it includes; slurmd and sackd get the new files from it
    scontrol reconfigure || { log "scontrol reconfigure failed: the new files stay for the next try"; return 1; }
    log "reconfigured: $(tr '\n' ' ' <"$tmp/files/nodes.conf" | grep -o 'MaxNodeCount=[0-9]*' || true)"
  fi
  cp "$tmp/text" "$APPLIED"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  main "$@"
fi
