#!/bin/bash
# gpu-cluster Slurm GPU node: slurmd as a dynamic node (slurmd -Z) of the configless head.
# Runs at every boot (systemd unit); `leave` (at shutdown) removes the node from Slurm. Settings: slurm_common.sh, plus
#   SLURMCTLD_PORT    the head's port (6817)
#   DYNAMIC_CONF      what the node registers with: Feature, Gres, RealMemory, Topology
#   NODE_NAME_HOOK    elastic partitions: the cloud's script printing this node's Slurm name (the head's resume program
#                     launched it as that State=CLOUD node); then slurmd -N <name>, defined in nodes.conf, not -Z
#   DROPIN            the slurmd unit override (default /etc/systemd/system/slurmd.service.d/gpu-cluster.conf)
set -uo pipefail
# shellcheck source-path=SCRIPTDIR source=slurm_common.sh
. "${SLURM_COMMON:-/usr/local/lib/gpu-cluster/slurm_common.sh}"

DROPIN="${DROPIN:-/etc/systemd/system/slurmd.service.d/gpu-cluster.conf}"
SPOOL_DIR="${SPOOL_DIR:-/var/spool/slurmd}"

if [ "${1:-}" = leave ] && [ -n "${NODE_NAME_HOOK:-}" ]; then
  exit 0 # a CLOUD node stays in the partition: slurmctld powers it down
fi
if [ "${1:-}" = leave ]; then
  # a terminated node leaves the cluster instead of lingering DOWN (only an idle dynamic node can be deleted)
  scontrol delete nodename="$(hostname -s)" && log "left the cluster"
  exit 0
fi

write_dropin() {
  local slurmd name
  slurmd=$(command -v slurmd || echo /usr/sbin/slurmd)
  mkdir -p "$(dirname "$DROPIN")"
  if [ -n "${NODE_NAME_HOOK:-}" ]; then
    name=$(retry "$NODE_NAME_HOOK")
    if [ -z "$name" ]; then
      log "no Slurm node name from ${NODE_NAME_HOOK}"
      return 1
    fi
    printf '[Service]\nExecStart=\nExecStart=%s --systemd -N %s --conf-server %s:%s\n' \
      "$slurmd" "$name" "$HEAD_ADDRESS" "$SLURMCTLD_PORT" >"$DROPIN"
    DYNAMIC_CONF="node ${name}"
  else
    printf '[Service]\nExecStart=\nExecStart=%s --systemd -Z --conf-server %s:%s --conf "%s"\n' \
      "$slurmd" "$HEAD_ADDRESS" "$SLURMCTLD_PORT" "$DYNAMIC_CONF" >"$DROPIN"
  fi
  systemctl daemon-reload
}

# shellcheck source=slurm_node_setup.sh
. "${BASH_SOURCE[0]%/*}/slurm_node_setup.sh"
mkdir -p "$LOG_DIR" "$SPOOL_DIR"
write_dropin || exit 1
systemctl enable slurmd >/dev/null 2>&1 || true
# retried: the head may still be installing when a GPU node is up
retry systemctl restart slurmd || exit 1
log "slurmd registered with ${HEAD_ADDRESS}:${SLURMCTLD_PORT} (${DYNAMIC_CONF})"
