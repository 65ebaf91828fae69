#!/bin/bash
# gpu-cluster: print this node's Slurm name on GCP. The head's resume program created the instance as
# `<cluster>-<node>`, the node being `<partition>-<index>` (a partition's name has no hyphen: spec model
# SlurmPartition.name), so the name is the instance name without the cluster's prefix: its last two fields. The
# instance name comes from the metadata server. Nothing else goes to stdout.
# Environment: METADATA_URL (default http://metadata.google.internal/computeMetadata/v1).
set -uo pipefail

METADATA_URL="${METADATA_URL:-http://metadata.google.internal/computeMetadata/v1}"

name=$(curl -fsS --max-time 5 --retry 3 -H "Metadata-Flavor: Google" "${METADATA_URL%/}/instance/name") || exit 1
index="${name##*-}"
rest="${name%-*}"
partition="${rest##*-}"
if [ "$rest" = "$name" ] || [ "$partition" = "$rest" ] || [ -z "$index" ]; then
  echo "gpu-cluster-slurm-node-name: ${name} is not <cluster>-<partition>-<index>" >&2
  exit 1
fi
printf '%s-%s\n' "$partition" "$index"
