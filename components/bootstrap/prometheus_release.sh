#!/bin/bash
# A library sourced by the login node's monitoring scripts (monitoring.sh, alertmanager.sh): installs one release
# tarball of the Prometheus project (<name>-<version>.linux-<arch>.tar.gz, as github.com/prometheus/<name>/releases
# publishes them), checked against the sha256 pinned for the machine's architecture.
# Needs: log(); set -e in the caller.

# install_release NAME VERSION URL SHA256_AMD64 SHA256_ARM64 DIR BINARY...
#   URL may hold {arch}; the BINARYs of the release are installed into DIR, and DIR/VERSION records VERSION.
install_release() {
  local name=$1 version=$2 url=$3 sum_amd64=$4 sum_arm64=$5 dir=$6
  shift 6
  local arch sum bin
  arch=$(dpkg --print-architecture)
  case "$arch" in
    amd64) sum="$sum_amd64" ;;
    arm64) sum="$sum_arm64" ;;
    *) log "no $name release pinned for $arch"; return 1 ;;
  esac
  release_tmp=$(mktemp -d)
  trap 'rm -rf "$release_tmp"' EXIT  # also when the checksum does not match (set -e)
  curl -fsSL --retry 5 -o "$release_tmp/$name.tar.gz" "${url//\{arch\}/$arch}"
  echo "$sum  $release_tmp/$name.tar.gz" | sha256sum -c - >/dev/null
  tar -xzf "$release_tmp/$name.tar.gz" -C "$release_tmp"
  install -d "$dir"
  for bin in "$@"; do
    install -m 0755 "$release_tmp/$name-$version.linux-$arch/$bin" "$dir/"
  done
  echo "$version" >"$dir/VERSION"
  log "installed $name $version ($arch)"
}
