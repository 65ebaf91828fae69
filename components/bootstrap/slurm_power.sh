#!/bin/bash
# gpu-cluster Slurm head node: power saving for elastic partitions (slurm.schedmd.com/power_save.html). slurmctld runs
# this as SlurmUser with a hostlist, under one of three names:
#   gpu-cluster-slurm-resume <hostlist>       launch each node from its partition's cloud template, then tell slurmctld
#                                             its address (scontrol update nodeaddr, nodehostname)
#   gpu-cluster-slurm-suspend <hostlist>      delete each node's cloud instance (idle for SuspendTime)
#   gpu-cluster-slurm-resume-fail <hostlist>  delete the instances of nodes not up within ResumeTimeout
# A node whose launch fails is set DOWN with the cloud's reason (its job is requeued) and powered down, so a later job
# may launch it again (SlurmctldParameters=idle_on_node_suspend). Nodes are launched and deleted in parallel.
# The cloud's hook (POWER_HOOK, sourced) defines:
#   cloud_launch <node> <target>   prints "<address> <hostname>" of the instance it launched for <node>
#   cloud_terminate <node>         deletes <node>'s instance; succeeds when there is none
# Settings: POWER_HOOK, LAUNCH_ENV (LAUNCH_<partition>=<target> lines, from the cloud's channel: default
# /etc/slurm/launch.env), POWER_ENV (the hook's own settings, default /etc/gpu-cluster/slurm-power.env).
set -uo pipefail
# slurmctld runs power-saving programs with an environment of its own making, whose PATH may lack sbin (slurmd, the
# cloud's CLI): a fixed one
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

POWER_ENV="${POWER_ENV:-/etc/gpu-cluster/slurm-power.env}"
# shellcheck source=/dev/null
[ -r "$POWER_ENV" ] && . "$POWER_ENV"
LAUNCH_ENV="${LAUNCH_ENV:-/etc/slurm/launch.env}"
POWER_HOOK="${POWER_HOOK:-/usr/local/sbin/gpu-cluster-slurm-power-hook}"
action="${POWER_ACTION:-${0##*/gpu-cluster-slurm-}}"

log() { logger -t gpu-cluster-slurm-power "$*" 2>/dev/null; echo "gpu-cluster-slurm-power: $*" >&2; }

# shellcheck source=/dev/null
. "$POWER_HOOK" || { log "cannot read the cloud hook ${POWER_HOOK}"; exit 1; }

# LAUNCH_<partition> of a node <partition>-<index>
target_of() {
  local partition="${1%-*}" line
  line=$(grep -E "^LAUNCH_${partition}=" "$LAUNCH_ENV" 2>/dev/null | tail -n 1)
  printf '%s' "${line#*=}"
}

resume_one() {
  local node="$1" target out address host
  target=$(target_of "$node")
  if [ -z "$target" ]; then
    out="no launch target for partition ${node%-*} in ${LAUNCH_ENV}"
  elif out=$(cloud_launch "$node" "$target" 2>&1 >"/tmp/gpu-cluster-launch.$$.${node}"); then
    read -r address host <"/tmp/gpu-cluster-launch.$$.${node}"
    rm -f "/tmp/gpu-cluster-launch.$$.${node}"
    if scontrol update nodename="$node" nodeaddr="$address" nodehostname="${host:-$address}"; then
      log "launched ${node} at ${address}"
      return 0
    fi
    out="scontrol could not set ${node}'s address ${address}"
  fi
  rm -f "/tmp/gpu-cluster-launch.$$.${node}"
  out=$(printf '%s' "$out" | tr '\n' ' ' | cut -c1-200)
  log "could not launch ${node}: ${out}"
  scontrol update nodename="$node" state=down reason="gpu-cluster launch failed: ${out}"
  scontrol update nodename="$node" state=power_down
  return 1
}

terminate_one() {
  local node="$1"
  if cloud_terminate "$node"; then
    log "deleted ${node} (${action})"
    return 0
  fi
  log "could not delete ${node}'s instance (${action})"
  return 1
}

[ $# -ge 1 ] || { log "usage: gpu-cluster-slurm-{resume,suspend,resume-fail} <hostlist>"; exit 2; }
nodes=$(scontrol show hostnames "$1") || { log "not a hostlist: $1"; exit 2; }
pids=()
for node in $nodes; do
  case "$action" in
    resume) resume_one "$node" & ;;
    suspend | resume-fail) terminate_one "$node" & ;;
    *) log "unknown action ${action}"; exit 2 ;;
  esac
  pids+=("$!")
done
status=0
for pid in "${pids[@]}"; do
  wait "$pid" || status=1
done
exit "$status"
