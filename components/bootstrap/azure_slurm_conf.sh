#!/bin/bash
# gpu-cluster: print the GPU nodes' Slurm configuration text from the head VM's userData, on Azure.
#
# `pulumi up` updates the head VM's userData in place when the GPU nodes change (no stop, no reboot); it holds
# SlurmLayout.compute_config, base64. Any process on the VM reads it from the Instance Metadata Service (no identity
# needed). Nothing but the decoded text goes to stdout.
#
# Environment: ENV_FILE, and from it USER_DATA_URL, IMDS_API_VERSION (catalog/slurm.yaml clouds.azure.computeConfig).
set -euo pipefail

ENV_FILE="${ENV_FILE:-/etc/gpu-cluster/slurm-conf.env}"
# shellcheck source=/dev/null
[ -r "$ENV_FILE" ] && . "$ENV_FILE"

log() { echo "gpu-cluster-slurm-conf: $*" >&2; }

main() {
    local encoded
    if [ -z "${USER_DATA_URL:-}" ] || [ -z "${IMDS_API_VERSION:-}" ]; then
        log "no USER_DATA_URL or IMDS_API_VERSION in ${ENV_FILE}"
        return 1
    fi
    if ! encoded=$(curl -fsS --max-time 10 --retry 3 --noproxy '*' -H "Metadata: true" \
        "${USER_DATA_URL}?api-version=${IMDS_API_VERSION}&format=text"); then
        log "no userData from the Instance Metadata Service"
        return 1
    fi
    [ -n "$encoded" ] || { log "the VM has no userData"; return 1; }
    base64 -d <<<"$encoded" || { log "userData is not base64"; return 1; }
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    main "$@"
fi
