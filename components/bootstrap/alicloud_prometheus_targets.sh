#!/bin/bash
# gpu-cluster: the login node's Prometheus targets on Alibaba Cloud (Prometheus 2.53 has no Alibaba discovery), run
# by a systemd timer. ECS DescribeInstances, signed by alicloud_rpc.sh with the STS credentials of the login node's
# RAM role, lists this cluster's running instances (tag CLUSTER_TAG=CLUSTER), page by page (NextToken, MaxResults
# 100); the login node and the Slurm head (their instance names in SKIP_NAMES) and another stack's instances (a
# STACK_TAG other than STACK) are left out. The list is written as file_sd JSON to TARGETS_FILE, one target group per
# node: its private address and __meta_alicloud_* labels the scrape jobs relabel (the job adds the exporter's port).
# Atomic: a temporary file beside it, renamed over it only when complete and changed; on any error the old list stays
# (Prometheus keeps scraping it) and the status is non-zero, the API's answer on stderr.
# JSON is read with python3 (in every Ubuntu image; jq is not).
# Environment: ECS_ENDPOINT, ECS_API_VERSION, REGION, CLUSTER, CLUSTER_TAG, STACK, STACK_TAG, SKIP_NAMES,
# TARGETS_FILE, METADATA, METADATA_TOKEN_URL.
set -euo pipefail

# shellcheck source=alicloud_rpc.sh
. "${BASH_SOURCE[0]%/*}/alicloud_rpc.sh"

role=$(ram_role) || role=""
[ -n "$role" ] || { echo "DescribeInstances: no RAM role on this node (metadata ram/security-credentials/)" >&2; exit 1; }

mkdir -p "${TARGETS_FILE%/*}"
pages=$(mktemp -d)
tmp=$(mktemp "${TARGETS_FILE}.XXXXXX")
trap 'rm -rf "$pages" "$tmp"' EXIT

token="" n=0
while :; do
  n=$((n + 1))
  args=("RegionId=${REGION}" "Status=Running" "Tag.1.Key=${CLUSTER_TAG}" "Tag.1.Value=${CLUSTER}" "MaxResults=100")
  [ -n "$token" ] && args+=("NextToken=${token}")
  if ! rpc_call "$ECS_ENDPOINT" "$role" DescribeInstances "$ECS_API_VERSION" "${args[@]}" >"${pages}/${n}.json"; then
    echo "DescribeInstances (page ${n}) failed; ${TARGETS_FILE} unchanged: $(head -c 500 "${pages}/${n}.json")" >&2
    exit 1
  fi
  # the next page's token, or a failure when the answer is not a DescribeInstances answer
  token=$(python3 -c '
import json, sys
doc = json.load(open(sys.argv[1]))
if "Instances" not in doc:
    sys.exit("not a DescribeInstances answer: %s: %s" % (doc.get("Code", ""), doc.get("Message", "")))
print(doc.get("NextToken") or "")
' "${pages}/${n}.json") || { echo "${TARGETS_FILE} unchanged" >&2; exit 1; }
  [ -n "$token" ] || break
done

python3 - "$pages" "$n" >"$tmp" <<'PY'
import json, os, sys

pages, count = sys.argv[1], int(sys.argv[2])
skip = set(os.environ.get("SKIP_NAMES", "").split())
stack_tag, stack = os.environ["STACK_TAG"], os.environ["STACK"]
groups = []
for n in range(1, count + 1):
    doc = json.load(open(os.path.join(pages, "%d.json" % n)))
    for i in (doc.get("Instances") or {}).get("Instance") or []:
        tags = {t.get("TagKey"): t.get("TagValue") for t in (i.get("Tags") or {}).get("Tag") or []}
        if i.get("InstanceName") in skip or tags.get(stack_tag, stack) != stack:
            continue
        ips = ((i.get("VpcAttributes") or {}).get("PrivateIpAddress") or {}).get("IpAddress") or []
        if not ips:
            continue  # no address yet: the next run lists it
        labels = {
            "__meta_alicloud_private_ip": ips[0],
            "__meta_alicloud_hostname": i.get("HostName") or i.get("InstanceName") or "",
            "__meta_alicloud_instance_id": i.get("InstanceId", ""),
            "__meta_alicloud_instance_type": i.get("InstanceType", ""),
            "__meta_alicloud_scaling_group_id": tags.get("acs:autoscaling:scalingGroupId") or "",
        }
        groups.append({"targets": [ips[0]], "labels": labels})
groups.sort(key=lambda g: g["labels"]["__meta_alicloud_instance_id"])
json.dump(groups, sys.stdout, indent=1, sort_keys=True)
print()
PY

if cmp -s "$tmp" "$TARGETS_FILE"; then
  exit 0 # unchanged: no rename, no reload
fi
chmod 0644 "$tmp"
mv -f "$tmp" "$TARGETS_FILE"
