#!/bin/bash
# gpu-cluster: the login node's Prometheus targets on Huawei Cloud (Prometheus 2.53 has no Huawei discovery), run by
# a systemd timer. ECS ListServersDetails (GET /v1/{project_id}/cloudservers/detail on ECS_ENDPOINT, SDK-HMAC-SHA256
# signed with the temporary credentials of the login node's agency from the metadata service) lists this cluster's
# running servers (tags CLUSTER_TAG=CLUSTER, status ACTIVE), page by page (offset is the page number, limit 100);
# the login node (its name in SKIP_NAMES) and another stack's servers (a STACK_TAG other than STACK) are left out.
# The list is written as file_sd JSON to TARGETS_FILE, one target group per node: its fixed address and
# __meta_huaweicloud_* labels the scrape jobs relabel (the job adds the exporter's port).
# Atomic: a temporary file beside it, renamed over it only when complete and changed; on any error the old list stays
# (Prometheus keeps scraping it) and the status is non-zero, the API's answer on stderr.
# Signing and JSON with python3 (in every Ubuntu image; jq is not).
# Environment: ECS_ENDPOINT, METADATA_URL, CLUSTER, CLUSTER_TAG, STACK, STACK_TAG, SKIP_NAMES, TARGETS_FILE.
set -euo pipefail

mkdir -p "${TARGETS_FILE%/*}"
work=$(mktemp -d)
tmp=$(mktemp "${TARGETS_FILE}.XXXXXX")
trap 'rm -rf "$work" "$tmp"' EXIT

# the metadata session token where the service hands one out (huaweicloudsdkcore MetadataAccessor: optional)
: >"${work}/meta-headers"
if token=$(curl -fsS --max-time 5 -X PUT -H "X-Metadata-Token-Ttl-Seconds: 21600" \
  "${METADATA_URL}/meta-data/latest/api/token"); then
  echo "X-Metadata-Token: ${token}" >"${work}/meta-headers"
fi
for doc in securitykey meta_data.json; do
  if ! curl -fsS --max-time 5 -H "@${work}/meta-headers" "${METADATA_URL}/openstack/latest/${doc}" \
    >"${work}/${doc}"; then
    echo "ListServersDetails: ${doc} could not be read from the metadata service (no agency on this node?)" >&2
    exit 1
  fi
done

# the request of one page: ${work}/url and ${work}/headers (curl -H @file), signed as huaweicloudsdkcore's
# signer.Signer signs a GET without a body
sign() {
  python3 - "$work" "$1" <<'PY'
import datetime, hashlib, hmac, json, os, sys
from urllib.parse import quote

work, page = sys.argv[1], sys.argv[2]
cred = json.load(open(os.path.join(work, "securitykey")))
cred = cred.get("credential") or cred
project = json.load(open(os.path.join(work, "meta_data.json"))).get("project_id")
if not (cred.get("access") and cred.get("secret") and project):
    sys.exit("the metadata service gave no agency credentials or project_id")
env = os.environ
host = env["ECS_ENDPOINT"]
path = "/v1/%s/cloudservers/detail" % project
query = {"limit": "100", "offset": page, "status": "ACTIVE", "tags": "%s=%s" % (env["CLUSTER_TAG"], env["CLUSTER"])}
enc = lambda s: quote(s, safe="~")
qs = "&".join("%s=%s" % (enc(k), enc(v)) for k, v in sorted(query.items()))
headers = {
    "Host": host,
    "X-Project-Id": project,
    "X-Sdk-Date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ"),
    "X-Security-Token": cred["securitytoken"],
}
signed = sorted(k.lower() for k in headers)
canonical = "GET\n%s/\n%s\n%s\n%s\n%s" % (
    "/".join(enc(p) for p in path.split("/")), qs,
    "".join("%s:%s\n" % (k.lower(), v.strip()) for k, v in sorted(headers.items(), key=lambda kv: kv[0].lower())),
    ";".join(signed), hashlib.sha256(b"").hexdigest())
