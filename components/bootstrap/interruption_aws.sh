#!/bin/bash
# gpu-cluster-interruption on AWS: drains this node before EC2 or its Auto Scaling group takes it away.
#
# Every POLL_SECONDS, through IMDSv2 (the launch templates require tokens):
# - autoscaling/target-lifecycle-state (a managed group's node, LIFECYCLE_HOOK set): Terminated means the group is
#   terminating it (scale-in, instance refresh, unhealthy) and the termination lifecycle hook holds it in
#   Terminating:Wait. Drain (waiting up to LIFECYCLE_WAIT_SECONDS for its jobs), then complete-lifecycle-action
#   CONTINUE so the group terminates it now rather than at the hook's timeout. The node's role needs
#   autoscaling:DescribeAutoScalingInstances (the group's name: the instance's group is named at deploy) and
#   autoscaling:CompleteLifecycleAction on its group.
# - spot/instance-action (404 until then): a Spot interruption, two minutes ahead: drain until its "time".
# Endpoints, fields and timings: catalog/interruption.yaml (clouds.aws), written to this unit's EnvironmentFile.
#
# Environment: IMDS, TOKEN_PATH, TOKEN_TTL_HEADER, TOKEN_HEADER, TOKEN_TTL_SECONDS, INSTANCE_ID_PATH, REGION_PATH,
# SPOT_PATH, SPOT_ACTION_FIELD, SPOT_TIME_FIELD, SPOT_NOTICE_SECONDS, LIFECYCLE_PATH, LIFECYCLE_TERMINATED,
# LIFECYCLE_RESULT, LIFECYCLE_HOOK, LIFECYCLE_WAIT_SECONDS, POLL_SECONDS (and interruption_common.sh's).
set -uo pipefail

# shellcheck source=interruption_common.sh
. "${BASH_SOURCE[0]%/*}/interruption_common.sh"

TOKEN=""

meta() { curl -sf -H "${TOKEN_HEADER}: ${TOKEN}" "${IMDS}$1"; }

notice() {
    local state action when
    TOKEN=$(curl -sf -X PUT "${IMDS}${TOKEN_PATH}" -H "${TOKEN_TTL_HEADER}: ${TOKEN_TTL_SECONDS}") || {
        log "no IMDSv2 token"
        return 0
    }
    if [ -n "${LIFECYCLE_HOOK:-}" ] && state=$(meta "$LIFECYCLE_PATH") && [ "$state" = "$LIFECYCLE_TERMINATED" ]; then
        NOTICE="lifecycle:${state}"
        WHY="Auto Scaling: target lifecycle state ${state}"
        DEADLINE=$(($(now) + LIFECYCLE_WAIT_SECONDS))
        return 0
    fi
    if action=$(meta "$SPOT_PATH") && [ -n "$action" ]; then
        when=$(field "$SPOT_TIME_FIELD" <<<"$action")
        NOTICE="spot:${when}"
        WHY="Spot interruption: $(field "$SPOT_ACTION_FIELD" <<<"$action") at ${when}"
        DEADLINE=$(epoch "$when" $(($(now) + SPOT_NOTICE_SECONDS)))
    fi
}

after_drain() {
    local id region group
    case "$NOTICE" in lifecycle:*) ;; *) return 0 ;; esac
    # on any failure the hook's timeout and default result end the wait
    id=$(meta "$INSTANCE_ID_PATH") && region=$(meta "$REGION_PATH") || return 0
    group=$(aws autoscaling describe-auto-scaling-instances --region "$region" --instance-ids "$id" \
        --query 'AutoScalingInstances[0].AutoScalingGroupName' --output text) || return 0
    aws autoscaling complete-lifecycle-action --region "$region" --auto-scaling-group-name "$group" \
        --lifecycle-hook-name "$LIFECYCLE_HOOK" --instance-id "$id" --lifecycle-action-result "$LIFECYCLE_RESULT" &&
        log "${LIFECYCLE_HOOK} completed: ${LIFECYCLE_RESULT}"
}

watch
