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
# Signing (huaweicloud_sign.sh) and JSON with python3 (in every Ubuntu image; jq is not).
# Environment: ECS_ENDPOINT, METADATA_URL, CLUSTER, CLUSTER_TAG, STACK, STACK_TAG, SKIP_NAMES, TARGETS_FILE.
set -euo pipefail

mkdir -p "${TARGETS_FILE%/*}"
work=$(mktemp -d)
tmp=$(mktemp "${TARGETS_FILE}.XXXXXX")
trap 'rm -rf "$work" "$tmp"' EXIT

# shellcheck source=huaweicloud_sign.sh
. "${BASH_SOURCE[0]%/*}/huaweicloud_sign.sh"

hw_credentials "$work" || { echo "ListServersDetails: no credentials; ${TARGETS_FILE} unchanged" >&2; exit 1; }

# the request of one page: ${work}/url and ${work}/headers
sign() {
  hw_sign "$work" GET "$ECS_ENDPOINT" "/v1/{project_id}/cloudservers/detail" limit=100 "offset=$1" status=ACTIVE \
    "tags=${CLUSTER_TAG}=${CLUSTER}"
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
