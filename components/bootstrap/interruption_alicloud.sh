#!/bin/bash
# gpu-cluster-interruption on Alibaba Cloud: drains this node before a spot (preemptible) instance is released.
#
# Every POLL_SECONDS: instance/spot/termination-time (404 until the instance is to be reclaimed, then the release
# time, UTC); the instance is released about 5 minutes after the interruption. The metadata service is in
# security-hardening mode on gpu-cluster's instances: a token first.
# Endpoints and timings: catalog/interruption.yaml (clouds.alicloud), written to this unit's EnvironmentFile.
#
# Environment: METADATA, TOKEN_PATH, TOKEN_TTL_HEADER, TOKEN_HEADER, TOKEN_TTL_SECONDS, SPOT_PATH,
# SPOT_NOTICE_SECONDS, POLL_SECONDS (and interruption_common.sh's).
set -uo pipefail

# shellcheck source=interruption_common.sh
. "${BASH_SOURCE[0]%/*}/interruption_common.sh"

notice() {
    local token when
    token=$(curl -sf -X PUT "${METADATA}${TOKEN_PATH}" -H "${TOKEN_TTL_HEADER}: ${TOKEN_TTL_SECONDS}") || {
        log "no metadata token"
        return 0
    }
    when=$(curl -sf -H "${TOKEN_HEADER}: ${token}" "${METADATA}${SPOT_PATH}") || return 0
    [ -n "$when" ] || return 0
    NOTICE="spot:${when}"
    WHY="spot instance reclaimed at ${when}"
    DEADLINE=$(epoch "$when" $(($(now) + SPOT_NOTICE_SECONDS)))
}

watch
