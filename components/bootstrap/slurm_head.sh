#!/bin/bash
# gpu-cluster Slurm head node: slurmctld (configless) and, without storage.shared, the NFS export of /home.
# Runs at every boot (systemd unit). Settings: slurm_common.sh, plus
#   CONF_SOURCE   where the rendered slurm.conf, gres.conf, cgroup.conf, topology.yaml are (default /etc/gpu-cluster/slurm)
#   CONF_DIR      where slurmctld reads them (default /etc/slurm)
#   STATE_DIR     StateSaveLocation; EXPORT_CIDR who may mount /home (the cluster network)
#   CONF_SYNC     the compute-side files' fetcher (slurm_conf_sync.sh): nodes.conf is not in CONF_SOURCE
set -uo pipefail
# shellcheck source-path=SCRIPTDIR source=slurm_common.sh
. "${SLURM_COMMON:-/usr/local/lib/gpu-cluster/slurm_common.sh}"

CONF_SOURCE="${CONF_SOURCE:-/etc/gpu-cluster/slurm}"
CONF_DIR="${CONF_DIR:-/etc/slurm}"
STATE_DIR="${STATE_DIR:-/var/spool/slurmctld}"
EXPORTS="${EXPORTS:-/etc/exports.d/gpu-cluster.exports}"
TOKEN="@@GPU_CLUSTER_SLURMCTLD_HOST@@"

# SlurmctldHost must name this host: its short hostname and its address, known only here
controller_host() {
  local name address
  name=$(hostname -s)
  address=$(hostname -I | awk '{ print $1 }')
  printf '%s(%s)' "$name" "$address"
}

write_confs() {
  local host file
  host=$(controller_host)
  mkdir -p "$CONF_DIR"
  for file in "$CONF_SOURCE"/*; do
    [ -f "$file" ] || continue
    sed "s|${TOKEN}|${host}|g" "$file" >"${CONF_DIR}/$(basename "$file")"
  done
  log "slurm.conf: SlurmctldHost=${host}"
}

export_home() {
  mkdir -p "$(dirname "$EXPORTS")"
  printf '/home %s(rw,sync,no_subtree_check)\n' "$EXPORT_CIDR" >"$EXPORTS"
  systemctl enable --now nfs-server >/dev/null 2>&1 || systemctl restart nfs-server
  exportfs -ra
}

# shellcheck source=slurm_node_setup.sh
. "${BASH_SOURCE[0]%/*}/slurm_node_setup.sh"
[ -n "${SHARED_PATH:-}" ] || export_home || exit 1
write_confs
# nodes.conf (slurm.conf includes it) from the cloud's channel: slurmctld cannot start without it
retry "${CONF_SYNC:-/usr/local/sbin/gpu-cluster-slurm-conf}" --install || exit 1
mkdir -p "$STATE_DIR" "$LOG_DIR"
chown slurm:slurm "$STATE_DIR" "$LOG_DIR"
systemctl enable slurmctld >/dev/null 2>&1 || true
systemctl restart slurmctld || exit 1
log "slurmctld started"
