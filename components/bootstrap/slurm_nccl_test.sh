#!/bin/bash
# gpu-cluster-nccl-test: the first job of a Slurm cluster, from the login node. Builds NVIDIA's nccl-tests once into
# ~/nccl-tests on a GPU node (the login node has no CUDA; /home is shared), unless the GPU image brings them, then runs
# all_reduce_perf across NODES nodes, one rank per GPU, with the fabric's NCCL settings (/etc/gpu-cluster/nccl.env on
# each GPU node), and prints the bus bandwidth.
#   gpu-cluster-nccl-test [-p PARTITION] [-N NODES]     (default: the default partition, 2 nodes)
# Settings (/etc/gpu-cluster/nccl-test.env): NCCL_TESTS_REPO NCCL_TESTS_TAG (pinned), PREBUILT (directories an image's
# nccl-tests build may be in), MPI_HOMES (where the image's MPI may be, in order), NCCL_TESTS_DIR (default
# ~/nccl-tests), TIME_LIMIT (minutes per job, default 30), NCCL_ENV (default /etc/gpu-cluster/nccl.env).
set -uo pipefail

ENV_FILE="${ENV_FILE:-/etc/gpu-cluster/nccl-test.env}"
# shellcheck source=/dev/null
[ -r "$ENV_FILE" ] && . "$ENV_FILE"
NCCL_TESTS_DIR="${NCCL_TESTS_DIR:-$HOME/nccl-tests}"
NCCL_ENV="${NCCL_ENV:-/etc/gpu-cluster/nccl.env}"
TIME_LIMIT="${TIME_LIMIT:-30}"
partition=""
nodes=2

while getopts "p:N:" opt; do
  case "$opt" in
    p) partition="$OPTARG" ;;
    N) nodes="$OPTARG" ;;
    *) echo "usage: gpu-cluster-nccl-test [-p PARTITION] [-N NODES]" >&2; exit 2 ;;
  esac
done
if [ -z "$partition" ]; then
  partition=$(sinfo --noheader -o '%P' | sed -n 's/\*$//p' | head -n 1)
fi
[ -n "$partition" ] || { echo "gpu-cluster-nccl-test: no partition (sinfo shows none)" >&2; exit 1; }
# gpu:<type>:<count> or gpu:<count>, as the partition's nodes are defined
gpus=$(sinfo --noheader -p "$partition" -o '%G' | head -n 1 | sed -E 's/.*gpu:([^:(]*:)?([0-9]+).*/\2/')
case "$gpus" in "" | *[!0-9]*) echo "gpu-cluster-nccl-test: partition ${partition} has no GPUs" >&2; exit 1 ;; esac

# The node-side steps: the same file on the shared /home, so a GPU node can run it
steps="$HOME/.gpu-cluster-nccl-test.sh"
cat >"$steps" <<STEPS
#!/bin/bash
set -uo pipefail
find_mpi() {
  local candidate
  for candidate in ${MPI_HOMES:-}; do
    for dir in \$candidate; do
      [ -x "\$dir/bin/mpirun" ] && { echo "\$dir"; return 0; }
      [ -f "\$dir/include/mpi.h" ] && command -v mpirun >/dev/null && { echo "\$dir"; return 0; }
    done
  done
  return 1
}
find_tests() {
  local dir
  for dir in ${PREBUILT:-} "${NCCL_TESTS_DIR}/build"; do
    [ -x "\$dir/all_reduce_perf" ] && { echo "\$dir"; return 0; }
  done
  return 1
}
case "\$1" in
  build)
    find_tests >/dev/null && exit 0
    mpi=\$(find_mpi) || { echo "no MPI on this GPU node's image (looked in: ${MPI_HOMES:-})" >&2; exit 1; }
    rm -rf "${NCCL_TESTS_DIR}"
    git clone --quiet --depth 1 --branch "${NCCL_TESTS_TAG:-}" "${NCCL_TESTS_REPO:-}" "${NCCL_TESTS_DIR}" || exit 1
    make -C "${NCCL_TESTS_DIR}" -j "\$(nproc)" MPI=1 MPI_HOME="\$mpi" CUDA_HOME=/usr/local/cuda >/dev/null || exit 1
    ;;
  run)
    tests=\$(find_tests) || { echo "nccl-tests are not built" >&2; exit 1; }
    mpi=\$(find_mpi) || { echo "no MPI on this GPU node's image" >&2; exit 1; }
    mpirun=\$mpi/bin/mpirun; [ -x "\$mpirun" ] || mpirun=\$(command -v mpirun)
    # one rank per GPU on every node of the allocation; each rank takes the fabric's NCCL settings of its node
    exec "\$mpirun" --map-by "ppr:${gpus}:node" --bind-to none \\
      bash -c 'set -a; . "\$1"; set +a; exec "\$0" -b 8 -e 8G -f 2 -g 1' "\$tests/all_reduce_perf" "${NCCL_ENV}"
    ;;
esac
STEPS
chmod 0755 "$steps"

echo "gpu-cluster-nccl-test: nccl-tests on a ${partition} node (once; a powered-down node is launched first)"
srun -p "$partition" -N 1 -n 1 --gpus-per-node=1 --time="$TIME_LIMIT" "$steps" build || {
  echo "gpu-cluster-nccl-test: the build failed" >&2
  exit 1
}
out="$HOME/nccl-test-$(date +%Y%m%d-%H%M%S).out"
echo "gpu-cluster-nccl-test: all_reduce_perf on ${nodes} x ${gpus} GPUs of ${partition}; output in ${out}"
sbatch --wait --quiet -p "$partition" -N "$nodes" --gpus-per-node="$gpus" --ntasks-per-node="$gpus" --exclusive \
  --time="$TIME_LIMIT" --job-name=nccl-test --output="$out" --wrap "$steps run"
status=$?
grep -E '^# (Avg bus bandwidth|Out of bounds)' "$out" 2>/dev/null || tail -n 20 "$out" 2>/dev/null
exit "$status"
