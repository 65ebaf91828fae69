#!/bin/bash
# gpu-cluster Slurm login node: the client commands (sbatch, srun, sinfo) and sackd, which fetches the configless
# configuration from the head at start (--disable-reconfig: restart gpu-cluster-slurm-login after a config change).
# Runs at every boot (systemd unit). Settings: slurm_common.sh, plus SLURMCTLD_PORT and
#   DROPIN  the sackd unit override (default /etc/systemd/system/sackd.service.d/gpu-cluster.conf)
set -uo pipefail
# shellcheck source-path=SCRIPTDIR source=slurm_common.sh
. "${SLURM_COMMON:-/usr/local/lib/gpu-cluster/slurm_common.sh}"

DROPIN="${DROPIN:-/etc/systemd/system/sackd.service.d/gpu-cluster.conf}"

write_dropin() {
  local sackd
  sackd=$(command -v sackd || echo /usr/sbin/sackd)
  mkdir -p "$(dirname "$DROPIN")"
  printf '[Service]\nExecStart=\nExecStart=%s --systemd --conf-server %s:%s --disable-reconfig\n' \
    "$sackd" "$HEAD_ADDRESS" "$SLURMCTLD_PORT" >"$DROPIN"
  systemctl daemon-reload
}

# shellcheck source=slurm_node_setup.sh
. "${BASH_SOURCE[0]%/*}/slurm_node_setup.sh"
write_dropin
systemctl enable sackd >/dev/null 2>&1 || true
retry systemctl restart sackd || exit 1
log "sackd started (configuration from ${HEAD_ADDRESS}:${SLURMCTLD_PORT})"
