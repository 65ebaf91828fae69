#!/bin/bash
# gpu-cluster: verify at boot that NCCL can use EFA on this node, and make the aws-ofi-nccl plugin loadable.
#
# The image (the DLAMI) carries the EFA installer (libfabric with the efa provider) and aws-ofi-nccl; this
# script does not install them, it checks them: the efa provider answers `fi_info -p efa -t FI_EP_RDM`,
# libfabric and the plugin are at least the versions the NCCL environment in /etc/gpu-cluster/nccl.env was
# written for, and the plugin's directory is on the dynamic loader's path (NCCL dlopens libnccl-net*.so).
# Versions are read as aws-samples/awsome-distributed-training 4.validation_and_observability/efa-versions.py
# reads them: "# EFA installer version: X" in efa_installed_packages, "libfabric: X" from `fi_info --version`,
# "NET/OFI Initializing aws-ofi-nccl X" inside the plugin library.
#
# Environment (/etc/gpu-cluster/efa.env): EFA_DIR, INSTALLED_PACKAGES, PLUGIN_DIRS and PLUGIN_LIBRARIES
# (space-separated, searched in order), MIN_LIBFABRIC, MIN_OFI_NCCL, LDCONF_DIR, RESULT (JSON written here).
# Exit 1 when anything NCCL needs is missing, so `systemctl --failed` names the node whose fabric is unusable.
set -uo pipefail

EFA_DIR="${EFA_DIR:-/opt/amazon/efa}"
INSTALLED_PACKAGES="${INSTALLED_PACKAGES:-/opt/amazon/efa_installed_packages}"
PLUGIN_DIRS="${PLUGIN_DIRS:-/opt/amazon/ofi-nccl/lib/x86_64-linux-gnu /opt/amazon/ofi-nccl/lib /opt/aws-ofi-nccl/lib}"
PLUGIN_LIBRARIES="${PLUGIN_LIBRARIES:-libnccl-net-ofi.so libnccl-net.so}"
MIN_LIBFABRIC="${MIN_LIBFABRIC:?MIN_LIBFABRIC is not set}"
MIN_OFI_NCCL="${MIN_OFI_NCCL:?MIN_OFI_NCCL is not set}"
LDCONF_DIR="${LDCONF_DIR:-/etc/ld.so.conf.d}"
RESULT="${RESULT:-/var/lib/gpu-cluster/efa.json}"

log() { echo "gpu-cluster-efa: $*" >&2; }

problems=()
fail() {
    problems+=("$1")
    log "FAILED: $1"
}

# version_ge A B: A >= B in version order (1.10.0 > 1.9.2)
version_ge() { [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n 1)" = "$2" ]; }

fi_info_bin="${EFA_DIR}/bin/fi_info"
[ -x "$fi_info_bin" ] || fi_info_bin="$(command -v fi_info || true)"

installer=""
if [ -r "$INSTALLED_PACKAGES" ]; then
    installer=$(sed -n 's/^# EFA installer version: *\([0-9][0-9.]*\).*/\1/p' "$INSTALLED_PACKAGES" | head -n 1)
fi

libfabric=""
domains=0
if [ -z "$fi_info_bin" ]; then
    fail "fi_info not found (${EFA_DIR}/bin or PATH): the EFA installer is not on this image"
else
    libfabric=$("$fi_info_bin" --version 2>/dev/null | sed -n 's/^libfabric: *\([0-9][0-9.]*\).*/\1/p' | head -n 1)
    if [ -z "$libfabric" ]; then
        fail "libfabric version unknown (fi_info --version)"
    elif ! version_ge "$libfabric" "$MIN_LIBFABRIC"; then
        fail "libfabric ${libfabric} is older than ${MIN_LIBFABRIC}"
    fi
    domains=$("$fi_info_bin" -p efa -t FI_EP_RDM 2>/dev/null | grep -c 'domain:' || true)
    [ "$domains" -gt 0 ] || fail "the efa provider lists no RDM endpoint (fi_info -p efa -t FI_EP_RDM)"
fi

plugin=""
for dir in $PLUGIN_DIRS; do
    for lib in $PLUGIN_LIBRARIES; do
        if [ -e "${dir}/${lib}" ]; then
            plugin="${dir}/${lib}"
            break 2
        fi
    done
done

ofi_nccl=""
if [ -z "$plugin" ]; then
    fail "aws-ofi-nccl not found (${PLUGIN_LIBRARIES} in ${PLUGIN_DIRS})"
else
    ofi_nccl=$(grep -a -o 'NET/OFI Initializing aws-ofi-nccl [0-9][0-9.]*' "$plugin" | head -n 1 | awk '{print $4}')
    if [ -z "$ofi_nccl" ]; then
        fail "aws-ofi-nccl version unknown (${plugin})"
    elif ! version_ge "$ofi_nccl" "$MIN_OFI_NCCL"; then
        fail "aws-ofi-nccl ${ofi_nccl} is older than ${MIN_OFI_NCCL}"
    fi
    # NCCL finds the plugin through the loader: make sure its directory is configured.
    plugin_dir="${plugin%/*}"
    if ! grep -qsxF "$plugin_dir" "$LDCONF_DIR"/*.conf; then
        mkdir -p "$LDCONF_DIR"
        echo "$plugin_dir" >"${LDCONF_DIR}/90-gpu-cluster-ofi-nccl.conf"
        ldconfig || fail "ldconfig failed after adding ${plugin_dir}"
        log "added ${plugin_dir} to the loader path"
    fi
fi

usable=true
[ "${#problems[@]}" -eq 0 ] || usable=false
mkdir -p "$(dirname "$RESULT")"
{
    printf '{"usable": %s, "efaInstaller": "%s", "libfabric": "%s", "efaDomains": %s, "awsOfiNccl": "%s", "plugin": "%s", "problems": [' \
        "$usable" "$installer" "$libfabric" "$domains" "$ofi_nccl" "$plugin"
    for i in "${!problems[@]}"; do
        [ "$i" -gt 0 ] && printf ', '
        printf '"%s"' "${problems[$i]//\"/\'}"
    done
    printf ']}\n'
} >"$RESULT"

if [ "$usable" = true ]; then
    log "EFA installer ${installer:-unknown}, libfabric ${libfabric}, ${domains} efa domain(s), aws-ofi-nccl ${ofi_nccl} (${plugin})"
    exit 0
fi
exit 1
