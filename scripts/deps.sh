#!/usr/bin/env bash
# Installs the Debian packages vgpu-sched builds and tests with, only those that are missing.
# Safe to run repeatedly; uses sudo when not root. --with-render: librsvg for SVG checks;
# --with-browser: chromium (and Node.js) for the dashboard's browser tests.
set -euo pipefail
pkgs=(cmake make gcc pkg-config libjansson-dev libyaml-dev libmicrohttpd-dev
      libgnutls28-dev libcurl4-openssl-dev libssl-dev uthash-dev libcriterion-dev openssl curl
      clang llvm libclang-rt-14-dev clang-format python3)
[ "${1:-}" = "--with-render" ] && pkgs+=(librsvg2-bin)
# The dashboard's browser tests: Debian's chromium (playwright-core drives it; no browser is
# downloaded), and Node.js with npm when the machine has none.
if [ "${1:-}" = "--with-browser" ]; then
  pkgs+=(chromium)
  command -v node >/dev/null || pkgs+=(nodejs)
  command -v npm >/dev/null || pkgs+=(npm)
fi
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
