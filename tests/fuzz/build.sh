#!/bin/sh
# build.sh: builds the libFuzzer targets with clang.
#
#   sh tests/fuzz/build.sh [OUTDIR]
#
# Makes OUTDIR/fuzz_NAME for every tests/fuzz/fuzz_NAME.c (default OUTDIR:
# ./fuzz-build) with -fsanitize=fuzzer,address,undefined. The library
# sources (every src/*/*.c; main.c is not among them) are compiled with
# -fsanitize=fuzzer-no-link, so libFuzzer sees their coverage, into an
# archive: a target links only the modules it uses. Needs clang with its
# libFuzzer runtime (Debian: clang, libclang-rt-14-dev), pkg-config and
# the -dev packages of libfcgi, libpq, OpenSSL and jansson; not configure.
# Environment: CC (default clang), CFLAGS (appended).
set -eu

top=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-fuzz-build}
CC=${CC:-clang}
mkdir -p "$out/obj"
out=$(cd "$out" && pwd)

if ! command -v "$CC" >/dev/null 2>&1; then
	echo "build.sh: $CC not found (install clang)" >&2
	exit 1
fi
pkgs="fcgi libpq libcrypto jansson"
# What configure would define (AC_USE_SYSTEM_EXTENSIONS, AC_INIT).
defs="-D_GNU_SOURCE=1 -DPACKAGE_NAME=\"cfpm\" -DPACKAGE_VERSION=\"fuzz\""
cflags="-g -O1 -fno-omit-frame-pointer -fsanitize=address,undefined \
-fno-sanitize-recover=undefined $defs -I$top/src -I$top/tests/fuzz \
$(pkg-config --cflags $pkgs) ${CFLAGS:-}"
libs=$(pkg-config --libs $pkgs)

rm -f "$out/libcfpm-fuzz.a"
for c in "$top"/src/*/*.c; do
	case $c in */main.c) continue ;; esac
	o="$out/obj/$(basename "$c" .c).o"
	# shellcheck disable=SC2086
	$CC $cflags -fsanitize=fuzzer-no-link -c "$c" -o "$o"
	ar rc "$out/libcfpm-fuzz.a" "$o"
done

for t in "$top"/tests/fuzz/fuzz_*.c; do
	name=$(basename "$t" .c)
	# shellcheck disable=SC2086
	$CC $cflags -fsanitize=fuzzer "$t" "$out/libcfpm-fuzz.a" $libs \
	    -o "$out/$name"
	echo "built $out/$name"
done
