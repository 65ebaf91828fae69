# shellcheck shell=bash
# The mount part's AZNFS client (Azure Files NFS with encryption in transit): spliced into mounts.sh only for nodes
# whose shared filesystem is mounted with `-t aznfs` (bootstrap/mounts.py), so every other node's mounts.sh, and
# its user data, stays as it was.
#   CLIENT=ms-config-apt  CLIENT_REPO is the URL of packages.microsoft.com's config package
#                         (packages-microsoft-prod.deb), {id} and {version} standing for the release's ID and
#                         VERSION_ID (ubuntu, 22.04); MOUNT_FSTYPE=aznfs: mount.aznfs is the installed client
# AZNFS's package asks about auto-update unless told the install is noninteractive (its documented variable)
export AZNFS_NONINTERACTIVE_INSTALL=1

os_field() {
  sed -n "s/^$1=//p" "${OS_RELEASE:-/etc/os-release}" | tr -d '"'
}

add_ms_config_repo() {
  # Microsoft's documented install: the release's packages-microsoft-prod.deb adds packages.microsoft.com's
  # repository and its signing key; apt then installs aznfs from it
  local url deb
  url=${CLIENT_REPO//\{id\}/$(os_field ID)}
  url=${url//\{version\}/$(os_field VERSION_ID)}
  deb=$(mktemp --suffix=.deb)
  curl -fsSL --retry 5 -o "$deb" "$url"
  dpkg -i "$deb"
  rm -f "$deb"
}

