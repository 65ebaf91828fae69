#!/bin/bash
# gpu-cluster-drain: take this node out of work before it goes (an interruption notice, a scale-in, a rolling
# replacement, a shutdown). Usage: gpu-cluster-drain REASON [DEADLINE]
#   REASON    why, one line: the Slurm node's reason (scontrol show node) and the journal
#   DEADLINE  epoch seconds to wait until for the node's jobs to leave (default: now, do not wait)
#
# Slurm (SCHEDULER=slurm): the node (its Slurm name is the short host name: slurmd -Z registers it so) is set DRAIN,
# so nothing new starts on it; its running jobs are requeued (scontrol requeue), so they run again elsewhere. Only
# batch jobs can be requeued: an interactive allocation (salloc, srun outside sbatch) or a job submitted with
# --no-requeue is left running and ends with the node (NODE_FAIL); the journal names it. Then it waits until no job
# is left on the node, or the deadline.
# No scheduler (SCHEDULER=none): nothing to drain; the processes on the node end with it. Logged.
# Kubernetes nodes do not run this: their node identity may not evict pods (the in-cluster handler drains).
#
# Settings: DRAIN_ENV (default /etc/gpu-cluster/drain.env, read when present: it is called by the watcher, the
# shutdown unit and GCP's shutdown-script alike), with SCHEDULER (slurm | none), STEP_SECONDS (how often to look at
# the node's jobs while waiting, default 5), NODE_NAME (the Slurm node's name, default the short host name).
set -uo pipefail

DRAIN_ENV="${DRAIN_ENV:-/etc/gpu-cluster/drain.env}"
# shellcheck source=/dev/null
[ -r "$DRAIN_ENV" ] && . "$DRAIN_ENV"

SCHEDULER="${SCHEDULER:-none}"
STEP_SECONDS="${STEP_SECONDS:-5}"
REASON="${1:-gpu-cluster: the node is going away}"
DEADLINE="${2:-0}"

log() { echo "gpu-cluster-drain: $*" >&2; }

jobs_on() { squeue -h -w "$1" -t RUNNING,COMPLETING,CONFIGURING -o %i 2>/dev/null; }

drain_slurm() {
    local node job left status=0
    node="${NODE_NAME:-$(hostname -s)}"
    if scontrol update nodename="$node" state=DRAIN reason="$REASON"; then
        log "${node} DRAIN: ${REASON}"
    else
        log "${node}: scontrol update failed"
        status=1
    fi
    for job in $(squeue -h -w "$node" -t RUNNING -o %i 2>/dev/null); do
        if scontrol requeue "$job"; then
            log "job ${job} requeued"
        else
            log "job ${job} not requeueable (not batch, or --no-requeue): it ends with the node"
        fi
    done
    while :; do
        left=$(jobs_on "$node")
        if [ -z "$left" ]; then
            log "${node} idle"
            return "$status"
        fi
        if [ "$(date +%s)" -ge "$DEADLINE" ]; then
            log "deadline: job(s) left on ${node}: ${left//$'\n'/ }"
            return "$status"
        fi
        sleep "$STEP_SECONDS"
    done
}

case "$SCHEDULER" in
slurm) drain_slurm ;;
none) log "no scheduler: nothing to drain (${REASON})" ;;
*) exit 1 ;;
esac
