#!/bin/bash
# gpu-cluster: print the cluster's MUNGE key (base64) for the Slurm parts, on GCP.
#
# The key is the payload of one Secret Manager secret of the cluster's own; the node's service account holds
# roles/secretmanager.secretAccessor on exactly that secret. This hook asks the metadata server for the service
# account's access token and reads the secret's latest version, whose payload.data is the key, base64. Nothing but
# the key goes to stdout; the caller decodes it into /etc/munge/munge.key. The token and the key never reach argv,
# a log or stderr (the Authorization header goes to curl on stdin).
#
# Environment: ENV_FILE, and from it MUNGE_SECRET (projects/<project>/secrets/<id>), METADATA_TOKEN_URL,
# SECRET_MANAGER_URL (catalog/gcp_slurm.yaml).
set -euo pipefail

ENV_FILE="${ENV_FILE:-/etc/gpu-cluster/munge-key.env}"
# shellcheck source=/dev/null
[ -r "$ENV_FILE" ] && . "$ENV_FILE"

log() { echo "gpu-cluster-munge-key: $*" >&2; }

# a string field of a JSON object (a token and base64 hold no quotes); "data" does not match "dataCrc32c"
field() { sed -n "s/.*\"$1\" *: *\"\([^\"]*\)\".*/\1/p" | head -n 1; }

main() {
    local answer token
    for name in MUNGE_SECRET METADATA_TOKEN_URL SECRET_MANAGER_URL; do
        [ -n "${!name:-}" ] || { log "${name} is not set in ${ENV_FILE}"; return 1; }
    done
    if ! answer=$(curl -fsS --max-time 5 --retry 3 -H "Metadata-Flavor: Google" "$METADATA_TOKEN_URL" 2>/dev/null); then
        log "no token from the metadata server (has this VM a service account?)"
        return 1
    fi
    token=$(field access_token <<<"$answer")
    [ -n "$token" ] || { log "the metadata server answered without an access_token"; return 1; }
    # the answer holds the key: it stays in this variable, never in a log
    if ! answer=$(printf 'Authorization: Bearer %s\n' "$token" | curl -fsS --max-time 10 --retry 3 -H @- \
        "${SECRET_MANAGER_URL%/}/${MUNGE_SECRET}/versions/latest:access" 2>/dev/null); then
        log "reading ${MUNGE_SECRET} failed (the secret accessor grant, or the route to secretmanager.googleapis.com)"
        return 1
    fi
    answer=$(field data <<<"$answer")
    [ -n "$answer" ] || { log "${MUNGE_SECRET} has no payload"; return 1; }
    printf '%s\n' "$answer"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    main "$@"
fi
