# shellcheck shell=bash
# gpu-cluster: Azure's hook for the Slurm power-saving program (slurm_power.sh sources it), on the head node.
#   cloud_launch <node> <body file>: PUT the VM `<cluster>-<node>` (the body: the partition's VM, rendered by the layout,
#     in the channel: its size, image, disks, customData, the nodes' identity, Spot, its scale set, and the NIC made
#     with it in the node subnet), every `@@GPU_CLUSTER_SLURM_NODE@@` in it replaced by <node>; wait until Azure has
#     provisioned it; print "<private ip> <vm name>" (the NIC's address).
#   cloud_terminate <node>: DELETE the VM `<cluster>-<node>` (forceDeletion; its NIC and disks go with it: deleteOption
#     Delete); succeeds when there is no such VM.
# Both call Azure Resource Manager with a token the Instance Metadata Service gives the head's own identity, whose
# custom role may write and delete VMs, NICs and disks in the cluster's resource group only. The subscription and
# the resource group are the head's own (IMDS compute). A failed call prints Azure's error code and message on stderr.
# Environment (POWER_ENV): CLUSTER, COMPUTE_API_VERSION, NETWORK_API_VERSION, MANAGEMENT_URL, MANAGEMENT_RESOURCE,
# IMDS_TOKEN_URL, IMDS_API_VERSION, IMDS_COMPUTE_URL, IMDS_COMPUTE_API_VERSION, FORCE_DELETION, POLL_SECONDS,
# POLL_TRIES (default: 150, with POLL_SECONDS 10 the 1800 s ResumeTimeout).
NODE_TOKEN="@@GPU_CLUSTER_SLURM_NODE@@"

az_field() { # az_field PYTHON-EXPRESSION < json: the value `j` (the parsed answer) gives, or nothing
  python3 -c 'import json, sys
try:
    j = json.load(sys.stdin); v = eval(sys.argv[1])
except Exception:
    sys.exit(1)
print(v if v is not None else "")' "$1" 2>/dev/null
}

az_imds() { # az_imds PATH: a text field of the head's own compute metadata
  curl -fsS --max-time 5 --retry 3 --noproxy '*' -H "Metadata: true" \
    "${IMDS_COMPUTE_URL}/$1?api-version=${IMDS_COMPUTE_API_VERSION}&format=text"
}

az_token() {
  local answer
  answer=$(curl -fsS --max-time 5 --retry 3 --noproxy '*' -H "Metadata: true" \
    "${IMDS_TOKEN_URL}?api-version=${IMDS_API_VERSION}&resource=${MANAGEMENT_RESOURCE}") || {
    echo "no token from the Instance Metadata Service (is the head's identity on the VM?)" >&2
    return 1
  }
  az_field 'j["access_token"]' <<<"$answer"
}

az_login() { # AZ_TOKEN: the head identity's token for Azure Resource Manager
  AZ_TOKEN=$(az_token) || AZ_TOKEN=""
  [ -n "$AZ_TOKEN" ] && return 0
  echo "no Azure Resource Manager token" >&2
  return 1
}

# az_call METHOD URL [BODY FILE]: Azure Resource Manager with the bearer token (to curl on stdin, never in argv); the
# answer on stdout; on an HTTP error Azure's code and message on stderr, and 1 (404: 4)
az_call() {
  local method="$1" url="$2" body="${3:-}" out status args
  out=$(mktemp) || return 1
  args=(-sS --max-time 120 -X "$method" -o "$out" -w '%{http_code}' -H @-)
  [ -n "$body" ] && args+=(-H "Content-Type: application/json" --data-binary "@${body}")
  status=$(printf 'Authorization: Bearer %s\n' "$AZ_TOKEN" | curl "${args[@]}" "$url") || status=000
  case "$status" in
    2??) cat "$out"; rm -f "$out"; return 0 ;;
  esac
  # the cloud's reason first: slurm_power.sh keeps the first 200 characters as the node's DOWN reason
  printf '%s (HTTP %s on %s %s)\n' \
    "$(az_field '"%s: %s" % (j["error"]["code"], j["error"]["message"])' <"$out" || head -c 300 "$out")" \
    "$status" "$method" "$(path="${url%%\?*}"; printf '%s' "${path##*/providers/}")" >&2
  rm -f "$out"
  [ "$status" = 404 ] && return 4
  return 1
}

az_vm_url() { # az_vm_url NODE: the node's VM in the head's own subscription and resource group
  local sub group
  if ! sub=$(az_imds subscriptionId) || ! group=$(az_imds resourceGroupName); then
    echo "no subscription or resource group from the Instance Metadata Service" >&2
    return 1
  fi
  printf '%s/subscriptions/%s/resourceGroups/%s/providers/Microsoft.Compute/virtualMachines/%s-%s' \
    "$MANAGEMENT_URL" "$sub" "$group" "$CLUSTER" "$1"
}

cloud_launch() {
  local node="$1" template="$2" url body answer state nic address tries=0
  [ -r "$template" ] || { echo "no VM body ${template}" >&2; return 1; }
  url=$(az_vm_url "$node") || return 1
  az_login || return 1
  body=$(mktemp) || return 1
  sed "s/${NODE_TOKEN}/${node}/g" "$template" >"$body"
  answer=$(az_call PUT "${url}?api-version=${COMPUTE_API_VERSION}" "$body")
  local sent=$?
  rm -f "$body"
  [ "$sent" -eq 0 ] || return 1
  state=$(az_field 'j["properties"]["provisioningState"]' <<<"$answer")
  while [ "$state" != Succeeded ]; do
    case "$state" in
      Failed | Canceled) echo "Azure provisioningState ${state} for ${CLUSTER}-${node}" >&2; return 1 ;;
    esac
    tries=$((tries + 1))
    [ "$tries" -le "${POLL_TRIES:-150}" ] || { echo "${CLUSTER}-${node} not provisioned in time" >&2; return 1; }
    sleep "${POLL_SECONDS:-10}"
    answer=$(az_call GET "${url}?api-version=${COMPUTE_API_VERSION}") || return 1
    state=$(az_field 'j["properties"]["provisioningState"]' <<<"$answer")
  done
  nic=$(az_field 'j["properties"]["networkProfile"]["networkInterfaces"][0]["id"]' <<<"$answer")
  [ -n "$nic" ] || { echo "${CLUSTER}-${node} has no network interface" >&2; return 1; }
  answer=$(az_call GET "${MANAGEMENT_URL}${nic}?api-version=${NETWORK_API_VERSION}") || return 1
  address=$(az_field 'j["properties"]["ipConfigurations"][0]["properties"]["privateIPAddress"]' <<<"$answer")
  [ -n "$address" ] || { echo "${CLUSTER}-${node}'s network interface has no private IP" >&2; return 1; }
  printf '%s %s-%s\n' "$address" "$CLUSTER" "$node"
}

cloud_terminate() {
  local node="$1" url rc
  url=$(az_vm_url "$node") || return 1
  az_login || return 1
  az_call DELETE "${url}?forceDeletion=${FORCE_DELETION:-true}&api-version=${COMPUTE_API_VERSION}" >/dev/null
  rc=$?
  [ "$rc" -eq 4 ] && return 0 # no such VM: nothing to delete
  return "$rc"
}
