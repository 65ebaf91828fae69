#!/bin/bash
# gpu-cluster: print the Slurm accounting database's password from Secret Manager, for slurm_dbd.sh on the head (GCP).
#
# The password is the payload of one Secret Manager secret of the cluster's own; the head's own service account holds
# roles/secretmanager.secretAccessor on exactly that secret (the GPU and login nodes run as another account). This
# hook asks the metadata server for the account's access token and reads the secret's latest version, whose
# payload.data is the password, base64. Nothing but the password goes to stdout; the caller puts it into
# slurmdbd.conf (0600, SlurmUser). The token and the password never reach argv, a log or stderr. The shared library's
# messages keep its own prefix (gpu-cluster-munge-key): a second `log` would shadow it in the inlined script.
#
# Environment: ENV_FILE (default /etc/gpu-cluster/db-password.env), and from it DB_PASSWORD_SECRET
# (projects/<project>/secrets/<id>), METADATA_TOKEN_URL, SECRET_MANAGER_URL (catalog/slurm.yaml clouds.gcp hook).
set -euo pipefail

ENV_FILE="${ENV_FILE:-/etc/gpu-cluster/db-password.env}"
# shellcheck source=munge_key_bearer.sh
. "${BASH_SOURCE[0]%/*}/munge_key_bearer.sh"

main() {
    local token data
    require_settings DB_PASSWORD_SECRET METADATA_TOKEN_URL SECRET_MANAGER_URL || return 1
    token=$(metadata_token "Metadata-Flavor: Google" "$METADATA_TOKEN_URL" \
        "the metadata server" "has this VM a service account?") || return 1
    data=$(secret_field "$token" "${SECRET_MANAGER_URL%/}/${DB_PASSWORD_SECRET}/versions/latest:access" data \
        "reading ${DB_PASSWORD_SECRET} failed (the secret accessor grant, or the route to secretmanager.googleapis.com)" \
        "${DB_PASSWORD_SECRET} has no payload") || return 1
    # the payload is the password itself, sent base64 by the API
    base64 -d <<<"$data" || { echo "gpu-cluster-db-password: ${DB_PASSWORD_SECRET}: the payload is not base64" >&2; return 1; }
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    main "$@"
fi
