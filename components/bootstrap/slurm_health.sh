#!/bin/bash
# gpu-cluster Slurm HealthCheckProgram: slurmd runs it every HealthCheckInterval seconds. It runs the toolkit's
# health check (gpu-cluster-health, with the boot check's expectations) in report mode, quickly (no waiting for
# devices, no DCGM diagnostic), and drains this node when it fails: running jobs finish, no new job lands.
# Without the health check (health.enabled: false) it does nothing.
#   HEALTH       the check (default /usr/local/sbin/gpu-cluster-health)
#   HEALTH_ENV   its settings (default /etc/gpu-cluster/health.env)
#   RESULT       where this run writes its JSON (default /var/lib/gpu-cluster/slurm-health.json)
set -uo pipefail

HEALTH="${HEALTH:-/usr/local/sbin/gpu-cluster-health}"
HEALTH_ENV="${HEALTH_ENV:-/etc/gpu-cluster/health.env}"
RESULT="${RESULT:-/var/lib/gpu-cluster/slurm-health.json}"

[ -x "$HEALTH" ] && [ -r "$HEALTH_ENV" ] || exit 0
set -a
# shellcheck source=/dev/null
. "$HEALTH_ENV"
set +a
if ACTION=report WAIT_SECONDS=1 DCGM_LEVEL=0 HEALTH_RESULT="$RESULT" "$HEALTH" 2>/dev/null; then
  exit 0
fi
failed=$(grep -o '"name": "[a-z]*", "ok": false' "$RESULT" 2>/dev/null | cut -d'"' -f4 | paste -sd, -)
node=$(hostname -s)
scontrol update nodename="$node" state=drain reason="gpu-cluster health: ${failed:-failed}"
echo "gpu-cluster-slurm-health: ${node} drained (${failed:-failed})" >&2
exit 1
