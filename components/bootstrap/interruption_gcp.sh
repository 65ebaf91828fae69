#!/bin/bash
# gpu-cluster-interruption on GCP: drains this node before Compute Engine preempts it or stops it for maintenance.
#
# - instance/preempted: TRUE once a spot or preemptible VM is preempted; the VM has 30 seconds. Read, then
#   long-polled (?wait_for_change=true&timeout_sec=POLL_SECONDS): the answer comes the moment it changes.
# - instance/maintenance-event: a terminating host maintenance (GPU VMs cannot live-migrate) is announced ahead.
# The `shutdown-script` metadata runs gpu-cluster-drain too, at every stop or deletion (a MIG's included).
# Endpoints, values and timings: catalog/interruption.yaml (clouds.gcp), written to this unit's EnvironmentFile.
#
# Environment: METADATA, HEADER, PREEMPTED_PATH, PREEMPTED_VALUE, PREEMPT_NOTICE_SECONDS, MAINTENANCE_PATH,
# MAINTENANCE_STOPS (space-separated), MAINTENANCE_NOTICE_SECONDS, POLL_SECONDS (and interruption_common.sh's).
set -uo pipefail

# shellcheck source=interruption_common.sh
. "${BASH_SOURCE[0]%/*}/interruption_common.sh"

LONG_POLLED=""

meta() { curl -sf -H "$HEADER" "${METADATA}$1"; }

preempted() {
    local value
    value=$(meta "$PREEMPTED_PATH") || return 1
    if [ "$value" != "$PREEMPTED_VALUE" ]; then
        value=$(meta "${PREEMPTED_PATH}?wait_for_change=true&timeout_sec=${POLL_SECONDS}") || return 1
        LONG_POLLED=1
    fi
    [ "$value" = "$PREEMPTED_VALUE" ]
}

notice() {
    local event stop
    LONG_POLLED=""
    if preempted; then
        NOTICE="preempted"
        WHY="Compute Engine preempted this VM"
        DEADLINE=$(($(now) + PREEMPT_NOTICE_SECONDS))
        return 0
    fi
    event=$(meta "$MAINTENANCE_PATH") || return 0
    for stop in $MAINTENANCE_STOPS; do
        if [ "$event" = "$stop" ]; then
            NOTICE="maintenance:${event}"
            WHY="host maintenance ${event}"
            DEADLINE=$(($(now) + MAINTENANCE_NOTICE_SECONDS))
        fi
    done
}

# the long poll is the wait; without it (the metadata server failed) wait as usual
pace() { [ -n "$LONG_POLLED" ] || sleep "$POLL_SECONDS"; }

watch
