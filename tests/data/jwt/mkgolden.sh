#!/bin/sh
# mkgolden.sh: test keys and golden tokens for tests/unit/test_jwt.c.
#
# TEST-ONLY KEY MATERIAL: the private keys here are public; never use them
# outside the test suite.
#
# Keys are made once (delete them to get new ones); tokens are rewritten on
# every run. RS256 signatures are deterministic, so with the same keys a run
# reproduces the same files (only the PS256 token changes: random salt).
# Times are fixed around NOW=1800000000 (2027-01-15), the "now" that
# test_jwt.c passes to jwt_verify(), so the tokens never expire.
#
# Needs only openssl, base64, tr and printf (and a POSIX sh).
#   sh tests/data/jwt/mkgolden.sh
set -eu
case $0 in */*) cd "${0%/*}" ;; esac

NOW=1800000000
ISS='"iss":"https://issuer.test"'
AUD='"aud":"cfpm-test"'
SUB='"sub":"user-1"'
SCOPE='"scope":"events:read events:write"'
EXP="\"exp\":$((NOW + 3600))"
NBF="\"nbf\":$((NOW - 60))"
IAT="\"iat\":$((NOW - 60))"

H='{"alg":"RS256","typ":"JWT"}'
H1='{"alg":"RS256","typ":"JWT","kid":"test-1"}'
H2='{"alg":"RS256","typ":"JWT","kid":"test-2"}'

die() { printf 'mkgolden.sh: %s\n' "$*" >&2; exit 1; }

# Standard input to base64url without padding, on one line.
b64url() { base64 | tr -d '\n=' | tr '+/' '-_'; }
# Standard input to standard base64 with padding, on one line.
b64std() { base64 | tr -d '\n'; }
# Standard input to standard base64 without padding.
b64std_nopad() { base64 | tr -d '\n='; }
# base64url (argument) back to bytes on standard output.
unb64url() {
	s=$(printf '%s' "$1" | tr -- '-_' '+/')
	case $(( ${#s} % 4 )) in 2) s="$s==" ;; 3) s="$s=" ;; esac
	printf '%s' "$s" | base64 -d
}
# Hex digits (argument) to bytes on standard output.
hex2bin() {
	h=$1
	while [ -n "$h" ]; do
		b=${h%"${h#??}"}
		h=${h#??}
		printf "\\$(printf %o $((0x$b)))"
	done
}
# N copies of character C.
rep() {
	r= i=0
	while [ $i -lt "$1" ]; do r="$r$2"; i=$((i + 1)); done
	printf '%s' "$r"
}
# Members (arguments) joined into a JSON object.
obj() { (IFS=,; printf '{%s}' "$*"); }
# RSA modulus of a public key PEM as base64url.
modulus() {
	m=$(openssl rsa -pubin -in "$1" -noout -modulus)
	hex2bin "${m#Modulus=}" | b64url
}

# sig SIGNER SIGNING-INPUT: the signature, base64url.
sig() {
	case $1 in
	rs256)   printf '%s' "$2" | openssl dgst -sha256 -sign key.pem -binary ;;
	rs256_2) printf '%s' "$2" | openssl dgst -sha256 -sign key2.pem -binary ;;
	foreign) printf '%s' "$2" | openssl dgst -sha256 -sign foreign.pem -binary ;;
	rs384)   printf '%s' "$2" | openssl dgst -sha384 -sign key.pem -binary ;;
	ps256)   printf '%s' "$2" | openssl dgst -sha256 -sign key.pem \
	    -sigopt rsa_padding_mode:pss -sigopt rsa_pss_saltlen:32 -binary ;;
	# The classic confusion attack: HMAC keyed with the public key PEM.
	hs256)   printf '%s' "$2" | openssl dgst -sha256 -mac HMAC \
	    -macopt "key:$PUBPEM" -binary ;;
	none)    ;;
	*)       die "unknown signer $1" ;;
	esac | b64url
}

# mk NAME HEADER PAYLOAD [SIGNER]: NAME.jwt, a correctly signed token.
# Sets HB, PB, SI (signing input), SG (signature) and TOK.
mk() {
	HB=$(printf '%s' "$2" | b64url)
	PB=$(printf '%s' "$3" | b64url)
	SI="$HB.$PB"
	SG=$(sig "${4:-rs256}" "$SI")
	TOK="$SI.$SG"
	printf '%s' "$TOK" > "$1.jwt"
}

# raw NAME TEXT: a hand-made token (format cases).
raw() { printf '%s' "$2" > "$1.jwt"; }

# mkenc NAME ENCODER HEADER PAYLOAD: header and payload encoded by ENCODER
# and signed as they are, so only the decoder's strictness can refuse it.
mkenc() {
	hb=$(printf '%s' "$3" | $2)
	pb=$(printf '%s' "$4" | $2)
	printf '%s.%s.%s' "$hb" "$pb" "$(sig rs256 "$hb.$pb")" > "$1.jwt"
	RAWSI="$hb.$pb"
}

# ---------------------------------------------------------------- keys
genrsa() {
	[ -f "$1" ] || openssl genpkey -algorithm RSA \
	    -pkeyopt rsa_keygen_bits:"$2" -out "$1" 2>/dev/null
}
genrsa key.pem 2048
genrsa key2.pem 2048
genrsa foreign.pem 2048
openssl pkey -in key.pem -pubout -out pub.pem
openssl pkey -in key2.pem -pubout -out pub2.pem
openssl pkey -in foreign.pem -pubout -out foreign_pub.pem
# Refused by the key loader, so only the public halves are kept.
[ -f small_pub.pem ] || openssl genpkey -algorithm RSA \
    -pkeyopt rsa_keygen_bits:1024 2>/dev/null |
    openssl pkey -pubout -out small_pub.pem
[ -f ec_pub.pem ] || openssl genpkey -algorithm EC \
    -pkeyopt ec_paramgen_curve:P-256 2>/dev/null |
    openssl pkey -pubout -out ec_pub.pem

# Keys made by genpkey have e = 65537, "AQAB".
N1=$(modulus pub.pem)
N2=$(modulus pub2.pem)
NF=$(modulus foreign_pub.pem)
NS=$(modulus small_pub.pem)
jwk() { printf '{"kty":"RSA","use":"sig","alg":"RS256","kid":"%s","n":"%s","e":"AQAB"}' "$1" "$2"; }
printf '{"keys":[%s,%s]}\n' "$(jwk test-1 "$N1")" "$(jwk test-2 "$N2")" > jwks.json
printf '{"keys":[%s]}\n' "$(jwk foreign-1 "$NF")" > foreign_jwks.json
printf '{"keys":[%s]}\n' "$(jwk small-1 "$NS")" > small_jwks.json
# A PEM file with two keys: the loader must not silently use the first.
{ openssl pkey -pubin -in pub.pem; openssl pkey -pubin -in pub2.pem; } > two_pub.pem

PUBPEM=$(openssl pkey -pubin -in pub.pem; printf x)
PUBPEM=${PUBPEM%x}

P=$(obj "$ISS" "$SUB" "$AUD" "$EXP" "$NBF" "$IAT" "$SCOPE")

# ---------------------------------------------------------------- valid
mk valid "$H" "$P"
VALID=$TOK VHB=$HB VPB=$PB VSG=$SG
mk valid_kid1 "$H1" "$P"
mk valid_kid2 "$H2" "$P" rs256_2
mk kid1_signed_by_key2 "$H1" "$P" rs256_2
mk valid_at_jwt '{"alg":"RS256","typ":"at+jwt","kid":"test-1"}' "$P"
mk valid_app_at_jwt '{"alg":"RS256","typ":"application/at+jwt"}' "$P"
mk valid_no_typ '{"alg":"RS256"}' "$P"
mk valid_no_scope "$H" "$(obj "$ISS" "$SUB" "$AUD" "$EXP")"
mk valid_scope_utf8 "$H" "$(obj "$ISS" "$SUB" "$AUD" "$EXP" '"scope":"a\u00e9 b\/c"')"
mk valid_scope_empty "$H" "$(obj "$ISS" "$SUB" "$AUD" "$EXP" '"scope":""')"
mk valid_sub_255 "$H" "$(obj "$ISS" "\"sub\":\"$(rep 255 s)\"" "$AUD" "$EXP")"
mk sub_256 "$H" "$(obj "$ISS" "\"sub\":\"$(rep 256 s)\"" "$AUD" "$EXP")"
mk valid_scope_1024 "$H" "$(obj "$ISS" "$SUB" "$AUD" "$EXP" "\"scope\":\"$(rep 1024 s)\"")"
mk scope_1025 "$H" "$(obj "$ISS" "$SUB" "$AUD" "$EXP" "\"scope\":\"$(rep 1025 s)\"")"
# Unknown claims and unknown header members are ignored.
mk valid_extra "$H" "$(obj "$ISS" "$SUB" "$AUD" "$EXP" '"client_id":"c","jti":"j","x":{"y":[1,2]}')"

# ---------------------------------------------------------------- alg
mk alg_none '{"alg":"none","typ":"JWT"}' "$P" none
mk alg_None '{"alg":"None","typ":"JWT"}' "$P" none
mk alg_NONE '{"alg":"NONE","typ":"JWT"}' "$P" none
mk alg_none_rs256sig '{"alg":"none","typ":"JWT"}' "$P"
mk alg_missing '{"typ":"JWT"}' "$P"
mk alg_number '{"alg":256,"typ":"JWT"}' "$P"
mk alg_rs256_lower '{"alg":"rs256","typ":"JWT"}' "$P"
mk alg_hs256 '{"alg":"HS256","typ":"JWT"}' "$P" hs256
mk alg_rs384 '{"alg":"RS384","typ":"JWT"}' "$P" rs384
mk alg_ps256 '{"alg":"PS256","typ":"JWT"}' "$P" ps256
mk alg_es256 '{"alg":"ES256","typ":"JWT"}' "$P"
mk alg_array '{"alg":["RS256"],"typ":"JWT"}' "$P"

# ---------------------------------------------------------------- format
# Same bytes as "valid", with padding on every segment that needs it,
# signed over the padded form (the signature is good; only strictness saves us).
P_PAD=$P
case $(printf '%s' "$P_PAD" | b64std) in *=) ;; *) P_PAD="$P_PAD " ;; esac
case $(printf '%s' "$P_PAD" | b64std) in *=) ;; *) P_PAD="$P_PAD " ;; esac
mkenc pad_signed "b64std" "$H" "$P_PAD"
case $RAWSI in *=*) ;; *) die "pad_signed has no padding" ;; esac
raw pad_sig "$VALID=="
# '+' and '/': std-alphabet base64 of a payload that must contain both.
P_STD=$(obj "$ISS" "$SUB" "$AUD" "$EXP" '"x":"~~~~~~??????"')
mkenc plus_slash_signed "b64std_nopad" "$H" "$P_STD"
case $RAWSI in *+*/*|*/*+*) ;; *) die "plus_slash_signed lacks + or /" ;; esac
case $VSG in *-*) ;; *) die "valid signature has no '-': regenerate keys" ;; esac
case $VSG in *_*) ;; *) die "valid signature has no '_': regenerate keys" ;; esac
raw plus_sig "$VHB.$VPB.$(printf '%s' "$VSG" | tr -- - +)"
raw slash_sig "$VHB.$VPB.$(printf '%s' "$VSG" | tr _ /)"
raw segments_1 "$VHB"
raw segments_2 "$VHB.$VPB"
raw segments_4 "$VALID.$VSG"
raw segments_5 "$VALID.$VSG.$VSG"
raw trailing_dot "$VALID."
raw empty_header ".$VPB.$VSG"
raw empty_payload "$VHB..$VSG"
raw empty_sig "$VHB.$VPB."
raw bad_char "$VHB.$VPB.*${VSG#?}"
# Length 1 mod 4 and non-canonical trailing bits in the header.
raw len_1mod4 "${VHB}A.$VPB.$VSG"
# The 28-byte header below ends in a 2-character group whose last
# character carries 4 spare bits, which must be zero; set one and sign.
HB=$(printf '%s' '{"alg":"RS256","typ":"JWT"} ' | b64url)
case $HB in *A) NCH="${HB%A}B" ;; *Q) NCH="${HB%Q}R" ;; *g) NCH="${HB%g}h" ;;
	*w) NCH="${HB%w}x" ;; *) die "unexpected end of header $HB" ;; esac
printf '%s.%s.%s' "$NCH" "$VPB" "$(sig rs256 "$NCH.$VPB")" > noncanon_signed.jwt

# Signature length and value.
raw sig_255 "$VHB.$VPB.${VSG%??}"
raw sig_257_lead0 "$VHB.$VPB.$({ printf '\000'; unb64url "$VSG"; } | b64url)"
raw sig_zero "$VHB.$VPB.$(i=0; while [ $i -lt 256 ]; do printf '\000'; i=$((i + 1)); done | b64url)"
raw sig_hs256_len "$VHB.$VPB.$(sig hs256 "$VHB.$VPB")"
# The payload changed after signing.
raw tampered "$VHB.$(obj "$ISS" '"sub":"admin"' "$AUD" "$EXP" "$NBF" "$IAT" "$SCOPE" | b64url).$VSG"
mk foreign "$H" "$P" foreign
mk foreign_kid1 "$H1" "$P" foreign
# The signature is checked before the claims: a bad signature wins.
mk foreign_expired "$H" "$(obj "$ISS" "$SUB" "$AUD" "\"exp\":$((NOW - 1))")" foreign
mk foreign_bad_exp_type "$H" "$(obj "$ISS" "$SUB" "$AUD" '"exp":"soon"')" foreign

# Length: exactly JWT_MAX_LEN (8192) bytes is fine, more is not.
# pad_to NAME BYTES: a valid token of BYTES bytes (BYTES - 380 a multiple of 4).
pad_to() {
	base=$(obj "$ISS" "$SUB" "$AUD" "$EXP" '"pad":""')
	# 36 header chars, 2 dots, 342 signature chars; 4 chars per 3 bytes.
	plen=$(( ($2 - 36 - 2 - 342) * 3 / 4 - ${#base} ))
	mk "$1" "$H" "$(obj "$ISS" "$SUB" "$AUD" "$EXP" "\"pad\":\"$(rep "$plen" x)\"")"
	[ ${#TOK} -eq "$2" ] || die "$1 is ${#TOK} bytes"
}
pad_to len_8192 8192
pad_to len_9000 9000

# ---------------------------------------------------------------- header
mk header_dup_alg '{"alg":"none","alg":"RS256","typ":"JWT"}' "$P"
mk header_array '["RS256"]' "$P"
mk header_not_json 'alg=RS256' "$P"
mk header_trailing '{"alg":"RS256","typ":"JWT"}x' "$P"
mk header_bad_utf8 "$(printf '{"alg":"RS256","typ":"JWT","x":"\377"}')" "$P"
mk header_nul '{"alg":"RS256","typ":"JWT","x":"a\u0000b"}' "$P"
mk header_deep_16 "{\"alg\":\"RS256\",\"x\":$(rep 15 '[')1$(rep 15 ']')}" "$P"
mk header_deep_17 "{\"alg\":\"RS256\",\"x\":$(rep 16 '[')1$(rep 16 ']')}" "$P"
mk crit_array '{"alg":"RS256","typ":"JWT","crit":["exp"],"exp":1}' "$P"
mk crit_string '{"alg":"RS256","typ":"JWT","crit":"exp"}' "$P"
mk crit_empty '{"alg":"RS256","typ":"JWT","crit":[]}' "$P"
mk typ_foo '{"alg":"RS256","typ":"foo"}' "$P"
mk typ_lower_jwt '{"alg":"RS256","typ":"jwt"}' "$P"
mk typ_number '{"alg":"RS256","typ":1}' "$P"
mk typ_null '{"alg":"RS256","typ":null}' "$P"
mk kid_unknown '{"alg":"RS256","typ":"JWT","kid":"test-9"}' "$P"
mk kid_number '{"alg":"RS256","typ":"JWT","kid":1}' "$P"
mk kid_empty '{"alg":"RS256","typ":"JWT","kid":""}' "$P"
mk kid_4k "{\"alg\":\"RS256\",\"typ\":\"JWT\",\"kid\":\"$(rep 4096 k)\"}" "$P"
mk kid_256 "{\"alg\":\"RS256\",\"typ\":\"JWT\",\"kid\":\"$(rep 256 k)\"}" "$P"
mk kid_257 "{\"alg\":\"RS256\",\"typ\":\"JWT\",\"kid\":\"$(rep 257 k)\"}" "$P"
mk kid_path '{"alg":"RS256","typ":"JWT","kid":"../../etc/passwd"}' "$P"
# Key-carrying headers are ignored: with our key they pass, with theirs not.
FJWK="{\"kty\":\"RSA\",\"n\":\"$NF\",\"e\":\"AQAB\"}"
mk jwk_jku_x5u_ours "{\"alg\":\"RS256\",\"typ\":\"JWT\",\"jwk\":$FJWK,\"jku\":\"https://evil.test/jwks\",\"x5u\":\"https://evil.test/x.pem\",\"x5c\":[\"AAAA\"]}" "$P"
mk jwk_foreign "{\"alg\":\"RS256\",\"typ\":\"JWT\",\"jwk\":$FJWK}" "$P" foreign
mk jwk_foreign_kid1 "{\"alg\":\"RS256\",\"typ\":\"JWT\",\"kid\":\"test-1\",\"jwk\":$FJWK}" "$P" foreign
mk jku_foreign '{"alg":"RS256","typ":"JWT","jku":"https://evil.test/jwks","kid":"foreign-1"}' "$P" foreign

# ---------------------------------------------------------------- claims
mk payload_array "$H" '[1,2]'
mk payload_number "$H" '1800003600'
mk payload_string "$H" '"x"'
mk payload_not_json "$H" 'sub=user-1'
mk payload_empty_obj "$H" '{}'
mk claims_dup_sub "$H" "$(obj "$ISS" "$SUB" "$AUD" "$EXP" '"sub":"admin"')"
mk claims_dup_exp "$H" "$(obj "$ISS" "$SUB" "$AUD" '"exp":1' "$EXP")"
mk claims_bad_utf8 "$H" "$(obj "$ISS" "$(printf '"sub":"user-\377"')" "$AUD" "$EXP")"
mk claims_overlong_utf8 "$H" "$(obj "$ISS" "$(printf '"sub":"user\300\257"')" "$AUD" "$EXP")"
mk claims_nul_other "$H" "$(obj "$ISS" "$SUB" "$AUD" "$EXP" '"x":"a\u0000"')"
mk claims_deep_16 "$H" "$(obj "$ISS" "$SUB" "$AUD" "$EXP" "\"x\":$(rep 15 '{"a":')1$(rep 15 '}')")"
mk claims_deep_17 "$H" "$(obj "$ISS" "$SUB" "$AUD" "$EXP" "\"x\":$(rep 16 '{"a":')1$(rep 16 '}')")"

# iss
mk iss_other "$H" "$(obj '"iss":"https://evil.test"' "$SUB" "$AUD" "$EXP")"
mk iss_slash "$H" "$(obj '"iss":"https://issuer.test/"' "$SUB" "$AUD" "$EXP")"
mk iss_case "$H" "$(obj '"iss":"https://ISSUER.test"' "$SUB" "$AUD" "$EXP")"
mk iss_missing "$H" "$(obj "$SUB" "$AUD" "$EXP")"
mk iss_array "$H" "$(obj '"iss":["https://issuer.test"]' "$SUB" "$AUD" "$EXP")"
# aud
mk aud_array_with "$H" "$(obj "$ISS" "$SUB" '"aud":["other","cfpm-test"]' "$EXP")"
mk aud_array_without "$H" "$(obj "$ISS" "$SUB" '"aud":["other","cfpm-test2"]' "$EXP")"
mk aud_array_mixed "$H" "$(obj "$ISS" "$SUB" '"aud":[1,"cfpm-test"]' "$EXP")"
mk aud_array_empty "$H" "$(obj "$ISS" "$SUB" '"aud":[]' "$EXP")"
mk aud_other "$H" "$(obj "$ISS" "$SUB" '"aud":"cfpm-test2"' "$EXP")"
mk aud_prefix "$H" "$(obj "$ISS" "$SUB" '"aud":"cfpm-tes"' "$EXP")"
mk aud_number "$H" "$(obj "$ISS" "$SUB" '"aud":1' "$EXP")"
mk aud_missing "$H" "$(obj "$ISS" "$SUB" "$EXP")"
# sub
mk sub_empty "$H" "$(obj "$ISS" '"sub":""' "$AUD" "$EXP")"
mk sub_missing "$H" "$(obj "$ISS" "$AUD" "$EXP")"
mk sub_number "$H" "$(obj "$ISS" '"sub":1' "$AUD" "$EXP")"
mk sub_null "$H" "$(obj "$ISS" '"sub":null' "$AUD" "$EXP")"
mk sub_nul "$H" "$(obj "$ISS" '"sub":"user-1\u0000admin"' "$AUD" "$EXP")"
# scope
mk scope_array "$H" "$(obj "$ISS" "$SUB" "$AUD" "$EXP" '"scope":["events:read"]')"
mk scope_number "$H" "$(obj "$ISS" "$SUB" "$AUD" "$EXP" '"scope":1')"
mk scope_null "$H" "$(obj "$ISS" "$SUB" "$AUD" "$EXP" '"scope":null')"
# exp
mkexp() { mk "$1" "$H" "$(obj "$ISS" "$SUB" "$AUD" "\"exp\":$2")"; }
mkexp exp_now "$NOW"
mkexp exp_now_plus_1 "$((NOW + 1))"
mkexp exp_now_minus_1 "$((NOW - 1))"
mkexp exp_now_plus_half "$NOW.5"
mkexp exp_now_real "$NOW.0"
mkexp exp_now_minus_half "$((NOW - 1)).5"
mkexp exp_int64_max 9223372036854775807
mkexp exp_int64_min -9223372036854775808
mkexp exp_2p63 9223372036854775808
mkexp exp_negative -1
mkexp exp_zero 0
mkexp exp_1e400 1e400
mkexp exp_1e300 1e300
mkexp exp_minus_1e300 -1e300
mkexp exp_exponent 1.8000036e9
mkexp exp_string "\"$((NOW + 3600))\""
mkexp exp_true true
mkexp exp_false false
mkexp exp_null null
mkexp exp_array "[$((NOW + 3600))]"
mkexp exp_object '{}'
mk exp_missing "$H" "$(obj "$ISS" "$SUB" "$AUD")"
# nbf (exp is fine)
mknbf() { mk "$1" "$H" "$(obj "$ISS" "$SUB" "$AUD" "$EXP" "\"nbf\":$2")"; }
mknbf nbf_now "$NOW"
mknbf nbf_now_plus_1 "$((NOW + 1))"
mknbf nbf_now_plus_half "$NOW.5"
mknbf nbf_int64_min -9223372036854775808
mknbf nbf_int64_max 9223372036854775807
mknbf nbf_string "\"$NOW\""
mknbf nbf_null null
mknbf nbf_true true
mknbf nbf_1e400 1e400
# iat: any NumericDate, never checked against now
mkiat() { mk "$1" "$H" "$(obj "$ISS" "$SUB" "$AUD" "$EXP" "\"iat\":$2")"; }
mkiat iat_future "$((NOW + 86400))"
mkiat iat_string "\"$NOW\""
mkiat iat_null null
