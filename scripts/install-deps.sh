#!/usr/bin/env bash
# Install the Debian packages fabench needs, only those missing. As root this installs;
# otherwise it lists what is missing and carries on (the build skips what it cannot use).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
mapfile -t wanted < <(grep -v '^\s*#' "$here/debian-packages.txt" | awk 'NF {print $1}')
# Installed packages and the names they provide: a virtual package (simgrid, provided by
# libsimgrid-dev) is present once its provider is, or every run would call apt-get again.
present=$(dpkg-query -W -f='${db:Status-Abbrev} ${Package} ${Provides}\n' 2>/dev/null \
  | awk '$1 == "ii"' | sed -e 's/^ii *//' -e 's/([^)]*)//g' -e 's/,/ /g' | tr -s ' ' '\n' \
  | sed -e 's/:.*//' | sort -u)
missing=()
for p in "${wanted[@]}"; do
  grep -qxF -- "$p" <<<"$present" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#wanted[@]} Debian packages present"
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "install-deps: not a Debian-like host; install the equivalents of: ${missing[*]}" >&2
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: not root; missing Debian packages: ${missing[*]}" >&2
  echo "install-deps: as root: apt-get install ${missing[*]}" >&2
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
