#!/bin/bash
# gpu-cluster: print this node's Slurm name on Azure: its VM name (the head's resume program created the VM
# `<cluster>-<node>`) after the cluster's prefix, from the Instance Metadata Service (compute/name; no identity needed).
# Nothing else goes to stdout. Environment: NODE_NAME_PREFIX (`<cluster>-`, in the GPU node's Slurm settings, which
# slurm_compute.sh runs it with), IMDS (default http://169.254.169.254).
set -uo pipefail

IMDS="${IMDS:-http://169.254.169.254}"
PREFIX="${NODE_NAME_PREFIX:-}"

name=$(curl -fsS --max-time 5 --retry 3 --noproxy '*' -H "Metadata: true" \
  "${IMDS}/metadata/instance/compute/name?api-version=2021-02-01&format=text") || exit 1
if [ -z "$PREFIX" ] || [ "${name#"$PREFIX"}" = "$name" ]; then
  echo "gpu-cluster-slurm-node-name: VM name '${name}' does not start with '${PREFIX}'" >&2
  exit 1
fi
printf '%s\n' "${name#"$PREFIX"}"
