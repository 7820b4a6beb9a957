#!/usr/bin/env bash
# The core library (annot, model, sched, policies) must not depend on the headers of jansson,
# libcurl, libmicrohttpd or libyaml (style.md). Ask the compiler for every header each core
# source pulls in and fail on any of them.
set -euo pipefail
cc=$1; src=$2; shift 2
bad=0
for f in "$@"; do
  deps=$("$cc" -MM -D_GNU_SOURCE -iquote "$src/src" -iquote "$src/policies" "$f")
  if grep -Eq '(jansson|curl/|microhttpd|yaml)\.?h?' <<<"$deps"; then
    echo "core source $f includes a codec/network header:"; grep -Eo '[^ ]*(jansson|curl/|microhttpd|yaml)[^ ]*' <<<"$deps"
    bad=1
  fi
done
[ $bad -eq 0 ] && echo "core: $# sources, no jansson/curl/microhttpd/yaml headers"
exit $bad
