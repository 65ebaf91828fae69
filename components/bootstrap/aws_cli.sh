# shellcheck shell=bash
# gpu-cluster: the AWS CLI and this node's region, for the hooks that call AWS APIs (sourced by aws_munge_key.sh and
# aws_slurm_conf.sh; `bootstrap.script` inlines it, so a node gets one self-contained script).
#
# The AWS CLI comes with the GPU image (DLAMI); on Ubuntu Server (head, login) it is installed when missing. The region
# comes from IMDSv2 (the launch templates and instances require tokens).
#
# Environment: IMDS (default http://169.254.169.254).
IMDS="${IMDS:-http://169.254.169.254}"

# Prints this node's region, after installing the AWS CLI where it is missing.
aws_region() {
  if ! command -v aws >/dev/null 2>&1; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q awscli >/dev/null 2>&1 || return 1
  fi
  local token
  token=$(curl -sf -X PUT "${IMDS}/latest/api/token" -H "X-aws-ec2-metadata-token-ttl-seconds: 300") || return 1
  curl -sf -H "X-aws-ec2-metadata-token: ${token}" "${IMDS}/latest/meta-data/placement/region"
}
