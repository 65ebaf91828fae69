#!/bin/bash
# gpu-cluster: print the GPU nodes' Slurm configuration text from a DEW CSMS secret, on the Huawei Cloud head.
#
# The secret's latest version (a new version when `pulumi up` changes the GPU nodes: dew.Secret secret_text) holds
# SlurmLayout.compute_config; the head reads it with the nodes' agency, allowed to read exactly it
# (huaweicloud_csms.sh). Nothing but the text goes to stdout.
#
# Environment: ENV_FILE, and from it SLURM_CONF_SECRET and huaweicloud_csms.sh's settings.
set -euo pipefail

ENV_FILE="${ENV_FILE:-/etc/gpu-cluster/slurm-conf.env}"
# shellcheck source=/dev/null
[ -r "$ENV_FILE" ] && . "$ENV_FILE"

log() { echo "gpu-cluster-slurm-conf: $*" >&2; }

# shellcheck source=huaweicloud_csms.sh
. "${BASH_SOURCE[0]%/*}/huaweicloud_csms.sh"

main() {
    [ -n "${SLURM_CONF_SECRET:-}" ] || { log "no secret in ${ENV_FILE}"; return 1; }
    csms_secret "$SLURM_CONF_SECRET"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    main "$@"
fi
