#!/bin/bash
# gpu-cluster-interruption on Tencent Cloud: drains this node before a spot instance is reclaimed.
#
# Every POLL_SECONDS: spot/termination-time (404 until the instance is to be reclaimed, then the reclaim time as the
# instance's clock reads it in UTC+8, "2018-08-18 12:05:33", SPOT_TIME_ZONE). The drain lasts until that time.
# Endpoints and format: catalog/interruption.yaml (clouds.tencentcloud), written to this unit's EnvironmentFile.
#
# Environment: METADATA, SPOT_PATH, SPOT_TIME_ZONE, POLL_SECONDS (and interruption_common.sh's).
set -uo pipefail

# shellcheck source=interruption_common.sh
. "${BASH_SOURCE[0]%/*}/interruption_common.sh"

notice() {
    local when
    when=$(curl -sf "${METADATA}${SPOT_PATH}") || return 0
    [ -n "$when" ] || return 0
    NOTICE="spot:${when}"
    WHY="spot instance reclaimed at ${when} (UTC${SPOT_TIME_ZONE})"
    # no published notice length: an unreadable time drains without waiting
    DEADLINE=$(epoch "${when} ${SPOT_TIME_ZONE}" "$(now)")
}

watch