to_sign = "SDK-HMAC-SHA256\n%s\n%s" % (headers["X-Sdk-Date"], hashlib.sha256(canonical.encode()).hexdigest())
signature = hmac.new(cred["secret"].encode(), to_sign.encode(), hashlib.sha256).hexdigest()
headers["Authorization"] = "SDK-HMAC-SHA256 Access=%s, SignedHeaders=%s, Signature=%s" % (
    cred["access"], ";".join(signed), signature)
with open(os.path.join(work, "url"), "w") as f:
    f.write("https://%s%s?%s" % (host, path, qs))
with open(os.path.join(work, "headers"), "w") as f:
    f.write("".join("%s: %s\n" % kv for kv in headers.items()))
PY
}

page=1 n=0
while :; do
  n=$((n + 1))
  sign "$page" || { echo "${TARGETS_FILE} unchanged" >&2; exit 1; }
  if ! curl -fsS --max-time 20 -H "@${work}/headers" "$(cat "${work}/url")" >"${work}/${n}.json"; then
    echo "ListServersDetails (page ${n}) failed; ${TARGETS_FILE} unchanged: $(head -c 500 "${work}/${n}.json")" >&2
    exit 1
  fi
  # the next page ("" after the last), or a failure when the answer is not a ListServersDetails answer
  page=$(python3 -c '
import json, sys
doc = json.load(open(sys.argv[1]))
if not isinstance(doc, dict) or "servers" not in doc:
    e = doc.get("error") or doc if isinstance(doc, dict) else {}
    sys.exit("not a ListServersDetails answer: %s: %s" % (e.get("code", e.get("error_code", "")),
             e.get("message", e.get("error_msg", ""))))
page, seen = int(sys.argv[2]), (int(sys.argv[2]) - 1) * 100 + len(doc["servers"])
print(page + 1 if doc["servers"] and seen < int(doc.get("count") or 0) else "")
' "${work}/${n}.json" "$page") || { echo "${TARGETS_FILE} unchanged" >&2; exit 1; }
  [ -n "$page" ] || break
done

python3 - "$work" "$n" >"$tmp" <<'PY'
import json, os, sys

work, count = sys.argv[1], int(sys.argv[2])
skip = set(os.environ.get("SKIP_NAMES", "").split())
cluster_tag, cluster = os.environ["CLUSTER_TAG"], os.environ["CLUSTER"]
stack_tag, stack = os.environ["STACK_TAG"], os.environ["STACK"]
groups = []
for n in range(1, count + 1):
    for s in json.load(open(os.path.join(work, "%d.json" % n)))["servers"]:
        tags = dict(t.split("=", 1) for t in s.get("tags") or [] if "=" in t)  # "key=value" strings
        if s.get("name") in skip or tags.get(cluster_tag) != cluster or tags.get(stack_tag, stack) != stack:
            continue
        ips = [a["addr"] for net in (s.get("addresses") or {}).values() for a in net
               if a.get("OS-EXT-IPS:type") == "fixed" and str(a.get("version", 4)) == "4"]
        if not ips:
            continue  # no address yet: the next run lists it
        labels = {
            "__meta_huaweicloud_private_ip": ips[0],
            "__meta_huaweicloud_hostname": s.get("OS-EXT-SRV-ATTR:hostname") or s.get("name") or "",
            "__meta_huaweicloud_instance_id": s.get("id", ""),
            "__meta_huaweicloud_instance_type": (s.get("flavor") or {}).get("id", ""),
        }
        groups.append({"targets": [ips[0]], "labels": labels})
groups.sort(key=lambda g: g["labels"]["__meta_huaweicloud_instance_id"])
json.dump(groups, sys.stdout, indent=1, sort_keys=True)
print()
PY

if cmp -s "$tmp" "$TARGETS_FILE"; then
  exit 0 # unchanged: no rename, no reload
fi
chmod 0644 "$tmp"
mv -f "$tmp" "$TARGETS_FILE"
