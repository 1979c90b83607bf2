#!/bin/sh
#
# test_token_tool.sh: checks cfpm-token against independent tools (TAP).
#
# Keys and signatures are checked with the openssl CLI, never with the code
# under test; python3 only decodes JSON. The binary is
# $CFPM_BUILDDIR/cfpm-token (default: the current directory).

set -u

BIN=${CFPM_BUILDDIR:-.}/cfpm-token
NOW=1700000000

# shellcheck source=tests/unit/tap.sh
. "$(dirname "$0")/tap.sh"

for tool in openssl python3 od tr; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "1..0 # SKIP $tool not found"
		exit 0
	fi
done
if [ ! -x "$BIN" ]; then
	echo "Bail out! $BIN not found (set CFPM_BUILDDIR)"
	exit 1
fi

T=$(mktemp -d "${TMPDIR:-/tmp}/cfpm-token-test.XXXXXX") || {
	echo "Bail out! mktemp failed"
	exit 1
}
trap 'rm -rf "$T"' EXIT
trap 'exit 1' HUP INT TERM

# Strict base64url (no padding) to bytes on stdout.
b64url_decode() {
	_s=$(printf '%s' "$1" | tr '_-' '/+')
	case $((${#_s} % 4)) in
	1)	return 1 ;;
	2)	_s="$_s==" ;;
	3)	_s="$_s=" ;;
	esac
	printf '%s' "$_s" | openssl base64 -d -A
}

hex() {
	od -An -v -tx1 | tr -d ' \n' | tr 'a-f' 'A-F'
}

# split TOKEN: sets H, P, S; fails unless exactly three non-empty parts
# of the base64url alphabet.
split() {
	case $1 in
	*[!A-Za-z0-9_.-]*)	return 1 ;;
	esac
	H=${1%%.*}
	_r=${1#*.}
	P=${_r%%.*}
	S=${_r#*.}
	case $S in
	*.*)	return 1 ;;
	esac
	[ -n "$H" ] && [ -n "$P" ] && [ -n "$S" ] && [ "$H.$P.$S" = "$1" ]
}

# verify TOKEN PUBKEY: the RS256 signature checked by openssl dgst.
verify() {
	split "$1" || return 1
	printf '%s.%s' "$H" "$P" >"$T/signed"
	b64url_decode "$S" >"$T/sig" || return 1
	openssl dgst -sha256 -verify "$2" -signature "$T/sig" "$T/signed" \
	    >/dev/null 2>&1
}

# part TOKEN 1|2 FILE: decoded header (1) or payload (2) into FILE.
part() {
	split "$1" || return 1
	if [ "$2" -eq 1 ]; then
		b64url_decode "$H" >"$3"
	else
		b64url_decode "$P" >"$3"
	fi
}

# json FILE EXPR: prints EXPR evaluated on the JSON object d (python
# syntax), after rejecting duplicate members.
json() {
	python3 - "$1" "$2" <<'EOF'
import json, sys
def nodup(pairs):
    keys = [k for k, _ in pairs]
    if len(keys) != len(set(keys)):
        raise ValueError("duplicate member")
    return dict(pairs)
with open(sys.argv[1], "rb") as f:
    d = json.loads(f.read().decode("utf-8"), object_pairs_hook=nodup)
v = eval(sys.argv[2], {"d": d})
print(json.dumps(v, separators=(",", ":")) if not isinstance(v, str) else v)
EOF
}

# is GOT WANT DESCRIPTION
is() {
	if [ "$1" = "$2" ]; then
		ok 0 "$3"
	else
		ok 1 "$3"
		echo "#   got '$1', want '$2'"
	fi
}

ends_nl() {
	[ "$(tail -c 1 "$1" | hex)" = 0A ]
}

K=$T/keys
KEY=$K/jwt.key.pem
PUB=$K/jwt.pub.pem

# --- usage and errors

