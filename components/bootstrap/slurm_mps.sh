#!/bin/bash
# gpu-cluster Slurm MPS (slurm.mps): slurmd's Prolog, TaskProlog and Epilog, one program under three names. Slurm
# only counts gres/mps; a CUDA program shares its GPU through MPS only while an MPS control daemon serves it, and
# gres.html ("MPS Management") leaves starting and stopping that daemon to a prolog. Here each GPU gets its own
# daemon (unit gpu-cluster-mps@<index>, its own pipe directory), so jobs on other GPUs never wait for it.
#   gpu-cluster-slurm-mps-prolog       root, before a job: a gres/mps job (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE set)
#                                      starts its GPU's daemon and records the GPU for the job; a whole-GPU job
#                                      stops the daemons of its GPUs (Slurm never gives a GPU as gpu and mps at once)
#   gpu-cluster-slurm-mps-task-prolog  the job's user, before each task: points a gres/mps job's task at its GPU's daemon
#                                      (`export` lines on stdout set the task's environment: slurm.conf(5) TaskProlog)
#   gpu-cluster-slurm-mps-epilog       root, after a job: forgets the job's GPU
# In the Prolog and Epilog CUDA_VISIBLE_DEVICES holds the node's own GPU indices; the job's own value is relative to
# what its cgroup shows (gres.html "GPU Management"), so the task prolog reads the index the prolog recorded.
#   MPS_STATE  where the daemons' pipe directories and the jobs' GPUs are kept (default /run/gpu-cluster-mps)
#   SYSTEMCTL  the service manager (default systemctl)
set -uo pipefail

MPS_STATE="${MPS_STATE:-/run/gpu-cluster-mps}"
SYSTEMCTL="${SYSTEMCTL:-systemctl}"
job_file="$MPS_STATE/job-${SLURM_JOB_ID:-none}"

case "${0##*/}" in
  *-task-prolog)
    if [ -r "$job_file" ]; then
      echo "export CUDA_MPS_PIPE_DIRECTORY=$MPS_STATE/gpu$(cat "$job_file")"
    fi
    ;;
  *-prolog)
    [ -n "${CUDA_VISIBLE_DEVICES:-}" ] || exit 0
    if [ -n "${CUDA_MPS_ACTIVE_THREAD_PERCENTAGE:-}" ]; then
      # a gres/mps job is given one GPU per node (gres.html)
      gpu="${CUDA_VISIBLE_DEVICES%%,*}"
      mkdir -p "$MPS_STATE"
      if ! "$SYSTEMCTL" start "gpu-cluster-mps@${gpu}.service"; then
        echo "gpu-cluster-slurm-mps: the MPS daemon of GPU ${gpu} did not start" >&2
        exit 1 # slurmd drains the node and requeues the job (a failed Prolog)
      fi
      echo "$gpu" >"$job_file"
    else
      IFS=, read -ra gpus <<<"$CUDA_VISIBLE_DEVICES"
      for gpu in "${gpus[@]}"; do
        "$SYSTEMCTL" stop "gpu-cluster-mps@${gpu}.service"
      done
    fi
    ;;
  *-epilog)
    rm -f "$job_file"
    ;;
  *)
    echo "gpu-cluster-slurm-mps: run as gpu-cluster-slurm-mps-{prolog,task-prolog,epilog}" >&2
    exit 2
    ;;
esac
exit 0
