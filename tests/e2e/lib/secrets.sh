# shellcheck shell=bash
# No secret in any log: e2e_secrets_check DIR [FILE...] searches every log of a cluster directory
# (each *.log file under DIR: vgpu-sched.log, agent.log, kube-apiserver.log, kube-scheduler.log,
# etcd.log, down.log, ...) and the FILEs (e.g. the scenario's output) for:
#   - a PEM private key header (-----BEGIN ... PRIVATE KEY-----);
#   - the bearer tokens of the run (every `token:` of a kubeconfig in DIR, e.g. vgpu-sched's
#     ServiceAccount token from lib/vgpu.sh), whole or their signature part alone;
#   - any JWT (eyJ....eyJ....), any "Authorization: Bearer X" or "Bearer X" with a token-like X
#     ("Bearer <masked>", as client-go prints headers, is not a token);
#   - the key material of every private key under DIR (pki/*.key, ...): each base64 line of its
#     PEM body, the base64 of the whole PEM file (as kubeconfigs and the scheduler configuration
#     embed keys: keyData, client-key-data; 64 characters from its middle), and the base64 of the
#     "-----BEGIN ... PRIVATE KEY" header itself.
# Each hit is reported as "FILE:LINE: WHAT" (at most 5 lines per file and kind), never with the
# secret; returns 1 when anything was found, 0 otherwise (after one summary line).
# Sourced by lib/scenario.sh (run after every scenario) and by tests/e2e/secrets-test.sh.

