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
# shellcheck source=aws_cli.sh
. "${BASH_SOURCE[0]%/*}/aws_cli.sh"

region=$(aws_region) || exit 1
exec aws ssm get-parameter --region "$region" --name "$SLURM_CONF_PARAMETER" \
  --query Parameter.Value --output text
