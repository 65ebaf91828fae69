#!/bin/bash
# gpu-cluster: print the GPU nodes' Slurm configuration text from an OOS parameter, on the Alibaba Cloud head node.
#
# The parameter (a String, updated in place by `pulumi up` when the GPU nodes change) holds
# SlurmLayout.compute_config. This hook calls OOS GetParameter (API version 2019-06-01) through OOS's VPC domain
# (OOS_ENDPOINT) with the node RAM role's STS credentials from the metadata service; the role may call
# oos:GetParameter on exactly that parameter. The request is signed in shell (alicloud_rpc.sh); the answer's
# Parameter.Value is JSON-decoded with python3 (cloud-init's own interpreter, on every image). Nothing but the text
# goes to stdout.
#
# Environment: ENV_FILE, METADATA (metadata service), and from the env file SLURM_CONF_PARAMETER, OOS_ENDPOINT.
set -euo pipefail

ENV_FILE="${ENV_FILE:-/etc/gpu-cluster/slurm-conf.env}"
# shellcheck source=/dev/null
[ -r "$ENV_FILE" ] && . "$ENV_FILE"

log() { echo "gpu-cluster-slurm-conf: $*" >&2; }

# shellcheck source=alicloud_rpc.sh
. "${BASH_SOURCE[0]%/*}/alicloud_rpc.sh"

main() {
    local role answer
    if [ -z "${SLURM_CONF_PARAMETER:-}" ] || [ -z "${OOS_ENDPOINT:-}" ]; then
        log "no parameter or endpoint in ${ENV_FILE}"
        return 1
    fi
    role=$(ram_role)
    [ -n "$role" ] || { log "no RAM role attached: cannot call OOS"; return 1; }
    if ! answer=$(rpc_call "$OOS_ENDPOINT" "$role" GetParameter 2019-06-01 "Name=${SLURM_CONF_PARAMETER}"); then
        log "oos:GetParameter ${SLURM_CONF_PARAMETER} failed (role ${role})"
        return 1
    fi
    python3 -c 'import json, sys; sys.stdout.write(json.load(sys.stdin)["Parameter"]["Value"])' <<<"$answer" ||
        { log "no Parameter.Value in the answer"; return 1; }
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    main "$@"
fi
