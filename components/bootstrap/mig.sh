#!/bin/bash
# gpu-cluster MIG partitioning: fill every GPU with MIG_COUNT instances of MIG_PROFILE at boot.
# Idempotent: GPUs already partitioned as asked are left alone. Runs before the health check,
# which counts the MIG devices (nvidia-smi -L).
#   MIG_PROFILE  a profile name such as 1g.10gb (NVIDIA MIG User Guide, Supported MIG Profiles)
#   MIG_COUNT    instances of it per GPU
set -euo pipefail

MIG_PROFILE="${MIG_PROFILE:?MIG_PROFILE is required}"
MIG_COUNT="${MIG_COUNT:?MIG_COUNT is required}"
REBOOT_MARK="${REBOOT_MARK:-/var/lib/gpu-cluster/mig-rebooted}"

log() { echo "gpu-cluster-mig: $*" >&2; }

gpus=$(nvidia-smi --query-gpu=index --format=csv,noheader | grep -c .)
have=$(nvidia-smi -L | grep -c "MIG ${MIG_PROFILE}" || true)
want=$((gpus * MIG_COUNT))
if [ "$have" -eq "$want" ]; then
  log "$gpus GPU(s) already hold $MIG_COUNT x $MIG_PROFILE"
  exit 0
fi

# MIG mode takes effect after a GPU reset; nvidia-smi resets an idle GPU itself, otherwise the
# mode stays pending until the next reboot: reboot once, then give up loudly.
nvidia-smi -mig 1
modes=$(nvidia-smi --query-gpu=mig.mode.current --format=csv,noheader)
if printf '%s\n' "$modes" | grep -v -q Enabled; then
  if [ -e "$REBOOT_MARK" ]; then
    log "MIG mode still not enabled after a reboot"
    exit 1
  fi
  mkdir -p "$(dirname "$REBOOT_MARK")"
  touch "$REBOOT_MARK"
  log "MIG mode pending a GPU reset: rebooting once to apply it"
  systemctl reboot
  exit 0
fi
nvidia-smi mig -dci >/dev/null 2>&1 || true
nvidia-smi mig -dgi >/dev/null 2>&1 || true
profiles=$MIG_PROFILE
for _ in $(seq 2 "$MIG_COUNT"); do
  profiles="$profiles,$MIG_PROFILE"
done
nvidia-smi mig -cgi "$profiles" -C
log "created $MIG_COUNT x $MIG_PROFILE on each of $gpus GPU(s)"
