# shellcheck shell=bash
# gpu-cluster: one SSM secret's SecretString, read with this CVM's CAM role (tccli --use-cvm-role) through SSM's
# private-network endpoint. Sourced by tencentcloud_munge_key.sh and tencentcloud_slurm_conf.sh (`bootstrap.script`
# inlines it: a node gets self-contained hooks). tccli goes once into the venv monitoring.logs' LogListener part uses
# too (catalog/logs/tencentcloud.yaml credentials.tccli); a lock keeps two hooks from building it at once.
#
# Environment (the hook's env file): REGION, SSM_ENDPOINT, TCCLI_INDEX, TCCLI_HOST, TCCLI_VENV, TCCLI_LOCK.

ensure_tccli() {
    [ -x "$TCCLI_VENV/bin/tccli" ] && return 0
    (
        flock 9
        [ -x "$TCCLI_VENV/bin/tccli" ] && exit 0
        # Ubuntu's python3 has no venv module by default; wait for the Slurm part's apt rather than fail on its lock
        python3 -m venv "$TCCLI_VENV" 2>/dev/null ||
            { apt-get -o DPkg::Lock::Timeout=600 install -y -q python3-venv && python3 -m venv "$TCCLI_VENV"; } ||
            exit 1
        "$TCCLI_VENV/bin/pip" install -q --index-url "$TCCLI_INDEX" --trusted-host "$TCCLI_HOST" tccli
    ) 9>"$TCCLI_LOCK" >&2
}

# ssm_secret NAME VERSION: the version's SecretString on stdout, nothing else (the answer stays in a local variable)
ssm_secret() {
    local answer
    ensure_tccli || { log "tccli could not be installed in ${TCCLI_VENV}"; return 1; }
    if ! answer=$("$TCCLI_VENV/bin/tccli" ssm GetSecretValue --region "$REGION" --SecretName "$1" --VersionId "$2" \
        --endpoint "$SSM_ENDPOINT" --use-cvm-role 2>/dev/null); then
        log "ssm:GetSecretValue $1 failed (the node's CAM role and its grant on the secret)"
        return 1
    fi
    python3 -c 'import json, sys; sys.stdout.write(json.load(sys.stdin)["SecretString"])' <<<"$answer" ||
        { log "no SecretString in the answer for $1"; return 1; }
}
