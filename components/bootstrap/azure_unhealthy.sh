#!/bin/bash
# gpu-cluster: the unhealthy hook on Azure scale sets (health.action: replace), run by the health check on failure.
#
# Nothing is called from the node, and the node's identity holds no role for it: the health endpoint
# (gpu-cluster-health-http.socket, from /var/lib/gpu-cluster/health.json) now answers Unhealthy, the scale
# set's Application Health extension reports that, and the scale set's automatic instance repairs delete this
# instance and create a new one (after the repairs grace period). This hook makes sure the endpoint listens
# and says what happens next in the journal.
set -uo pipefail

SOCKET="${SOCKET:-gpu-cluster-health-http.socket}"

log() { echo "gpu-cluster-unhealthy: $*" >&2; }

if ! systemctl is-active --quiet "$SOCKET"; then
    log "${SOCKET} is not listening: starting it"
    if ! systemctl start "$SOCKET"; then
        log "could not start ${SOCKET}: the extension finds no endpoint (Unknown), which also triggers a repair"
        exit 1
    fi
fi
log "Unhealthy reported to the Application Health extension: automatic repairs will replace this instance"
