#!/usr/bin/env bash
# Installs the Debian packages the tests need when a machine lacks them (root, or sudo when present).
# Used by .ci/run and by `make deps`. Prints what it installs; a machine that has everything is left alone.
set -euo pipefail

PACKAGES=(postgresql-15 postgresql-client-15 postgresql-contrib procps openssl prometheus mariadb-server mariadb-client)
# Extra packages can be asked for, e.g. `EXTRA_DEBS=protobuf-compiler bash .ci/install-debian.sh`.
read -r -a extra <<<"${EXTRA_DEBS:-}"
PACKAGES+=("${extra[@]}")

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "debian: already installed: ${PACKAGES[*]}"
  exit 0
fi

sudo=()
if [ "$(id -u)" -ne 0 ]; then sudo=(sudo -n); fi
echo "debian: installing ${missing[*]}"
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