"$BIN" >/dev/null 2>&1
is $? 2 "no command: exit 2"
"$BIN" mint >/dev/null 2>&1
is $? 2 "mint without --key: exit 2"
"$BIN" mint --key x --bogus >/dev/null 2>&1
is $? 2 "unknown option: exit 2"
"$BIN" mint --key x --exp 12x >/dev/null 2>&1
is $? 2 "bad integer: exit 2"
"$BIN" frobnicate >/dev/null 2>&1
is $? 2 "unknown command: exit 2"
out=$("$BIN" mint -h 2>/dev/null)
st=$?
is "$st" 0 "mint -h: exit 0"
case $out in
*"usage: cfpm-token mint"*)	ok 0 "mint -h prints usage" ;;
*)				ok 1 "mint -h prints usage" ;;
esac
err=$("$BIN" mint --key "$T/nonexistent.pem" 2>&1 >/dev/null)
st=$?
is "$st" 1 "missing key file: exit 1"
case $err in
"cfpm-token: "*)	ok 0 "errors start with 'cfpm-token: '" ;;
*)			ok 1 "errors start with 'cfpm-token: '" ;;
esac
"$BIN" keygen --dir "$T/small" --bits 1024 >/dev/null 2>&1
is $? 2 "keygen --bits 1024 refused"

# --- keygen

out=$("$BIN" keygen --dir "$K")
is $? 0 "keygen: exit 0"
is "$out" "" "keygen prints nothing (no key material on stdout)"
check "jwt.key.pem, jwt.pub.pem, jwks.json exist" \
    test -s "$KEY" -a -s "$PUB" -a -s "$K/jwks.json"
is "$(ls -l "$KEY" | cut -c1-10)" "-rw-------" "private key mode 0600"
is "$(head -n 1 "$KEY")" "-----BEGIN PRIVATE KEY-----" "private key is PKCS#8"
is "$(head -n 1 "$PUB")" "-----BEGIN PUBLIC KEY-----" "public key is SPKI"
check "private key parses as RSA-2048" sh -c \
    "openssl pkey -in '$KEY' -noout -text | grep -q 'Private-Key: (2048 bit'"
check "jwt.pub.pem is the public half of jwt.key.pem" sh -c \
    "openssl pkey -in '$KEY' -pubout | cmp -s - '$PUB'"
