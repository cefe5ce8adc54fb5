#!/usr/bin/env bash
# Install the Debian packages ursa needs, if any is missing (idempotent).
# Usage: scripts/deps.sh [extra-package ...]   (as root, or with sudo available)
set -euo pipefail
pkgs=(build-essential autoconf automake libtool pkg-config
      liburing-dev libcriterion-dev libjemalloc-dev libnsync-dev libck-dev
      gnuplot-nox spin pigz zstd "$@")
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo
echo "deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
