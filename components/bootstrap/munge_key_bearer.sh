# shellcheck shell=bash
# gpu-cluster: what the Azure and GCP MUNGE-key hooks share (sourced by azure_munge_key.sh and gcp_munge_key.sh;
# `bootstrap.script` inlines it, so a node gets one self-contained hook): their settings, and a secret read over HTTPS
# with the VM's own OAuth token from its metadata service. The token and the key never reach argv, a log or stderr:
# the Authorization header goes to curl on stdin, and the answer stays in a local variable.
#
# Environment: ENV_FILE (default /etc/gpu-cluster/munge-key.env), the hook's settings in it.
ENV_FILE="${ENV_FILE:-/etc/gpu-cluster/munge-key.env}"
# shellcheck source=/dev/null
[ -r "$ENV_FILE" ] && . "$ENV_FILE"

log() { echo "gpu-cluster-munge-key: $*" >&2; }

# a string field of a JSON object (a JWT, a token and base64 hold no quotes); "data" does not match "dataCrc32c"
field() { sed -n "s/.*\"$1\" *: *\"\([^\"]*\)\".*/\1/p" | head -n 1; }

# require_settings NAME...: each is set in ENV_FILE (the first one that is not is named)
require_settings() {
    local name
    for name in "$@"; do
        [ -n "${!name:-}" ] || { log "${name} is not set in ${ENV_FILE}"; return 1; }
    done
}

# metadata_token HEADER URL SERVICE HINT: the access_token that the metadata service at URL answers when asked with
# HEADER; SERVICE and HINT (what to check) name it in the error
metadata_token() {
    local answer token
    if ! answer=$(curl -fsS --max-time 5 --retry 3 -H "$1" "$2" 2>/dev/null); then
        log "no token from $3 ($4)"
        return 1
    fi
    token=$(field access_token <<<"$answer")
    [ -n "$token" ] || { log "$3 answered without an access_token"; return 1; }
    printf '%s\n' "$token"
}

# secret_field TOKEN URL FIELD FAILED EMPTY: GET URL with the bearer TOKEN and print FIELD of the answer (the key);
# FAILED is logged when the GET fails, EMPTY when the answer has no FIELD
secret_field() {
    local answer
    # the answer holds the key: it stays in this variable, never in a log
    if ! answer=$(printf 'Authorization: Bearer %s\n' "$1" | curl -fsS --max-time 10 --retry 3 -H @- "$2" 2>/dev/null); then
        log "$4"
        return 1
    fi
    answer=$(field "$3" <<<"$answer")
    [ -n "$answer" ] || { log "$5"; return 1; }
    printf '%s\n' "$answer"
}
