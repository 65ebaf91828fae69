# shellcheck shell=bash
# gpu-cluster: Alibaba Cloud RPC API calls from a node, signed in shell (sourced by the alicloud_*.sh hooks).
#
# The aliyun CLI is not on Alibaba's public Ubuntu images, so requests are signed here: RPC signature v1,
# Base64(HMAC-SHA1("<AccessKeySecret>&", "GET&%2F&" + encode(canonical query))), with the STS credentials of the
# node's RAM role from the metadata service. `bootstrap.script` inlines this file where a hook sources it, so a
# node gets one self-contained script.
#
# Environment: METADATA (the metadata service), METADATA_TOKEN_URL (its token endpoint).
METADATA="${METADATA:-http://100.100.100.200/latest/meta-data}"
# The nodes' metadata service is in security-hardening mode (http_tokens required): a GET needs a token from a PUT
# first. Path, headers and TTL as catalog/interruption.yaml clouds.alicloud sources them (ECS "View instance
# metadata": PUT /latest/api/token with X-aliyun-ecs-metadata-token-ttl-seconds, 1 to 21600; the token in
# X-aliyun-ecs-metadata-token on every GET).
METADATA_TOKEN_URL="${METADATA_TOKEN_URL:-http://100.100.100.200/latest/api/token}"

# RFC 3986 percent-encoding as Alibaba's RPC signature wants it: only A-Z a-z 0-9 - _ . ~ stay literal.
encode() {
    local LC_ALL=C
    local text="$1" out="" char i
    for ((i = 0; i < ${#text}; i++)); do
        char="${text:i:1}"
        case "$char" in
            [A-Za-z0-9._~-]) out+="$char" ;;
            *) printf -v char '%%%02X' "'$char" && out+="$char" ;;
        esac
    done
    printf '%s' "$out"
}

# The canonical query of KEY=VALUE arguments: each side encoded, sorted by key, joined with '&'.
canonical_query() {
    local pair
    for pair in "$@"; do
        printf '%s=%s\n' "$(encode "${pair%%=*}")" "$(encode "${pair#*=}")"
    done | LC_ALL=C sort | paste -sd '&' -
}

# rpc_signature SECRET KEY=VALUE...: Base64(HMAC-SHA1(SECRET&, "GET&%2F&" + encode(canonical query)))
rpc_signature() {
    local secret="$1"
    shift
    printf 'GET&%%2F&%s' "$(encode "$(canonical_query "$@")")" |
        openssl dgst -sha1 -hmac "${secret}&" -binary | openssl base64 -A
}

# a metadata token valid for 5 minutes, more than any one hook runs
metadata_token() {
    curl -fsS --max-time 5 --retry 3 -X PUT -H "X-aliyun-ecs-metadata-token-ttl-seconds: 300" "$METADATA_TOKEN_URL"
}

metadata() {
    local token
    token=$(metadata_token) || return 1
    curl -fsS --max-time 5 --retry 3 -H "X-aliyun-ecs-metadata-token: ${token}" "${METADATA}/$1"
}

# a string field of a flat JSON object
field() { sed -n "s/.*\"$1\" *: *\"\([^\"]*\)\".*/\1/p" | head -n 1; }

# The node's RAM role name (empty without one).
ram_role() { metadata ram/security-credentials/ | head -n 1; }

# rpc_call ENDPOINT ROLE ACTION VERSION KEY=VALUE...: the signed GET with the role's STS credentials; the answer on
# stdout (it may hold a secret: callers keep it out of logs), curl's failure as the status.
rpc_call() {
    local endpoint="$1" role="$2" action="$3" version="$4"
    shift 4
    local creds key secret token nonce stamp signature
    creds=$(metadata "ram/security-credentials/${role}")
    key=$(field AccessKeyId <<<"$creds")
    secret=$(field AccessKeySecret <<<"$creds")
    token=$(field SecurityToken <<<"$creds")
    nonce=$(cat /proc/sys/kernel/random/uuid 2>/dev/null || date +%s%N)
    stamp=$(date -u +%Y-%m-%dT%H:%M:%SZ)
    local params=(
        "AccessKeyId=${key}" "Action=${action}" "Format=JSON" "SecurityToken=${token}" "SignatureMethod=HMAC-SHA1"
        "SignatureNonce=${nonce}" "SignatureVersion=1.0" "Timestamp=${stamp}" "Version=${version}" "$@"
    )
    signature=$(rpc_signature "$secret" "${params[@]}")
    curl -fsS --max-time 10 --retry 3 "${endpoint}/?$(canonical_query "${params[@]}")&Signature=$(encode "$signature")"
}
