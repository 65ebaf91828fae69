# shellcheck shell=bash
# gpu-cluster-interruption: the loop every cloud's watcher shares (interruption_<cloud>.sh inlines it).
#
# The cloud's script defines `notice`, which looks at the metadata service once and, when this node is about to
# go, sets NOTICE (what identifies this notice: a notice is drained once), WHY (one line) and DEADLINE (epoch
# seconds: when the node goes); it may define `after_drain` (tell the cloud the node is done: AWS completes the
# lifecycle action, Azure approves the event) and `pace` (the wait between two looks; without it POLL_SECONDS).
# A notice runs the drain (gpu-cluster-drain WHY DEADLINE), then `after_drain`.
#
# Environment: DRAIN (the drain command), STATE_FILE (the notices already drained), POLL_SECONDS, ONCE (look once
# and exit: the tests).
DRAIN="${DRAIN:-/usr/local/sbin/gpu-cluster-drain}"
STATE_FILE="${STATE_FILE:-/run/gpu-cluster/interruption.handled}"
POLL_SECONDS="${POLL_SECONDS:-5}"

log() { echo "gpu-cluster-interruption: $*" >&2; }

# a string field of a flat JSON object
field() { sed -n "s/.*\"$1\" *: *\"\([^\"]*\)\".*/\1/p" | head -n 1; }

# a time the metadata service gave -> epoch seconds; FALLBACK (epoch) when it does not parse
epoch() { date -d "$1" +%s 2>/dev/null || echo "$2"; }

now() { date +%s; }

handled() { [ -f "$STATE_FILE" ] && grep -qxF "$1" "$STATE_FILE"; }

handle() {
    log "${WHY}: draining"
    "$DRAIN" "gpu-cluster: ${WHY}" "$DEADLINE"
    if declare -F after_drain >/dev/null; then after_drain; fi
    mkdir -p "$(dirname "$STATE_FILE")"
    echo "$NOTICE" >>"$STATE_FILE"
}

watch() {
    while :; do
        NOTICE="" WHY="" DEADLINE=0
        notice
        if [ -n "$NOTICE" ] && ! handled "$NOTICE"; then
            handle
        fi
        [ -n "${ONCE:-}" ] && return 0
        if declare -F pace >/dev/null; then pace; else sleep "$POLL_SECONDS"; fi
    done
}
