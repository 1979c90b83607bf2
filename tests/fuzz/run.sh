#!/bin/sh
# run.sh: runs one libFuzzer target on a scratch copy of its corpus.
#
#   sh tests/fuzz/run.sh TARGET SECONDS [BINDIR] [-- LIBFUZZER-OPTIONS...]
#
# TARGET is base64url, body, config, fcgi, jcheck, jscan or jwt; BINDIR (default
# ./fuzz-build) holds what build.sh made. The seed corpus (tests/fuzz/corpus/TARGET and
# tests/fuzz/regress/TARGET) is copied to a scratch directory, so the
# repository only gets the inputs someone adds on purpose. The scratch
# directory (printed at the end, with crash-* files and the full log) is
# kept: to keep new inputs, minimise them into the seed corpus with
#   BINDIR/fuzz_TARGET -merge=1 tests/fuzz/corpus/TARGET SCRATCH/corpus
# and report any crash-* file as a regression input (tests/fuzz/regress/).
# Ends with the executions done and the coverage reached (cov:, ft:).
set -eu

usage() {
	echo "usage: run.sh TARGET SECONDS [BINDIR] [-- LIBFUZZER-OPTIONS...]" >&2
	exit 2
}
[ $# -ge 2 ] || usage
target=$1
secs=$2
shift 2
bindir=fuzz-build
if [ $# -gt 0 ] && [ "$1" != "--" ]; then
	bindir=$1
	shift
fi
[ $# -gt 0 ] && [ "$1" = "--" ] && shift

top=$(cd "$(dirname "$0")/../.." && pwd)
bin=$bindir/fuzz_$target
[ -x "$bin" ] || { echo "run.sh: no $bin (run build.sh first)" >&2; exit 1; }
[ -d "$top/tests/fuzz/corpus/$target" ] || usage

# Inputs as large as the biggest meaningful case: a token over JWT_MAX_LEN,
# a body of deep nesting, a config over CONFIG_MAX_LINE.
case $target in
jwt)	maxlen=9000 ;;
body)	maxlen=16384 ;;
config)	maxlen=8192 ;;
*)	maxlen=4096 ;;
esac

scratch=$(mktemp -d "${TMPDIR:-/tmp}/cfpm-fuzz-$target.XXXXXX")
mkdir "$scratch/corpus" "$scratch/artifacts"
cp "$top/tests/fuzz/corpus/$target"/* "$scratch/corpus/"
if [ -d "$top/tests/fuzz/regress/$target" ]; then
	cp "$top/tests/fuzz/regress/$target"/* "$scratch/corpus/" 2>/dev/null || :
fi

rc=0
"$bin" -max_total_time="$secs" -max_len="$maxlen" -timeout=10 \
    -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$scratch/artifacts/" "$@" "$scratch/corpus" \
    >"$scratch/fuzz.log" 2>&1 || rc=$?

# The last status line has the coverage; the final stats the executions.
grep -E '^#[0-9]+' "$scratch/fuzz.log" | tail -n 1
grep -E '^stat::(number_of_executed_units|average_exec_per_sec|new_units_added|peak_rss_mb)' \
    "$scratch/fuzz.log" || :
echo "corpus: $(ls "$scratch/corpus" | wc -l) files in $scratch/corpus"
if ls "$scratch/artifacts"/* >/dev/null 2>&1; then
	echo "ARTIFACTS (crash/leak/timeout inputs):"
	ls -l "$scratch/artifacts"
	rc=1
fi
echo "log: $scratch/fuzz.log"
exit "$rc"
