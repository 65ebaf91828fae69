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
# SECRET_MANAGER_URL (catalog/slurm.yaml clouds.gcp).
set -euo pipefail

# shellcheck source=munge_key_bearer.sh
. "${BASH_SOURCE[0]%/*}/munge_key_bearer.sh"

main() {
    local token
    require_settings MUNGE_SECRET METADATA_TOKEN_URL SECRET_MANAGER_URL || return 1
    token=$(metadata_token "Metadata-Flavor: Google" "$METADATA_TOKEN_URL" \
        "the metadata server" "has this VM a service account?") || return 1
    secret_field "$token" "${SECRET_MANAGER_URL%/}/${MUNGE_SECRET}/versions/latest:access" data \
        "reading ${MUNGE_SECRET} failed (the secret accessor grant, or the route to secretmanager.googleapis.com)" \
        "${MUNGE_SECRET} has no payload"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    main "$@"
fi
