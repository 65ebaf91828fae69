#!/bin/bash
# gpu-cluster Slurm head node: delete the dynamic GPU nodes that have stopped responding.
# A node that dies without leaving (spot reclaim, a crash, an instance the group replaces: gpu-cluster-slurm-leave
# runs only at a clean shutdown, and only an idle node can be deleted) stays in slurmctld's node table and holds one of
# MaxNodeCount's slots, while its replacement registers under a new hostname. Slurm never deletes a dynamic node by
# itself; this does, once slurmctld has reported it as not responding (sinfo --dead) on every run for
# DEAD_AFTER_SECONDS. A node that answers again is forgotten. A systemd timer runs it. Settings:
#   DEAD_AFTER_SECONDS  how long a node must stay unresponsive before it is deleted (default 900)
#   SEEN_FILE           "<node> <epoch first seen unresponsive>" per line (default /var/lib/gpu-cluster/slurm-dead-nodes)
set -uo pipefail

DEAD_AFTER_SECONDS="${DEAD_AFTER_SECONDS:-900}"
SEEN_FILE="${SEEN_FILE:-/var/lib/gpu-cluster/slurm-dead-nodes}"

log() { echo "gpu-cluster-slurm-cleanup: $*" >&2; }

# one node name a line (sinfo --Node prints a node once per partition)
if ! dead=$(sinfo --dead --noheader --Node --format=%N); then
  log "sinfo failed: slurmctld does not answer"
  exit 1
fi
now=$(date +%s)
mkdir -p "$(dirname "$SEEN_FILE")" && touch "$SEEN_FILE" || exit 1
next=$(mktemp "${SEEN_FILE}.XXXXXX") || exit 1
status=0
while read -r node; do
  [ -n "$node" ] || continue
  first=$(awk -v n="$node" '$1 == n { print $2; exit }' "$SEEN_FILE")
  first="${first:-$now}"
  if [ $((now - first)) -ge "$DEAD_AFTER_SECONDS" ]; then
    if scontrol delete nodename="$node"; then
      log "deleted ${node}: not responding for $((now - first)) s"
      continue
    fi
    # running jobs or a reservation keep it: tried again next run
    log "could not delete ${node}"
    status=1
  fi
  printf '%s %s\n' "$node" "$first" >>"$next"
done < <(printf '%s\n' "$dead" | sort -u)
mv -f "$next" "$SEEN_FILE"
exit "$status"
