#!/bin/bash
# gpu-cluster: print the cluster's MUNGE key (base64) from AWS Secrets Manager, for the Slurm parts.
#
# The node's instance profile may call secretsmanager:GetSecretValue on exactly this secret (an inline policy on the
# secret's ARN). Region from IMDSv2. Nothing but the key goes to stdout; the caller decodes it into
# /etc/munge/munge.key. The AWS CLI comes with the GPU image (DLAMI); on Ubuntu Server (head, login) it is installed.
#
# Environment: MUNGE_SECRET_ID (from /etc/gpu-cluster/munge-key.env), IMDS (default http://169.254.169.254).
set -uo pipefail

ENV_FILE="${ENV_FILE:-/etc/gpu-cluster/munge-key.env}"
# shellcheck source=/dev/null
[ -r "$ENV_FILE" ] && . "$ENV_FILE"
IMDS="${IMDS:-http://169.254.169.254}"

if ! command -v aws >/dev/null 2>&1; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q awscli >/dev/null 2>&1 || exit 1
fi
token=$(curl -sf -X PUT "${IMDS}/latest/api/token" -H "X-aws-ec2-metadata-token-ttl-seconds: 300") || exit 1
region=$(curl -sf -H "X-aws-ec2-metadata-token: ${token}" "${IMDS}/latest/meta-data/placement/region") || exit 1
exec aws secretsmanager get-secret-value --region "$region" --secret-id "$MUNGE_SECRET_ID" \
  --query SecretString --output text
