#!/bin/bash
# gpu-cluster: publish this node's mean GPU utilisation to Azure Monitor, as a custom metric of its scale set, for
# the scale set's autoscale setting (catalog/scaling/azure.yaml).
#
# Every INTERVAL_SECONDS: read DCGM_FI_DEV_GPU_UTIL from the local DCGM exporter and average it over the GPUs, ask
# the Instance Metadata Service for this VM's resource id and region and for a token for Azure Monitor (the node's
# one user-assigned identity, which holds Monitoring Metrics Publisher on the scale set only), then POST the sample
# to https://REGION.monitoring.azure.com/SCALE_SET_ID/metrics. The token never reaches argv or a log (the
# Authorization header goes to curl on stdin). A failed sample is logged and the next one tried.
#
# Environment (ENV_FILE): DCGM_URL, METRIC_NAMESPACE, METRIC_NAME, INTERVAL_SECONDS, IMDS_TOKEN_URL,
# IMDS_API_VERSION, TOKEN_RESOURCE; IMDS_URL (default http://169.254.169.254/metadata) for tests.
# `--once`: one sample, exit status its result.
set -euo pipefail

ENV_FILE="${ENV_FILE:-/etc/gpu-cluster/gpu-metric.env}"
# shellcheck source=/dev/null
[ -r "$ENV_FILE" ] && . "$ENV_FILE"
IMDS_URL="${IMDS_URL:-http://169.254.169.254/metadata}"
# IMDS leaf queries in text form (learn.microsoft.com/azure/virtual-machines/instance-metadata-service)
IMDS_INSTANCE_API_VERSION="2021-02-01"

log() { echo "gpu-cluster-gpu-metric: $*" >&2; }

# a string field of a flat JSON object (a JWT holds no quotes)
field() { sed -n "s/.*\"$1\" *: *\"\([^\"]*\)\".*/\1/p" | head -n 1; }

imds_text() {
    curl -fsS --max-time 5 -H "Metadata: true" \
        "${IMDS_URL}/instance/compute/$1?api-version=${IMDS_INSTANCE_API_VERSION}&format=text"
}

mean_utilisation() {
    curl -fsS --max-time 10 "$DCGM_URL" |
        awk '$1 ~ /^DCGM_FI_DEV_GPU_UTIL([{]|$)/ { s += $NF; n++ } END { if (n) printf "%.1f\n", s / n }'
}

publish_once() {
    local util resource region vm scale_set answer token now body
    if ! util=$(mean_utilisation) || [ -z "$util" ]; then
        log "no DCGM_FI_DEV_GPU_UTIL sample from ${DCGM_URL} (exporter starting?)"
        return 1
    fi
    if ! resource=$(imds_text resourceId) || ! region=$(imds_text location) || ! vm=$(imds_text name); then
        log "the Instance Metadata Service did not answer"
        return 1
    fi
    # a Uniform scale set's instance: .../virtualMachineScaleSets/NAME/virtualMachines/N
    scale_set="${resource%/virtualMachines/*}"
    if [ "$scale_set" = "$resource" ]; then
        log "${resource} is not a scale set instance"
        return 1
    fi
    if ! answer=$(curl -fsS --max-time 5 --retry 3 -H "Metadata: true" \
        "${IMDS_TOKEN_URL}?api-version=${IMDS_API_VERSION}&resource=${TOKEN_RESOURCE}" 2>/dev/null); then
        log "no token from the Instance Metadata Service (is a managed identity on this VM?)"
        return 1
    fi
    token=$(field access_token <<<"$answer")
    [ -n "$token" ] || { log "the metadata service answered without an access_token"; return 1; }
    now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
    body=$(printf '{"time":"%s","data":{"baseData":{"metric":"%s","namespace":"%s","dimNames":["Instance"],"series":[{"dimValues":["%s"],"min":%s,"max":%s,"sum":%s,"count":1}]}}}' \
        "$now" "$METRIC_NAME" "$METRIC_NAMESPACE" "$vm" "$util" "$util" "$util")
    if ! printf 'Authorization: Bearer %s\n' "$token" | curl -fsS --max-time 10 -X POST -H @- \
        -H "Content-Type: application/json" --data "$body" "https://${region}.monitoring.azure.com${scale_set}/metrics" \
        >/dev/null; then
        log "Azure Monitor refused the sample (role Monitoring Metrics Publisher on the scale set?)"
        return 1
    fi
    log "published ${METRIC_NAMESPACE}/${METRIC_NAME} = ${util} for ${vm}"
}

main() {
    for name in DCGM_URL METRIC_NAMESPACE METRIC_NAME INTERVAL_SECONDS IMDS_TOKEN_URL IMDS_API_VERSION TOKEN_RESOURCE; do
        [ -n "${!name:-}" ] || { log "${name} is not set in ${ENV_FILE}"; return 1; }
    done
    if [ "${1:-}" = "--once" ]; then
        publish_once
        return
    fi
    while true; do
        publish_once || true
        sleep "$INTERVAL_SECONDS"
    done
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    main "$@"
fi
