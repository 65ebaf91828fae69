#!/bin/bash
# gpu-cluster: print the GPU nodes' Slurm configuration text from an SSM parameter, on the AWS head node.
#
# The parameter (a String, updated in place by `pulumi up` when the GPU nodes change) holds
# SlurmLayout.compute_config; the head's instance profile may call ssm:GetParameter on exactly it. Region from IMDSv2.
# The AWS CLI is installed on Ubuntu Server when missing. Nothing but the text goes to stdout.
#
# Environment: SLURM_CONF_PARAMETER (from /etc/gpu-cluster/slurm-conf.env), IMDS (default http://169.254.169.254).
set -uo pipefail

ENV_FILE="${ENV_FILE:-/etc/gpu-cluster/slurm-conf.env}"
# shellcheck source=/dev/null
[ -r "$ENV_FILE" ] && . "$ENV_FILE"
IMDS="${IMDS:-http://169.254.169.254}"

if ! command -v aws >/dev/null 2>&1; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q awscli >/dev/null 2>&1 || exit 1
fi
token=$(curl -sf -X PUT "${IMDS}/latest/api/token" -H "X-aws-ec2-metadata-token-ttl-seconds: 300") || exit 1
region=$(curl -sf -H "X-aws-ec2-metadata-token: ${token}" "${IMDS}/latest/meta-data/placement/region") || exit 1
exec aws ssm get-parameter --region "$region" --name "$SLURM_CONF_PARAMETER" \
  --query Parameter.Value --output text
