#!/bin/bash
# gpu-cluster: the login node's Alertmanager webhook on Huawei Cloud (monitoring.notify). Alertmanager has no SMN
# receiver, so its webhook_config posts to a systemd socket (Accept=yes, loopback only) that runs this once per
# connection, the connection on stdin and stdout. It reads the HTTP request, turns Alertmanager's webhook JSON into
# an email subject and text, and publishes them to the cluster's SMN topic (PublishMessage, POST
# /v2/{project_id}/notifications/topics/{topic_urn}/publish on SMN_ENDPOINT), signed SDK-HMAC-SHA256 with the
# temporary credentials of the login node's agency (huaweicloud_sign.sh). It answers 200 when SMN took the message,
# 500 otherwise (Alertmanager retries), 400 for a request it cannot read; SMN's answer goes to the journal (stderr).
# JSON with python3 (in every Ubuntu image; jq is not).
# Environment: SMN_ENDPOINT, TOPIC_URN, METADATA_URL, SUBJECT_MAX_BYTES, MESSAGE_MAX_BYTES.
set -euo pipefail

ENV_FILE="${ENV_FILE:-/etc/gpu-cluster/smn-publish.env}"
# shellcheck source=/dev/null
[ -r "$ENV_FILE" ] && . "$ENV_FILE"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# shellcheck source=huaweicloud_sign.sh
. "${BASH_SOURCE[0]%/*}/huaweicloud_sign.sh"

reply() { printf 'HTTP/1.1 %s\r\nContent-Length: 0\r\nConnection: close\r\n\r\n' "$1"; }

# the request line, the headers up to the blank line, then Content-Length bytes of body (read reads byte by byte
# from a socket, so head gets exactly the rest)
IFS= read -r request || exit 0
length=
while IFS= read -r line; do
  line=${line%$'\r'}
  [ -n "$line" ] || break
  case "${line,,}" in content-length:*) length=${line#*:} length=${length//[[:space:]]/} ;; esac
done
if [ "${request%% *}" != POST ] || ! [[ "$length" =~ ^[0-9]+$ ]] || [ "$length" -eq 0 ] ||
  [ "$length" -gt $((4 * MESSAGE_MAX_BYTES)) ]; then
  echo "not an Alertmanager webhook POST: ${request%$'\r'} (Content-Length ${length:-none})" >&2
  reply "400 Bad Request"
  exit 0
fi
head -c "$length" >"${work}/alerts.json"

# PublishMessage's body: subject (at most SUBJECT_MAX_BYTES) and message (at most MESSAGE_MAX_BYTES), UTF-8
if ! python3 - "$work" "$SUBJECT_MAX_BYTES" "$MESSAGE_MAX_BYTES" <<'PY'; then
import json, os, sys

work, subject_max, message_max = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
doc = json.load(open(os.path.join(work, "alerts.json"), encoding="utf-8"))
alerts = doc["alerts"]

def cut(text, most):
    return text.encode("utf-8")[:most].decode("utf-8", "ignore")

common = doc.get("commonLabels") or {}
subject = "[%s:%d] %s on %s" % (doc.get("status", "").upper(), len(alerts), common.get("alertname", "alerts"),
                                common.get("cluster", doc.get("groupLabels", {}).get("cluster", "the cluster")))
lines = []
for a in alerts:
    labels, notes = a.get("labels") or {}, a.get("annotations") or {}
    lines.append("%s %s since %s" % (a.get("status", "").upper(), labels.get("alertname", ""), a.get("startsAt", "")))
    lines += ["  %s" % notes[k] for k in ("summary", "description") if notes.get(k)]
    lines.append("  " + ", ".join("%s=%s" % kv for kv in sorted(labels.items())))
body = {
    "subject": cut(subject, subject_max),
    "message": cut("\n".join(lines) or "(no alerts)", message_max),
}
with open(os.path.join(work, "body"), "w", encoding="utf-8") as f:
    json.dump(body, f, ensure_ascii=False)
PY
  echo "not Alertmanager's webhook JSON; nothing published" >&2
  reply "400 Bad Request"
  exit 0
fi

path="/v2/{project_id}/notifications/topics/${TOPIC_URN}/publish"
if ! hw_credentials "$work" || ! hw_sign "$work" POST "$SMN_ENDPOINT" "$path"; then
  echo "PublishMessage not signed; the alert stays with Alertmanager (it retries)" >&2
  reply "500 Internal Server Error"
  exit 0
fi
if ! curl -fsS --max-time 20 -X POST -H "@${work}/headers" --data-binary "@${work}/body" "$(cat "${work}/url")" \
  >"${work}/answer" 2>"${work}/error"; then
  echo "PublishMessage to ${TOPIC_URN} failed: $(cat "${work}/error") $(head -c 500 "${work}/answer")" >&2
  reply "500 Internal Server Error"
  exit 0
fi
echo "published to ${TOPIC_URN}: $(head -c 200 "${work}/answer")" >&2
reply "200 OK"
