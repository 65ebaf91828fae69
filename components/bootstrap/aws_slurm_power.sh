# shellcheck shell=bash
# gpu-cluster: AWS's hook for the Slurm power-saving program (slurm_power.sh sources it), on the head node.
#   cloud_launch <node> <launch template id>: one instance from the partition's template (subnet, interfaces,
#     placement group, market and the node's user data are in it), tagged with its Slurm name, which the node reads
#     from its instance metadata tags; prints "<private ip> <private dns name>".
#   cloud_terminate <node>: terminates this cluster's instances tagged with <node> that are not terminated yet.
# The head's own role may launch from exactly the cluster's templates and terminate exactly the cluster's instances.
# Environment: NAME_TAG (gpu-cluster:slurm-node), CLUSTER_TAG and CLUSTER (the cluster's tag and value).
# shellcheck source=aws_cli.sh
. "${BASH_SOURCE[0]%/*}/aws_cli.sh"

NAME_TAG="${NAME_TAG:-gpu-cluster:slurm-node}"

cloud_launch() {
  local node="$1" template="$2" region
  region=$(aws_region) || return 1
  aws ec2 run-instances --region "$region" --count 1 \
    --launch-template "LaunchTemplateId=${template},Version=\$Default" \
    --tag-specifications "ResourceType=instance,Tags=[{Key=${NAME_TAG},Value=${node}}]" \
    --query 'Instances[0].[PrivateIpAddress,PrivateDnsName]' --output text
}

cloud_terminate() {
  local node="$1" region ids
  region=$(aws_region) || return 1
  ids=$(aws ec2 describe-instances --region "$region" \
    --filters "Name=tag:${NAME_TAG},Values=${node}" "Name=tag:${CLUSTER_TAG},Values=${CLUSTER}" \
    "Name=instance-state-name,Values=pending,running,stopping,stopped" \
    --query 'Reservations[].Instances[].InstanceId' --output text) || return 1
  [ -z "$ids" ] && return 0
  # shellcheck disable=SC2086 # one id per word
  aws ec2 terminate-instances --region "$region" --instance-ids $ids --output text >/dev/null
}
