#!/bin/bash
# gpu-cluster: print the cluster's MUNGE key (base64) for the Slurm parts, on Tencent Cloud.
#
# The key is the SecretString of one SSM secret of the cluster's own (MUNGE_SECRET, version MUNGE_SECRET_VERSION);
# the nodes' CAM role may call ssm:GetSecretValue on exactly that secret (and the head's configuration). Read with
# the role through tccli (tencentcloud_ssm.sh). Nothing but the key goes to stdout; the caller decodes it into
# /etc/munge/munge.key. Errors go to stderr without the key.
#
# Environment: ENV_FILE, and from it MUNGE_SECRET, MUNGE_SECRET_VERSION and tencentcloud_ssm.sh's settings.
set -euo pipefail

ENV_FILE="${ENV_FILE:-/etc/gpu-cluster/munge-key.env}"
# shellcheck source=/dev/null
[ -r "$ENV_FILE" ] && . "$ENV_FILE"

log() { echo "gpu-cluster-munge-key: $*" >&2; }

# shellcheck source=tencentcloud_ssm.sh
. "${BASH_SOURCE[0]%/*}/tencentcloud_ssm.sh"

main() {
    [ -n "${MUNGE_SECRET:-}" ] && [ -n "${MUNGE_SECRET_VERSION:-}" ] || { log "no secret in ${ENV_FILE}"; return 1; }
    ssm_secret "$MUNGE_SECRET" "$MUNGE_SECRET_VERSION"
    echo
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    main "$@"
fi
