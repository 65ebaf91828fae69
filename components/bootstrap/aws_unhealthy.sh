#!/bin/bash
# gpu-cluster: take this node out of its Auto Scaling group after a failed health check.
#
# Run by gpu-cluster-health with ACTION=replace. Marks the instance Unhealthy (EC2 Auto Scaling API,
# SetInstanceHealth: "Amazon EC2 Auto Scaling terminates and replaces the unhealthy instance"), without
# waiting for the group's grace period: the check runs once the node is up, its verdict is final.
# The instance id and region come from IMDSv2 (the launch template requires tokens). The node role may
# call exactly autoscaling:SetInstanceHealth on exactly this group (an inline policy on the group's ARN);
# the policy is created right after the group, so the first calls of a brand-new cluster may be refused:
# retry for a while.
#
# Environment: IMDS (default http://169.254.169.254), ATTEMPTS (default 10), RETRY_SECONDS (default 30).
set -uo pipefail

IMDS="${IMDS:-http://169.254.169.254}"
ATTEMPTS="${ATTEMPTS:-10}"
RETRY_SECONDS="${RETRY_SECONDS:-30}"

log() { echo "gpu-cluster-unhealthy: $*" >&2; }

token=$(curl -sf -X PUT "${IMDS}/latest/api/token" -H "X-aws-ec2-metadata-token-ttl-seconds: 300") || {
    log "no IMDSv2 token"
    exit 1
}
meta() { curl -sf -H "X-aws-ec2-metadata-token: ${token}" "${IMDS}/latest/meta-data/$1"; }
instance_id=$(meta instance-id) || {
    log "no instance id from IMDS"
    exit 1
}
region=$(meta placement/region) || {
    log "no region from IMDS"
    exit 1
}

for attempt in $(seq 1 "$ATTEMPTS"); do
    if aws autoscaling set-instance-health --region "$region" --instance-id "$instance_id" \
        --health-status Unhealthy --no-should-respect-grace-period; then
        log "${instance_id} marked Unhealthy: its Auto Scaling group replaces it"
        exit 0
    fi
    log "set-instance-health failed (attempt ${attempt} of ${ATTEMPTS})"
    [ "$attempt" -lt "$ATTEMPTS" ] && sleep "$RETRY_SECONDS"
done
exit 1
