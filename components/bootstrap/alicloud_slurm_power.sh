# shellcheck shell=bash
# gpu-cluster: Alibaba Cloud's hook for the Slurm power-saving program (slurm_power.sh sources it), on the head node.
# No aliyun CLI (not on Alibaba's public Ubuntu images): ECS API calls (version ECS_API_VERSION) through ECS's VPC
# endpoint, signed by alicloud_rpc.sh with the STS credentials of the head's own RAM role from the metadata service.
#   cloud_launch <node> "<launch template id>[ <vswitch> <group,group...> <card,card...>]": RunInstances from the
#     partition's template, one instance named <cluster>-<node> (its instance and host name; the node reads the name
#     back from its metadata), tagged NAME_TAG=<node> and CLUSTER_TAG=<cluster>; with a vSwitch, groups and cards (a
#     partition with ERIs, whose template holds no network), one NetworkInterface.N per card, traffic mode
#     HighPerformance (an ERI) in the vSwitch and groups, the first the Primary ENI, each on its card index when there
#     are several (the cluster's own instances get the same: components/alicloud/nodes.py); then DescribeInstances
#     until it has its private address; prints "<private ip> <cluster>-<node>".
#   cloud_terminate <node>: DescribeInstances by both tags, then DeleteInstances Force=true of what it found; none
#     found is success.
# The head's role may create instances only tagged as this cluster's and delete only instances tagged so
# (catalog/slurm.yaml clouds.alicloud.powerSave). Errors: the API's "Code: Message" on stderr, non-zero.
# JSON is read with python3 (in every Ubuntu image, the head's included; jq is not).
# Environment: ECS_ENDPOINT, ECS_API_VERSION, REGION, CLUSTER, NAME_TAG, CLUSTER_TAG, POLL_SECONDS, POLLS, METADATA.

# shellcheck source=alicloud_rpc.sh
. "${BASH_SOURCE[0]%/*}/alicloud_rpc.sh"

# ecs_json WHAT: from the answer on stdin, `error` ("Code: Message"), `ids` (every Instances.Instance[].InstanceId),
# `created` (the first InstanceIdSets.InstanceIdSet) or `address` (the first instance's VPC private address)
ecs_json() {
  python3 -c '
import json, sys
try:
    doc = json.load(sys.stdin)
except ValueError:
    sys.exit(0)
instances = (doc.get("Instances") or {}).get("Instance") or []
if sys.argv[1] == "error":
    print("%s: %s" % (doc.get("Code", ""), doc.get("Message", "")))
elif sys.argv[1] == "ids":
    print(" ".join(i.get("InstanceId", "") for i in instances))
elif sys.argv[1] == "created":
    print(((doc.get("InstanceIdSets") or {}).get("InstanceIdSet") or [""])[0])
elif instances:
    print((((instances[0].get("VpcAttributes") or {}).get("PrivateIpAddress") or {}).get("IpAddress") or [""])[0])
' "$1"
}

# ecs_call ACTION KEY=VALUE...: one signed ECS call (rpc_call), keeping the API's answer when it refuses (rpc_call's
# curl drops it): the answer on stdout on 2xx; else "ACTION: HTTP <status>: Code: Message" on stderr, non-zero.
ecs_call() {
  local action="$1" role answer code
  shift
  role=$(ram_role)
  [ -n "$role" ] || { echo "${action}: no RAM role on the head (metadata ram/security-credentials/)" >&2; return 1; }
  # shellcheck disable=SC2329 # rpc_call runs it: the API's answer and status, whatever the status
  answer=$(
    curl() {
      if [[ "${!#}" == "${ECS_ENDPOINT}/?"* ]]; then
        command curl -sS --max-time 60 -w '\n%{http_code}' "${!#}"
      else
        command curl "$@"
      fi
    }
    rpc_call "$ECS_ENDPOINT" "$role" "$action" "$ECS_API_VERSION" "RegionId=${REGION}" "$@"
  ) || { echo "${action}: no answer from ${ECS_ENDPOINT}" >&2; return 1; }
  code="${answer##*$'\n'}"
  answer="${answer%$'\n'*}"
  case "$code" in
    2??) printf '%s\n' "$answer" ;;
    *)
      echo "${action}: HTTP ${code}: $(ecs_json error <<<"$answer")" >&2
      return 1
      ;;
  esac
}

# eri_parameters VSWITCH GROUPS CARDS: RunInstances' NetworkInterface.N parameters of one ERI per card (comma lists)
eri_parameters() {
  local vswitch="$1" n=0 g card group kind
  local -a cards groups
  IFS=, read -ra groups <<<"$2"
  IFS=, read -ra cards <<<"$3"
  for card in "${cards[@]}"; do
    n=$((n + 1))
    kind=Secondary
    [ "$n" -eq 1 ] && kind=Primary
    printf '%s\n' "NetworkInterface.${n}.InstanceType=${kind}" \
      "NetworkInterface.${n}.NetworkInterfaceTrafficMode=HighPerformance" "NetworkInterface.${n}.VSwitchId=${vswitch}"
    g=0
    for group in "${groups[@]}"; do
      g=$((g + 1))
      printf '%s\n' "NetworkInterface.${n}.SecurityGroupIds.${g}=${group}"
    done
    [ "${#cards[@]}" -gt 1 ] && printf '%s\n' "NetworkInterface.${n}.NetworkCardIndex=${card}"
  done
}

cloud_launch() {
  local node="$1" template vswitch groups cards name answer id address i
  local -a nics=()
  read -r template vswitch groups cards <<<"$2"
  [ -n "$cards" ] && mapfile -t nics < <(eri_parameters "$vswitch" "$groups" "$cards")
  name="${CLUSTER}-${node}"
  answer=$(ecs_call RunInstances "LaunchTemplateId=${template}" "Amount=1" "InstanceName=${name}" \
    "HostName=${name}" "Tag.1.Key=${NAME_TAG}" "Tag.1.Value=${node}" "Tag.2.Key=${CLUSTER_TAG}" \
    "Tag.2.Value=${CLUSTER}" "${nics[@]}") || return 1
  id=$(ecs_json created <<<"$answer")
  [ -n "$id" ] || { echo "RunInstances answered without InstanceIdSets.InstanceIdSet" >&2; return 1; }
  for ((i = 0; i < ${POLLS:-120}; i++)); do
    answer=$(ecs_call DescribeInstances "InstanceIds=[\"${id}\"]") || return 1
    address=$(ecs_json address <<<"$answer")
    if [ -n "$address" ]; then
      printf '%s %s\n' "$address" "$name"
      return 0
    fi
    sleep "${POLL_SECONDS:-5}"
  done
  echo "${name} (${id}) has no private address after $((${POLLS:-120} * ${POLL_SECONDS:-5})) s" >&2
  return 1
}

cloud_terminate() {
  local node="$1" answer id n=0
  local found=("Tag.1.Key=${NAME_TAG}" "Tag.1.Value=${node}" "Tag.2.Key=${CLUSTER_TAG}" "Tag.2.Value=${CLUSTER}")
  answer=$(ecs_call DescribeInstances "${found[@]}") || return 1
  local ids=()
  for id in $(ecs_json ids <<<"$answer"); do
    n=$((n + 1))
    ids+=("InstanceId.${n}=${id}")
  done
  [ "$n" -eq 0 ] && return 0 # no instance: nothing to delete
  ecs_call DeleteInstances "Force=true" "${ids[@]}" >/dev/null
}
