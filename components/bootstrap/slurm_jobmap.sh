#!/bin/bash
# gpu-cluster Slurm job map, on Slurm GPU nodes with the DCGM exporter: which jobs use each GPU of this node, for the
# exporter's `hpc_job` label (--hpc-job-mapping-dir: a file per GPU named after its index, a job id a line). Read on
# the node itself, never from slurmctld: each task slurmstepd (root) starts has its job's id and GPU indexes in the
# environment Slurm gave it (SLURM_JOB_GPUS, SLURM_STEP_GPUS: global indexes, not relative to the device cgroup), a
# gres/mps job's GPU too, so every job sharing a GPU is named. Each file is replaced whole (a new file renamed over
# it) and removed when its GPU has no job; the exporter reads the directory at each collection.
#   JOBMAP_DIR  the exporter's mapping directory (default /run/gpu-cluster-jobmap)
#   EVERY       seconds between two looks (default 15)
#   PROC        procfs (default /proc)
# `gpu-cluster-slurm-jobmap once` looks once; without an argument it looks every EVERY seconds until stopped, and
# then empties the map (no job is known any more).
set -uo pipefail

JOBMAP_DIR="${JOBMAP_DIR:-/run/gpu-cluster-jobmap}"
EVERY="${EVERY:-15}"
PROC="${PROC:-/proc}"

declare -A jobs_of=()

# add JOB LIST: LIST is Slurm's index list ("0,1", "0-3,6"); no node has a thousand GPUs
add() {
  local job=$1 item lo hi i
  local -a items
  IFS=, read -ra items <<<"$2"
  for item in "${items[@]}"; do
    [[ $item =~ ^([0-9]{1,3})(-([0-9]{1,3}))?$ ]] || continue
    lo=${BASH_REMATCH[1]}
    hi=${BASH_REMATCH[3]:-$lo}
    for ((i = lo; i <= hi; i++)); do
      jobs_of[$i]+="$job"$'\n'
    done
  done
}

# the processes root's slurmstepd started: batch scripts and step tasks (a user cannot run a root slurmstepd)
tasks() {
  local stepds
  stepds=$(pgrep -u 0 -x -d, slurmstepd) || return 0
  pgrep -P "$stepds" || true
}

look() {
  local pid var job step job_gpus step_gpus gpus
  jobs_of=()
  for pid in $(tasks); do
    job="" step="" job_gpus="" step_gpus=""
    # a task that ended meanwhile has no environ any more: skipped
    while IFS= read -r -d '' var; do
      case $var in
        SLURM_JOB_ID=*) job=${var#*=} ;;
        SLURM_STEP_ID=*) step=${var#*=} ;;
        SLURM_JOB_GPUS=*) job_gpus=${var#*=} ;;
        SLURM_STEP_GPUS=*) step_gpus=${var#*=} ;;
      esac
    done 2>/dev/null <"$PROC/$pid/environ"
    # the value Slurm sets over what the process inherited: a step's task its step's GPUs, the batch script (no step
    # id) the job's
    gpus=$job_gpus
    if [ -n "$step" ] && [ -n "$step_gpus" ]; then
      gpus=$step_gpus
    fi
    if [[ $job =~ ^[0-9]+$ ]] && [ -n "$gpus" ]; then
      add "$job" "$gpus"
    fi
  done
}

write() {
  local gpu text file name
  mkdir -p "$JOBMAP_DIR"
  for gpu in "${!jobs_of[@]}"; do
    text=$(sort -nu <<<"${jobs_of[$gpu]%$'\n'}")
    file="$JOBMAP_DIR/$gpu"
    [ "$(cat "$file" 2>/dev/null)" = "$text" ] && continue
    # renamed over the old one: the exporter never reads half a file (the name is not a GPU's: it skips it)
    printf '%s\n' "$text" >"$file.new" && mv -f "$file.new" "$file"
  done
  for file in "$JOBMAP_DIR"/*; do
    name=${file##*/}
    if [[ $name =~ ^[0-9]+$ ]] && [ -z "${jobs_of[$name]:-}" ]; then
      rm -f "$file"
    fi
  done
}

case "${1:-}" in
  once)
    look
    write
    ;;
  "")
    trap 'jobs_of=(); write; exit 0' TERM INT
    while :; do
      look
      write
      sleep "$EVERY" &
      wait $!
    done
    ;;
  *)
    echo "usage: gpu-cluster-slurm-jobmap [once]" >&2
    exit 2
    ;;
esac
