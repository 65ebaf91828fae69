#!/bin/bash
# monitoring.logs with an AS group on Huawei Cloud: this node's LTS custom identifier, in the file ICAgent reads it
# from, before ICAgent starts. LTS adds every host reporting the identifier to the stack's LABEL host group, so the
# nodes AS launches later join it too (catalog/logs/huaweicloud.yaml customIdentifier: the directory 750, the file
# 640, as LTS's host group guide makes them). Idempotent: the same file at every boot.
set -euo pipefail

: "${LTS_LABEL:?}" "${LABEL_FILE:?}" "${DIR_MODE:?}" "${FILE_MODE:?}"

dir="${LABEL_FILE%/*}"
mkdir -p "$dir"
chmod "$DIR_MODE" "$dir"
# written beside and renamed: ICAgent never reads a half-written identifier
tmp="$(mktemp "$dir/.custom_tag.XXXXXX")"
trap 'rm -f "$tmp"' EXIT
printf '%s\n' "$LTS_LABEL" > "$tmp"
chmod "$FILE_MODE" "$tmp"
mv -f "$tmp" "$LABEL_FILE"
trap - EXIT
echo "gpu-cluster: LTS custom identifier $LTS_LABEL in $LABEL_FILE"
