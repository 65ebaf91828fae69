#!/bin/bash
# gpu-cluster: print the Slurm accounting database's password from AWS Secrets Manager, for slurm_dbd.sh on the head.
#
# The head's role may call secretsmanager:GetSecretValue on exactly this secret (an inline policy on its ARN). Region
# from IMDSv2. Nothing but the password goes to stdout; the caller puts it into slurmdbd.conf (0600, SlurmUser).
#
# Environment: DB_PASSWORD_SECRET_ID (from /etc/gpu-cluster/db-password.env), IMDS (default http://169.254.169.254).
set -uo pipefail

ENV_FILE="${ENV_FILE:-/etc/gpu-cluster/db-password.env}"
# shellcheck source=/dev/null
[ -r "$ENV_FILE" ] && . "$ENV_FILE"
# shellcheck source=aws_cli.sh
. "${BASH_SOURCE[0]%/*}/aws_cli.sh"

region=$(aws_region) || exit 1
exec aws secretsmanager get-secret-value --region "$region" --secret-id "$DB_PASSWORD_SECRET_ID" \
  --query SecretString --output text
