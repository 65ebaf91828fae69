#!/bin/bash
# gpu-cluster: print the GPU nodes' Slurm configuration text from an SSM secret version, on the Tencent Cloud head.
#
# The version's SecretString (updated in place by `pulumi up` when the GPU nodes change: UpdateSecret) holds
# SlurmLayout.compute_config; the head reads it with the nodes' CAM role, allowed ssm:GetSecretValue on exactly it
# (tencentcloud_ssm.sh). Nothing but the text goes to stdout.
#
# Environment: ENV_FILE, and from it SLURM_CONF_SECRET, SLURM_CONF_VERSION and tencentcloud_ssm.sh's settings.
set -euo pipefail

ENV_FILE="${ENV_FILE:-/etc/gpu-cluster/slurm-conf.env}"
# shellcheck source=/dev/null
[ -r "$ENV_FILE" ] && . "$ENV_FILE"

log() { echo "gpu-cluster-slurm-conf: $*" >&2; }

# shellcheck source=tencentcloud_ssm.sh
. "${BASH_SOURCE[0]%/*}/tencentcloud_ssm.sh"

main() {
    if [ -z "${SLURM_CONF_SECRET:-}" ] || [ -z "${SLURM_CONF_VERSION:-}" ]; then
        log "no secret in ${ENV_FILE}"
        return 1
    fi
    ssm_secret "$SLURM_CONF_SECRET" "$SLURM_CONF_VERSION"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    main "$@"
fi
