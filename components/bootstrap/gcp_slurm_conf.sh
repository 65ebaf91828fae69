#!/bin/bash
# gpu-cluster: print the GPU nodes' Slurm configuration text from a project metadata item, on the GCP head node.
#
# The item (updated in place by `pulumi up` when the GPU nodes change) holds SlurmLayout.compute_config; every VM of
# the project reads project metadata from its metadata server (no IAM grant, no route out). Nothing but the text goes
# to stdout.
#
# Environment: ENV_FILE, and from it SLURM_CONF_KEY, METADATA_URL (catalog/slurm.yaml clouds.gcp.computeConfig).
set -euo pipefail

ENV_FILE="${ENV_FILE:-/etc/gpu-cluster/slurm-conf.env}"
# shellcheck source=/dev/null
[ -r "$ENV_FILE" ] && . "$ENV_FILE"

log() { echo "gpu-cluster-slurm-conf: $*" >&2; }

main() {
    if [ -z "${SLURM_CONF_KEY:-}" ] || [ -z "${METADATA_URL:-}" ]; then
        log "no SLURM_CONF_KEY or METADATA_URL in ${ENV_FILE}"
        return 1
    fi
    curl -fsS --max-time 10 --retry 3 -H "Metadata-Flavor: Google" "${METADATA_URL%/}/project/attributes/${SLURM_CONF_KEY}" ||
        { log "no project metadata ${SLURM_CONF_KEY}"; return 1; }
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    main "$@"
fi
