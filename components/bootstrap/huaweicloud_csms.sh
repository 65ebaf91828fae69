# shellcheck shell=bash
# gpu-cluster: one DEW CSMS secret's text, read with this ECS's agency (ShowSecretVersion, signed by
# huaweicloud_sign.sh). Sourced by huaweicloud_munge_key.sh and huaweicloud_slurm_conf.sh (`bootstrap.script` inlines
# it: a node gets self-contained hooks).
#
# Environment (the hook's env file): METADATA_URL, CSMS_ENDPOINT, and the version to read, CSMS_VERSION (latest).

# shellcheck source=huaweicloud_sign.sh
. "${BASH_SOURCE[0]%/*}/huaweicloud_sign.sh"

# csms_secret NAME: the version's secret_string on stdout, nothing else (the answer stays in a private directory)
csms_secret() {
  local work status=0
  work=$(mktemp -d) || return 1
  chmod 0700 "$work"
  if ! hw_credentials "$work" ||
    ! hw_sign "$work" GET "$CSMS_ENDPOINT" "/v1/{project_id}/secrets/$1/versions/${CSMS_VERSION}"; then
    log "no agency credentials to read the secret $1 with"
    status=1
  elif ! curl -fsS --max-time 20 -H "@${work}/headers" "$(cat "${work}/url")" >"${work}/answer"; then
    log "csms:secretVersion:get $1 failed (the node's agency and its grant on the secret)"
    status=1
  elif ! python3 -c 'import json, sys; sys.stdout.write(json.load(open(sys.argv[1]))["version"]["secret_string"])' \
    "${work}/answer"; then
    log "no secret_string in the answer for $1"
    status=1
  fi
  rm -rf "$work"
  return "$status"
}
