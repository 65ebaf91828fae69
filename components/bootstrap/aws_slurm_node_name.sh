#!/bin/bash
# gpu-cluster: print this node's Slurm name on AWS: the instance tag the head's resume program launched it with,
# from the instance metadata (its launch template enables tags in IMDS). Nothing else goes to stdout.
# Environment: NAME_TAG (default gpu-cluster:slurm-node), IMDS (default http://169.254.169.254).
set -uo pipefail

IMDS="${IMDS:-http://169.254.169.254}"
NAME_TAG="${NAME_TAG:-gpu-cluster:slurm-node}"

token=$(curl -sf -X PUT "${IMDS}/latest/api/token" -H "X-aws-ec2-metadata-token-ttl-seconds: 300") || exit 1
exec curl -sf -H "X-aws-ec2-metadata-token: ${token}" "${IMDS}/latest/meta-data/tags/instance/${NAME_TAG}"
