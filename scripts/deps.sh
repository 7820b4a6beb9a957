#!/usr/bin/env bash
# Installs the Debian packages vgpu-sched builds and tests with, only those that are missing.
# Safe to run repeatedly; uses sudo when not root.
set -euo pipefail
pkgs=(cmake make gcc pkg-config libjansson-dev libyaml-dev libmicrohttpd-dev
      libgnutls28-dev libcurl4-openssl-dev libssl-dev uthash-dev libcriterion-dev openssl curl
      clang llvm libclang-rt-14-dev clang-format python3)
[ "${1:-}" = "--with-render" ] && pkgs+=(librsvg2-bin)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "installing: ${missing[*]}"
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