# secrets_b64_prefix TEXT : base64 of TEXT cut to whole 3-byte groups (what any base64 of a file
# starting with TEXT starts with).
secrets_b64_prefix() {
    local n=$((${#1} / 3 * 3))
    printf '%s' "${1:0:n}" | base64 -w0
}

e2e_secrets_check() {
    local dir=$1 tmp f kc key tok sig b64 hits found=0 files=() keys=() kcs=() nfiles=0 bytes=0 nfixed npat i
    shift
    [[ -d "$dir" ]] || {
        printf 'secrets: no directory %s\n' "$dir" >&2
        return 1
    }
    tmp="$(mktemp -d "${TMPDIR:-/tmp}/vs-secrets.XXXXXX")" || return 1
    # Regular expressions, all in one grep per file; a match is classified by its start.
    {
        printf '%s\n' '-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----' \
            'eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.' \
            '[Aa]uthorization"?:[[:space:]]*"?[Bb]earer[[:space:]]+[^<[:space:]]' \
            'Bearer[[:space:]]+[A-Za-z0-9._~+/=-]{16,}'
    } >"$tmp/regex.pat"
    # Fixed strings, one grep per file for all of them: "LABEL<TAB>STRING" lines; a match (never
    # shown) is mapped back to its label.
    for key in "BEGIN PRIVATE KEY" "BEGIN EC PRIVATE KEY" "BEGIN RSA PRIVATE KEY" \
        "BEGIN ENCRYPTED PRIVATE KEY" "BEGIN OPENSSH PRIVATE KEY"; do
        printf 'base64 of a PEM private key header\t%s\n' "$(secrets_b64_prefix "-----$key-----")"
    done >"$tmp/fixed.tsv"
    # The run's bearer tokens: every `token:` of every kubeconfig in DIR, whole and (a JWT) its
    # signature alone, in case a log cut or split it.
    while IFS= read -r -d '' kc; do kcs+=("$kc"); done < <(find "$dir" -maxdepth 1 -type f -name '*kubeconfig*' -print0 | sort -z)
    for kc in "${kcs[@]}"; do
        while IFS= read -r tok; do
            ((${#tok} >= 8)) || continue
            printf 'the bearer token of %s\t%s\n' "${kc#"$dir"/}" "$tok"
            sig=${tok##*.}
            if [[ "$tok" == *.*.* && ${#sig} -ge 16 ]]; then
                printf 'the bearer token of %s\t%s\n' "${kc#"$dir"/}" "$sig"
            fi
        done < <(sed -nE 's/^[[:space:]]*token:[[:space:]]*["'\'']?([^"'\''[:space:]]+).*/\1/p' "$kc")
    done >>"$tmp/fixed.tsv"
    # Key material of every PEM private key under DIR (outside etcd's data): each base64 line of
    # its body (the key's DER, 64 characters a line), and 64 characters from the middle of the
    # whole file in base64 (as keyData / client-key-data embed it; its start encodes the header
    # and the DER prefix that every key of a type shares).
    while IFS= read -r -d '' key; do keys+=("$key"); done < <(
        find "$dir" -path "$dir/etcd" -prune -o -type f \( -name '*.key' -o -name '*key*.pem' \) -print0 |
            sort -z | xargs -0 -r grep -l -Z -E -- '-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----' || true)
    if ((${#keys[@]})); then
        awk -v pre="$dir/" '
            FNR == 1 { name = FILENAME; if (index(name, pre) == 1) name = substr(name, length(pre) + 1) }
            /^-----/ || /^[A-Za-z-]+: / || length($0) < 16 { next }
            { print "material of the private key " name "\t" $0 }' "${keys[@]}" >>"$tmp/fixed.tsv"
        for key in "${keys[@]}"; do
            b64="$(base64 -w0 "$key")"
            ((${#b64} >= 160)) &&
                printf 'material of the private key %s\t%s\n' "${key#"$dir"/}" "${b64:$((${#b64} / 8 * 4 - 32)):64}"
        done >>"$tmp/fixed.tsv"
    fi
    cut -f2- "$tmp/fixed.tsv" >"$tmp/fixed.pat"
    nfixed="$(cut -f1 "$tmp/fixed.tsv" | sort -u | wc -l)"
    nfixed=$((nfixed + 3))
    npat="$(wc -l <"$tmp/fixed.pat")"

    while IFS= read -r -d '' f; do files+=("$f"); done < <(find "$dir" -path "$dir/etcd" -prune -o -type f -name '*.log' -print0 | sort -z)
    for f in "$@"; do [[ -f "$f" ]] && files+=("$f"); done
    nfiles=${#files[@]}
    ((nfiles == 0)) || bytes=$(stat -c %s "${files[@]}" | awk '{ s += $1 } END { print s + 0 }')
    for f in "${files[@]}"; do
        # "LINE:MATCH" lines of both greps (the matches are never shown), then each mapped to
        # its kind; at most 5 line numbers per kind.
        hits="$({
            grep -a -n -o -F -f "$tmp/fixed.pat" -- "$f" | sed 's/^/F:/'
            grep -a -n -o -E -f "$tmp/regex.pat" -- "$f" | sed 's/^/E:/'
        } | awk -F'\t' -v f="$f" '
            NR == FNR { lab[$2] = $1; next }
            { i = index($0, ":"); kind = substr($0, 1, i - 1); rest = substr($0, i + 1)
              i = index(rest, ":"); ln = substr(rest, 1, i - 1); m = substr(rest, i + 1)
              if (kind == "F") l = lab[m]
              else if (m ~ /^-----BEGIN/) l = "PEM private key header"
              else if (m ~ /^eyJ/) l = "a JWT (bearer token)"
              else l = "an Authorization: Bearer header with a token"
              if (l == "") next
              if (!(l in n)) { order[++k] = l; n[l] = 0 }
              if (n[l] >= 5 || last[l] == ln) next
              last[l] = ln; at[l] = at[l] (n[l]++ ? "," : "") ln }
            END { for (j = 1; j <= k; j++) printf "secrets: %s:%s: %s\n", f, at[order[j]], order[j] }' \
            "$tmp/fixed.tsv" -)"
        if [[ -n "$hits" ]]; then
            printf '%s\n' "$hits" >&2
            found=$((found + $(grep -c . <<<"$hits")))
        fi
    done
    [[ -n "${VS_SECRETS_KEEP:-}" ]] || rm -rf "$tmp"
    if ((found)); then
        printf 'secrets: FAIL: %d secret kind(s) found in the logs (lines above; secrets not shown)\n' "$found" >&2
        return 1
    fi
    printf 'secrets: %d log files (%d KiB) searched for %d kinds of secret (%d fixed strings): none found\n' \
        "$nfiles" "$((bytes / 1024))" "$nfixed" "$npat" >&2
}
