#!/bin/bash
# gpu-cluster: print this node's Slurm name on Alibaba Cloud. The head's resume program launched the instance named
# `<cluster>-<node>` (RunInstances InstanceName); the metadata service gives that name (instance/instance-name), and
# the node's name is what follows `<CLUSTER>-`. Nothing else goes to stdout.
# The metadata service is in security-hardening mode on the nodes (http_tokens required): a token first, from
# TOKEN_URL (catalog/interruption.yaml clouds.alicloud: the path, the headers and their source).
# Environment: CLUSTER, NAME_URL (default http://100.100.100.200/latest/meta-data/instance/instance-name), TOKEN_URL
# (default http://100.100.100.200/latest/api/token).
set -uo pipefail

NAME_URL="${NAME_URL:-http://100.100.100.200/latest/meta-data/instance/instance-name}"
TOKEN_URL="${TOKEN_URL:-http://100.100.100.200/latest/api/token}"

token=$(curl -fsS --max-time 5 --retry 3 -X PUT -H "X-aliyun-ecs-metadata-token-ttl-seconds: 300" "$TOKEN_URL") ||
  exit 1
instance=$(curl -fsS --max-time 5 --retry 3 -H "X-aliyun-ecs-metadata-token: ${token}" "$NAME_URL") || exit 1
node="${instance#"${CLUSTER}-"}"
if [ "$node" = "$instance" ] || [ -z "$node" ]; then
  echo "gpu-cluster-slurm-node-name: instance ${instance} is not ${CLUSTER}-<node>" >&2
  exit 1
fi
printf '%s\n' "$node"
