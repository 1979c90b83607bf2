# tap.sh: TAP for the shell tests (sourced): ok, check, finish.
# n and failed count the tests; finish prints the plan and exits.

n=0
failed=0

ok() {
	# ok STATUS DESCRIPTION: STATUS 0 is a pass.
	n=$((n + 1))
	if [ "$1" -eq 0 ]; then
		echo "ok $n - $2"
	else
		echo "not ok $n - $2"
		failed=$((failed + 1))
	fi
}

check() {
	# check DESCRIPTION COMMAND...: runs the command, passes if it succeeds.
	_d=$1
	shift
	"$@" >/dev/null 2>&1
	ok $? "$_d"
}

finish() {
	echo "1..$n"
	[ "$failed" -eq 0 ] || exit 1
	exit 0
}
