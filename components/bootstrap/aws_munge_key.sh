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
# shellcheck source=aws_cli.sh
. "${BASH_SOURCE[0]%/*}/aws_cli.sh"

region=$(aws_region) || exit 1
exec aws secretsmanager get-secret-value --region "$region" --secret-id "$MUNGE_SECRET_ID" \
  --query SecretString --output text