check "every file ends with a newline" sh -c \
    "for f in '$KEY' '$PUB' '$K/jwks.json'; do
	[ \"\$(tail -c 1 \"\$f\" | od -An -tx1 | tr -d ' ')\" = 0a ] || exit 1
    done"

cp "$KEY" "$T/key.saved"
"$BIN" keygen --dir "$K" >/dev/null 2>&1
is $? 1 "keygen over existing files fails without --force"
check "existing key left untouched" cmp -s "$KEY" "$T/key.saved"

"$BIN" keygen --dir "$T/k2" --kid other-2 >/dev/null 2>&1 &&
    cp "$T/k2/jwt.key.pem" "$T/k2.saved" &&
    chmod 0644 "$T/k2/jwt.key.pem" &&
    "$BIN" keygen --dir "$T/k2" --kid other-2 --force >/dev/null 2>&1
ok $? "keygen --force replaces existing files"
check "--force wrote a new key" sh -c "! cmp -s '$T/k2/jwt.key.pem' '$T/k2.saved'"
is "$(ls -l "$T/k2/jwt.key.pem" | cut -c1-10)" "-rw-------" \
    "--force resets the private key mode to 0600"
is "$(json "$T/k2/jwks.json" 'd["keys"][0]["kid"]')" other-2 "--kid sets the JWKS kid"

# --- jwks.json

J=$K/jwks.json
is "$(json "$J" 'len(d["keys"])')" 1 "jwks.json: one key"
is "$(json "$J" '[d["keys"][0][k] for k in ("kty","use","alg","kid")]')" \
    '["RSA","sig","RS256","bench-1"]' "jwks.json: kty, use, alg, kid"
jn=$(json "$J" 'd["keys"][0]["n"]')
je=$(json "$J" 'd["keys"][0]["e"]')
case $jn$je in
*=*|*+*|*/*)	ok 1 "n and e are base64url without padding" ;;
*)		ok 0 "n and e are base64url without padding" ;;
esac
mod=$(openssl rsa -pubin -in "$PUB" -modulus -noout 2>/dev/null)
is "Modulus=$(b64url_decode "$jn" | hex)" "$mod" \
    "jwks n is the key's modulus (big-endian, no leading zero)"
is "$(b64url_decode "$je" | hex)" 010001 "jwks e is 65537"
check "openssl agrees the exponent is 65537" sh -c \
    "openssl rsa -pubin -in '$PUB' -noout -text 2>/dev/null | grep -q 'Exponent: 65537 (0x10001)'"

# --- mint with the benchmark's defaults

tok=$("$BIN" mint --key "$KEY" --now $NOW)
is $? 0 "mint: exit 0"
check "token: three base64url parts, no padding" split "$tok"
check "signature verifies with openssl dgst -sha256 -verify" verify "$tok" "$PUB"
split "$tok"
is "$(b64url_decode "$S" | wc -c | tr -d ' ')" 256 "signature is 256 bytes"
printf '%s.%s.%s' "$H" "$(printf '%s' '{"sub":"x"}' | openssl base64 -A |
    tr '/+' '_-' | tr -d '=')" "$S" >"$T/forged"
if verify "$(cat "$T/forged")" "$PUB"; then
	ok 1 "negative control: changed payload does not verify"
else
	ok 0 "negative control: changed payload does not verify"
fi
part "$tok" 1 "$T/h.json"
part "$tok" 2 "$T/p.json"
is "$(cat "$T/h.json")" '{"alg":"RS256","typ":"JWT","kid":"bench-1"}' \
    "header is exactly the benchmark's"
is "$(json "$T/p.json" 'd["iss"]')" https://auth.bench.local "iss"
is "$(json "$T/p.json" 'd["aud"]')" events-api "aud"
is "$(json "$T/p.json" 'd["sub"]')" client-bench "sub"
is "$(json "$T/p.json" 'd["client_id"]')" client-bench "client_id"
is "$(json "$T/p.json" 'd["scope"]')" "events:read events:write" "scope"
is "$(json "$T/p.json" '[d["iat"], d["nbf"], d["exp"]]')" \
    "[$NOW,$((NOW - 60)),$((NOW + 604800))]" "iat = now, nbf = now-60, exp = now+7d"
is "$(json "$T/p.json" 'all(type(d[k]) is int for k in ("iat","nbf","exp"))')" \
    true "times are JSON integers"
jti=$(json "$T/p.json" 'd["jti"]')
case $jti in
*[!0-9a-f]*)	ok 1 "jti is 32 hex digits" ;;
*)		[ ${#jti} -eq 32 ]; ok $? "jti is 32 hex digits" ;;
esac
tok2=$("$BIN" mint --key "$KEY" --now $NOW)
part "$tok2" 2 "$T/p2.json"
check "two mints get different jti" \
    test "$jti" != "$(json "$T/p2.json" 'd["jti"]')"
case $tok in
*PRIVATE*)	ok 1 "no key material in the output" ;;
*)		ok 0 "no key material in the output" ;;
esac

# --- mint options

tok=$("$BIN" mint --key "$KEY" --no-kid --no-typ --no-scope --no-jti \
    --no-nbf --no-iat --now $NOW)
part "$tok" 1 "$T/h.json"
part "$tok" 2 "$T/p.json"
is "$(cat "$T/h.json")" '{"alg":"RS256"}' "--no-kid --no-typ: header is alg only"
is "$(json "$T/p.json" 'sorted(d)')" '["aud","client_id","exp","iss","sub"]' \
    "--no-scope --no-jti --no-nbf --no-iat leave those claims out"
check "that token verifies too" verify "$tok" "$PUB"

tok=$("$BIN" mint --key "$KEY" --kid k9 --typ at+jwt --aud a1 --aud a2 \
    --sub 'we"ird\sub' --scope events:read --exp -5 --jti j-1 --now $NOW)
part "$tok" 1 "$T/h.json"
part "$tok" 2 "$T/p.json"
is "$(cat "$T/h.json")" '{"alg":"RS256","typ":"at+jwt","kid":"k9"}' "--kid --typ"
is "$(json "$T/p.json" 'd["aud"]')" '["a1","a2"]' "--aud twice gives an array"
is "$(json "$T/p.json" 'd["sub"]')" 'we"ird\sub' "--sub is JSON-escaped correctly"
is "$(json "$T/p.json" '[d["scope"], d["jti"], d["exp"]]')" \
    "[\"events:read\",\"j-1\",$((NOW - 5))]" "--scope --jti --exp"

"$BIN" mint --key "$KEY" --now 9223372036854775807 >/dev/null 2>&1
is $? 1 "exp past 2^63-1 refused"

# --- sign (verbatim)

hdr='{"alg":"RS256", "kid":"bench-1","kid":"dup"}'
pl='{"sub":"x","exp":1e400}'
tok=$("$BIN" sign --key "$KEY" --header "$hdr" --payload "$pl")
is $? 0 "sign: exit 0"
check "sign: signature verifies" verify "$tok" "$PUB"
part "$tok" 1 "$T/h.raw"
part "$tok" 2 "$T/p.raw"
is "$(cat "$T/h.raw")" "$hdr" "sign: header bytes kept verbatim"
is "$(cat "$T/p.raw")" "$pl" "sign: payload bytes kept verbatim"
"$BIN" sign --key "$KEY" --header '{}' >/dev/null 2>&1
is $? 2 "sign without --payload: exit 2"

# --- bench

B=$T/bench
"$BIN" bench --key "$KEY" --dir "$B" --pool 5 --now $NOW
is $? 0 "bench: exit 0"
all=0
for f in valid readonly writeonly expired notyet foreign; do
	[ -s "$B/$f.jwt" ] && ends_nl "$B/$f.jwt" && [ "$(wc -l <"$B/$f.jwt")" -eq 1 ] ||
	    all=1
done
ok $all "bench: six token files, one line each, ending in a newline"
ends_nl "$B/pool.txt"
ok $? "pool.txt ends with a newline"
all=0
for f in valid readonly writeonly expired notyet; do
	verify "$(cat "$B/$f.jwt")" "$PUB" || all=1
done
ok $all "valid, readonly, writeonly, expired, notyet verify with the key"
if verify "$(cat "$B/foreign.jwt")" "$PUB"; then
	ok 1 "foreign.jwt does not verify with the key"
else
	ok 0 "foreign.jwt does not verify with the key"
fi
part "$(cat "$B/foreign.jwt")" 1 "$T/h.json"
is "$(json "$T/h.json" 'd["kid"]')" bench-1 "foreign.jwt carries the same kid"

claim() {
	part "$(cat "$B/$1.jwt")" 2 "$T/c.json" && json "$T/c.json" "$2"
}
is "$(claim valid 'd["scope"]')" "events:read events:write" "valid: both scopes"
is "$(claim readonly 'd["scope"]')" "events:read" "readonly: events:read"
is "$(claim writeonly 'd["scope"]')" "events:write" "writeonly: events:write"
is "$(claim expired '[d["nbf"], d["exp"]]')" "[$((NOW - 7200)),$((NOW - 3600))]" \
    "expired: nbf now-7200, exp now-3600"
is "$(claim notyet '[d["nbf"], d["exp"]]')" "[$((NOW + 3600)),$((NOW + 604800))]" \
    "notyet: nbf now+3600"
is "$(claim valid '[d["iss"], d["aud"], d["sub"], d["client_id"]]')" \
    '["https://auth.bench.local","events-api","client-bench","client-bench"]' \
    "valid: benchmark iss, aud, sub, client_id"

is "$(wc -l <"$B/pool.txt" | tr -d ' ')" 5 "pool.txt: --pool 5 gives 5 lines"
: >"$T/jtis"
: >"$T/subs"
all=0
while read -r line; do
	verify "$line" "$PUB" || all=1
	part "$line" 2 "$T/c.json" || all=1
	json "$T/c.json" 'd["jti"]' >>"$T/jtis"
	json "$T/c.json" 'd["sub"]' >>"$T/subs"
done <"$B/pool.txt"
ok $all "every pool token verifies"
is "$(sort -u "$T/jtis" | wc -l | tr -d ' ')" 5 "pool jti are distinct"
is "$(sort -u "$T/subs")" client-bench "pool sub stays client-bench by default"

"$BIN" bench --key "$KEY" --dir "$B" --pool 3 --distinct-sub --now $NOW
is $? 0 "bench --distinct-sub over an existing set: exit 0"
: >"$T/subs"
while read -r line; do
	part "$line" 2 "$T/c.json"
	json "$T/c.json" 'd["sub"]' >>"$T/subs"
done <"$B/pool.txt"
is "$(tr '\n' ' ' <"$T/subs")" "client-bench-1 client-bench-2 client-bench-3 " \
    "--distinct-sub: sub client-bench-<i>"
is "$(ls -l "$B/valid.jwt" | cut -c1-10)" "-rw-------" "token files are mode 0600"

finish
