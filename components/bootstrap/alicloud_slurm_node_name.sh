#!/bin/bash
# gpu-cluster: print this node's Slurm name on Alibaba Cloud. The head's resume program launched the instance named
# `<cluster>-<node>` (RunInstances InstanceName); the metadata service gives that name (instance/instance-name), and
# the node's name is what follows `<CLUSTER>-`. Nothing else goes to stdout.
# Environment: CLUSTER, NAME_URL (default http://100.100.100.200/latest/meta-data/instance/instance-name).
set -uo pipefail

NAME_URL="${NAME_URL:-http://100.100.100.200/latest/meta-data/instance/instance-name}"

instance=$(curl -fsS --max-time 5 --retry 3 "$NAME_URL") || exit 1
node="${instance#"${CLUSTER}-"}"
if [ "$node" = "$instance" ] || [ -z "$node" ]; then
  echo "gpu-cluster-slurm-node-name: instance ${instance} is not ${CLUSTER}-<node>" >&2
  exit 1
fi
printf '%s\n' "$node"
