#!/bin/bash
# gpu-cluster: the login node's Prometheus targets on Tencent Cloud (Prometheus 2.53 has no Tencent discovery), run
# by a systemd timer. CVM DescribeInstances (POST to CVM_ENDPOINT, TC3-HMAC-SHA256 signed with the temporary
# credentials of the login node's CAM role from the metadata service) lists this cluster's running instances
# (Filters tag:CLUSTER_TAG=CLUSTER and instance-state RUNNING), page by page (Offset, Limit 100); the login node (its
# instance name in SKIP_NAMES) and another stack's instances (a STACK_TAG other than STACK) are left out. The list
# is written as file_sd JSON to TARGETS_FILE, one target group per node: its private address and
# __meta_tencentcloud_* labels the scrape jobs relabel (the job adds the exporter's port).
# Atomic: a temporary file beside it, renamed over it only when complete and changed; on any error the old list stays
# (Prometheus keeps scraping it) and the status is non-zero, the API's answer on stderr.
# Signing and JSON with python3 (in every Ubuntu image; jq is not).
# Environment: CVM_ENDPOINT, CVM_API_VERSION, CREDENTIALS_URL, REGION, CLUSTER, CLUSTER_TAG, STACK, STACK_TAG,
# SKIP_NAMES, TARGETS_FILE.
set -euo pipefail

role=$(curl -fsS --max-time 5 "$CREDENTIALS_URL") || role=""
role=${role%%[[:space:]]*}
[ -n "$role" ] || { echo "DescribeInstances: no CAM role on this node (${CREDENTIALS_URL})" >&2; exit 1; }

mkdir -p "${TARGETS_FILE%/*}"
work=$(mktemp -d)
tmp=$(mktemp "${TARGETS_FILE}.XXXXXX")
trap 'rm -rf "$work" "$tmp"' EXIT
if ! curl -fsS --max-time 5 "${CREDENTIALS_URL}${role}" >"${work}/credentials.json"; then
  echo "DescribeInstances: the credentials of CAM role ${role} could not be read" >&2
  exit 1
fi

# the request of one page: ${work}/body and ${work}/headers (curl -H @file), signed as tencentcloud-sdk-python's
# AbstractClient._build_req_with_tc3_signature signs a POST of application/json
sign() {
  python3 - "$work" "$1" <<'PY'
import datetime, hashlib, hmac, json, os, sys, time

work, offset = sys.argv[1], int(sys.argv[2])
cred = json.load(open(os.path.join(work, "credentials.json")))
if cred.get("Code") != "Success":
    sys.exit("the role's credentials: Code %s" % cred.get("Code"))
env = os.environ
host, service = env["CVM_ENDPOINT"], env["CVM_ENDPOINT"].split(".")[0]
filters = [
    {"Name": "tag:" + env["CLUSTER_TAG"], "Values": [env["CLUSTER"]]},
    {"Name": "instance-state", "Values": ["RUNNING"]},
]
body = json.dumps({"Filters": filters, "Offset": offset, "Limit": 100})
now = int(time.time())
date = datetime.datetime.fromtimestamp(now, datetime.timezone.utc).strftime("%Y-%m-%d")
content_type = "application/json"
canonical = "POST\n/\n\ncontent-type:%s\nhost:%s\n\ncontent-type;host\n%s" % (
    content_type, host, hashlib.sha256(body.encode()).hexdigest())
scope = "%s/%s/tc3_request" % (date, service)
to_sign = "TC3-HMAC-SHA256\n%d\n%s\n%s" % (now, scope, hashlib.sha256(canonical.encode()).hexdigest())


def mac(key, msg):
    return hmac.new(key, msg.encode(), hashlib.sha256).digest()


key = mac(mac(mac(("TC3" + cred["TmpSecretKey"]).encode(), date), service), "tc3_request")
signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
headers = {
    "Authorization": "TC3-HMAC-SHA256 Credential=%s/%s, SignedHeaders=content-type;host, Signature=%s"
    % (cred["TmpSecretId"], scope, signature),
    "Content-Type": content_type,
    "Host": host,
    "X-TC-Action": "DescribeInstances",
    "X-TC-Timestamp": str(now),
    "X-TC-Version": env["CVM_API_VERSION"],
    "X-TC-Region": env["REGION"],
    "X-TC-Token": cred["Token"],
}
with open(os.path.join(work, "body"), "w") as f:
    f.write(body)
with open(os.path.join(work, "headers"), "w") as f:
    f.write("".join("%s: %s\n" % kv for kv in headers.items()))
PY
}

offset=0 n=0
while :; do
  n=$((n + 1))
  sign "$offset" || { echo "${TARGETS_FILE} unchanged" >&2; exit 1; }
  if ! curl -fsS --max-time 20 -X POST -H "@${work}/headers" --data-binary "@${work}/body" \
    "https://${CVM_ENDPOINT}/" >"${work}/${n}.json"; then
    echo "DescribeInstances (page ${n}) failed; ${TARGETS_FILE} unchanged: $(head -c 500 "${work}/${n}.json")" >&2
    exit 1
  fi
  # the next page's offset ("" after the last), or a failure when the answer is not a DescribeInstances answer
  offset=$(python3 -c '
import json, sys
doc = json.load(open(sys.argv[1])).get("Response") or {}
if "Error" in doc or "InstanceSet" not in doc:
    e = doc.get("Error") or {}
    sys.exit("not a DescribeInstances answer: %s: %s" % (e.get("Code", ""), e.get("Message", "")))
seen = int(sys.argv[2]) + len(doc["InstanceSet"])
print(seen if doc["InstanceSet"] and seen < int(doc.get("TotalCount") or 0) else "")
' "${work}/${n}.json" "$offset") || { echo "${TARGETS_FILE} unchanged" >&2; exit 1; }
  [ -n "$offset" ] || break
done

python3 - "$work" "$n" >"$tmp" <<'PY'
import json, os, sys

work, count = sys.argv[1], int(sys.argv[2])
skip = set(os.environ.get("SKIP_NAMES", "").split())
stack_tag, stack = os.environ["STACK_TAG"], os.environ["STACK"]
groups = []
for n in range(1, count + 1):
    for i in json.load(open(os.path.join(work, "%d.json" % n)))["Response"]["InstanceSet"]:
        tags = {t.get("Key"): t.get("Value") for t in i.get("Tags") or []}
        if i.get("InstanceName") in skip or tags.get(stack_tag, stack) != stack:
            continue
        ips = i.get("PrivateIpAddresses") or []
        if not ips:
            continue  # no address yet: the next run lists it
        labels = {
            "__meta_tencentcloud_private_ip": ips[0],
            "__meta_tencentcloud_hostname": i.get("HostName") or i.get("InstanceName") or "",
            "__meta_tencentcloud_instance_id": i.get("InstanceId", ""),
            "__meta_tencentcloud_instance_type": i.get("InstanceType", ""),
        }
        groups.append({"targets": [ips[0]], "labels": labels})
groups.sort(key=lambda g: g["labels"]["__meta_tencentcloud_instance_id"])
json.dump(groups, sys.stdout, indent=1, sort_keys=True)
print()
PY

if cmp -s "$tmp" "$TARGETS_FILE"; then
  exit 0 # unchanged: no rename, no reload
fi
chmod 0644 "$tmp"
mv -f "$tmp" "$TARGETS_FILE"
