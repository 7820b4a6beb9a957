#!/usr/bin/env bash
# The core library (annot, model, sched, policies) must not depend on the headers of libcurl,
# libmicrohttpd or libyaml (style.md; design.md §3). jansson, a pure library, it may use. Ask
# the compiler for every header each core source pulls in and fail on any of them.
set -euo pipefail
cc=$1; src=$2; shift 2
jansson_cflags=$(pkg-config --cflags jansson 2>/dev/null || true)
bad=0
for f in "$@"; do
  # shellcheck disable=SC2086
  deps=$("$cc" -MM -D_GNU_SOURCE $jansson_cflags -iquote "$src/src/core" -iquote "$src/policies" -iquote "$src/devices" "$f")
  if grep -Eq '(curl/|microhttpd|yaml)\.?h?' <<<"$deps"; then
    echo "core source $f includes a network/YAML header:"; grep -Eo '[^ ]*(curl/|microhttpd|yaml)[^ ]*' <<<"$deps"
    bad=1
  fi
done
[ $bad -eq 0 ] && echo "core: $# sources, no curl/microhttpd/yaml headers"
exit $bad
