# shellcheck shell=bash
# gpu-cluster: Huawei Cloud API requests signed SDK-HMAC-SHA256 with the temporary credentials of the ECS's agency.
# Sourced by the Huawei hooks (huaweicloud_prometheus_targets.sh, huaweicloud_csms.sh; `bootstrap.script` inlines it).
# Signing and JSON with python3 (in every Ubuntu image; jq is not).
#
# Environment: METADATA_URL (the metadata service, catalog/monitoring.yaml selfHosted.huaweicloud credentials).

# hw_credentials DIR: the agency's temporary credentials (DIR/securitykey) and the project (DIR/meta_data.json) from
# the metadata service, with its session token where it hands one out (huaweicloudsdkcore MetadataAccessor: optional)
hw_credentials() {
  local token doc
  : >"$1/meta-headers"
  if token=$(curl -fsS --max-time 5 -X PUT -H "X-Metadata-Token-Ttl-Seconds: 21600" \
    "${METADATA_URL}/meta-data/latest/api/token"); then
    echo "X-Metadata-Token: ${token}" >"$1/meta-headers"
  fi
  for doc in securitykey meta_data.json; do
    if ! curl -fsS --max-time 5 -H "@$1/meta-headers" "${METADATA_URL}/openstack/latest/${doc}" >"$1/${doc}"; then
      echo "${doc} could not be read from the metadata service (no agency on this node?)" >&2
      return 1
    fi
  done
}

# hw_sign DIR METHOD HOST PATH [NAME=VALUE...]: DIR/url and DIR/headers (curl -H @file) of a request, signed as
# huaweicloudsdkcore's signer.Signer signs it; {project_id} in PATH is the node's project. Its body is DIR/body when
# that file exists (JSON: Content-Type is signed with it), else none.
hw_sign() {
  python3 - "$@" <<'PY'
import datetime, hashlib, hmac, json, os, sys
from urllib.parse import quote

work, method, host, path = sys.argv[1:5]
cred = json.load(open(os.path.join(work, "securitykey")))
cred = cred.get("credential") or cred
project = json.load(open(os.path.join(work, "meta_data.json"))).get("project_id")
if not (cred.get("access") and cred.get("secret") and project):
    sys.exit("the metadata service gave no agency credentials or project_id")
path = path.replace("{project_id}", project)
query = dict(arg.split("=", 1) for arg in sys.argv[5:])
enc = lambda s: quote(s, safe="~")
qs = "&".join("%s=%s" % (enc(k), enc(v)) for k, v in sorted(query.items()))
headers = {
    "Host": host,
    "X-Project-Id": project,
    "X-Sdk-Date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ"),
    "X-Security-Token": cred["securitytoken"],
}
body = b""
if os.path.exists(os.path.join(work, "body")):
    body = open(os.path.join(work, "body"), "rb").read()
    headers["Content-Type"] = "application/json"
signed = sorted(k.lower() for k in headers)
canonical = "%s\n%s/\n%s\n%s\n%s\n%s" % (
    method, "/".join(enc(p) for p in path.split("/")), qs,
    "".join("%s:%s\n" % (k.lower(), v.strip()) for k, v in sorted(headers.items(), key=lambda kv: kv[0].lower())),
    ";".join(signed), hashlib.sha256(body).hexdigest())
to_sign = "SDK-HMAC-SHA256\n%s\n%s" % (headers["X-Sdk-Date"], hashlib.sha256(canonical.encode()).hexdigest())
signature = hmac.new(cred["secret"].encode(), to_sign.encode(), hashlib.sha256).hexdigest()
headers["Authorization"] = "SDK-HMAC-SHA256 Access=%s, SignedHeaders=%s, Signature=%s" % (
    cred["access"], ";".join(signed), signature)
with open(os.path.join(work, "url"), "w") as f:
    f.write("https://%s%s%s" % (host, path, "?" + qs if qs else ""))
with open(os.path.join(work, "headers"), "w") as f:
    f.write("".join("%s: %s\n" % kv for kv in headers.items()))
PY
}
