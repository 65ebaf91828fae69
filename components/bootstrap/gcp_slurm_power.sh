# shellcheck shell=bash
# gpu-cluster: GCP's hook for the Slurm power-saving program (slurm_power.sh sources it), on the head node. No gcloud:
# curl with the head's own token from the metadata server, against the Compute Engine API (as slurm-gcp's resume.py
# and suspend.py, which call instances.insert from the nodeset's template and instances.delete).
#   cloud_launch <node> <instance template self link>: POST .../zones/<zone>/instances?sourceInstanceTemplate=<it> with
#     {"name": "<cluster>-<node>"} (the template holds the machine, NICs, placement, Spot and the node's startup
#     script; the node reads its name back from the metadata server), waits for the operation, then prints
#     "<networkInterfaces[0].networkIP> <instance name>".
#   cloud_terminate <node>: DELETE .../zones/<zone>/instances/<cluster>-<node> and waits for it; 404 (no such
#     instance) is success.
# The head's service account may create and delete only instances and disks named <cluster>-* in the zone (an IAM
# condition on its custom role). Errors: the API's message on stderr, non-zero.
# JSON is read with python3 (in every Ubuntu image, the head's included; jq is not).
# Environment: PROJECT, ZONE, CLUSTER, COMPUTE_API (https://compute.googleapis.com/compute/v1), TOKEN_URL (the
# metadata server's token), POLL_SECONDS, POLLS.

# json_field PATH: a field of the JSON on stdin (dotted path, list indexes as numbers); `errors`: the messages of an
# API error ({"error": {"message"}}) or of a failed operation ({"error": {"errors": [{"code", "message"}]}})
json_field() {
  python3 -c '
import json, sys
try:
    doc = json.load(sys.stdin)
except ValueError:
    sys.exit(0)
if sys.argv[1] == "errors":
    err = doc.get("error") or {}
    items = ["%s: %s" % (e.get("code", ""), e.get("message", "")) for e in err.get("errors", []) if isinstance(e, dict)]
    print("; ".join(items) if items and not err.get("message") else err.get("message", ""))
    sys.exit(0)
for key in sys.argv[1].split("."):
    if isinstance(doc, list) and key.isdigit() and int(key) < len(doc):
        doc = doc[int(key)]
    elif isinstance(doc, dict):
        doc = doc.get(key, "")
    else:
        doc = ""
print(doc if isinstance(doc, (str, int)) else "")
' "$1"
}

gcp_token() {
  local answer token
  answer=$(curl -fsS --max-time 5 --retry 3 -H "Metadata-Flavor: Google" "$TOKEN_URL") ||
    { echo "no token from the metadata server (has the head a service account?)" >&2; return 1; }
  token=$(json_field access_token <<<"$answer")
  [ -n "$token" ] || { echo "the metadata server answered without an access_token" >&2; return 1; }
  printf '%s\n' "$token"
}

# gcp_api METHOD URL [BODY]: one Compute API call with the head's token (the header goes to curl on stdin, never in
# argv); prints the answer. Returns 0 on 2xx, 4 on 404, 1 otherwise with the API's message on stderr.
gcp_api() {
  local method="$1" url="$2" body="${3:-}" token answer code
  token=$(gcp_token) || return 1
  local args=(-sS --max-time 60 -X "$method" -H @- -w '\n%{http_code}')
  [ -n "$body" ] && args+=(-H "Content-Type: application/json" --data "$body")
  answer=$(printf 'Authorization: Bearer %s\n' "$token" | curl "${args[@]}" "$url") ||
    { echo "${method} ${url%%\?*}: no answer from the Compute API" >&2; return 1; }
  code="${answer##*$'\n'}"
  answer="${answer%$'\n'*}"
  case "$code" in
    2??) printf '%s\n' "$answer" ;;
    404) return 4 ;;
    *)
      echo "${method} ${url%%\?*}: HTTP ${code}: $(json_field errors <<<"$answer")" >&2
      return 1
      ;;
  esac
}

# wait_operation OPERATION-JSON: poll the operation (its selfLink) until DONE; its error's messages on stderr
wait_operation() {
  local op="$1" link status message i
  link=$(json_field selfLink <<<"$op")
  for ((i = 0; i < ${POLLS:-120}; i++)); do
    status=$(json_field status <<<"$op")
    if [ "$status" = DONE ]; then
      message=$(json_field errors <<<"$op")
      [ -z "$message" ] && return 0
      echo "$message" >&2
      return 1
    fi
    [ -n "$link" ] || { echo "the Compute API answered without an operation" >&2; return 1; }
    sleep "${POLL_SECONDS:-5}"
    op=$(gcp_api GET "$link") || return 1
  done
  echo "operation ${link##*/} not done after $((${POLLS:-120} * ${POLL_SECONDS:-5})) s" >&2
  return 1
}

instances_url() { printf '%s/projects/%s/zones/%s/instances' "${COMPUTE_API%/}" "$PROJECT" "$ZONE"; }

cloud_launch() {
  local node="$1" template="$2" name op instance address
  name="${CLUSTER}-${node}"
  op=$(gcp_api POST "$(instances_url)?sourceInstanceTemplate=${template}" "{\"name\": \"${name}\"}") || return 1
  wait_operation "$op" || return 1
  instance=$(gcp_api GET "$(instances_url)/${name}") || { echo "${name} was created but cannot be read" >&2; return 1; }
  address=$(json_field networkInterfaces.0.networkIP <<<"$instance")
  [ -n "$address" ] || { echo "${name} has no networkInterfaces[0].networkIP" >&2; return 1; }
  printf '%s %s\n' "$address" "$name"
}

cloud_terminate() {
  local name="${CLUSTER}-$1" op rc=0
  op=$(gcp_api DELETE "$(instances_url)/${name}") || rc=$?
  [ "$rc" -eq 4 ] && return 0 # no such instance: nothing to delete
  [ "$rc" -eq 0 ] || return 1
  wait_operation "$op"
}
