#!/bin/bash
# gpu-cluster: read this cluster's TMP instance's data-write token (monitoring.prometheus managed on Tencent Cloud)
# with the login node's CAM role and keep it where the Prometheus agent and Grafana read it; their units require
# this one, so it runs before either starts.
#
# TMP takes remote write only with that token (basic auth: the APPID and the token; no CAM signature), and the
# provider does not output it, so it is read at boot (DescribePrometheusInstances InstanceSet[0].AuthToken, tccli
# --use-cvm-role; the role may describe this instance only) and never put in the user data. TOKEN_FILE (the remote
# write's password_file): 0440, group TOKEN_GROUP (the agent's). GRAFANA_ENV (Grafana's EnvironmentFile, read by
# systemd as root): 0600, GF_TMP_TOKEN for the data source's basicAuthPassword. The token is never printed.
#
# Environment: ENV_FILE, and from it TMP_INSTANCE, MONITOR_ENDPOINT, TOKEN_FILE, TOKEN_GROUP, GRAFANA_ENV and
# tencentcloud_ssm.sh's tccli settings.
set -euo pipefail

ENV_FILE="${ENV_FILE:-/etc/gpu-cluster/tmp-token.env}"
# shellcheck source=/dev/null
[ -r "$ENV_FILE" ] && . "$ENV_FILE"

log() { echo "gpu-cluster-tmp-token: $*" >&2; }

# shellcheck source=tencentcloud_ssm.sh
. "${BASH_SOURCE[0]%/*}/tencentcloud_ssm.sh"

main() {
    [ -n "${TMP_INSTANCE:-}" ] && [ -n "${TOKEN_FILE:-}" ] || { log "no instance in ${ENV_FILE}"; return 1; }
    local answer token
    ensure_tccli || { log "tccli could not be installed in ${TCCLI_VENV}"; return 1; }
    if ! answer=$("$TCCLI_VENV/bin/tccli" monitor DescribePrometheusInstances --region "$REGION" \
        --InstanceIds "[\"$TMP_INSTANCE\"]" --endpoint "$MONITOR_ENDPOINT" --use-cvm-role 2>/dev/null); then
        log "monitor:DescribePrometheusInstances $TMP_INSTANCE failed (the node's CAM role and its grant on it)"
        return 1
    fi
    if ! token=$(python3 -c 'import json, sys; print(json.load(sys.stdin)["InstanceSet"][0]["AuthToken"])' \
        <<<"$answer" 2>/dev/null) || [ -z "$token" ]; then
        log "no AuthToken for $TMP_INSTANCE in the answer"
        return 1
    fi
    umask 077
    printf '%s' "$token" >"$TOKEN_FILE.new"
    chgrp "$TOKEN_GROUP" "$TOKEN_FILE.new" && chmod 0440 "$TOKEN_FILE.new"
    mv -f "$TOKEN_FILE.new" "$TOKEN_FILE"
    printf 'GF_TMP_TOKEN=%s\n' "$token" >"$GRAFANA_ENV.new"
    mv -f "$GRAFANA_ENV.new" "$GRAFANA_ENV"
    log "token of $TMP_INSTANCE written"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    main "$@"
fi
