#!/bin/sh
#
# test_layout.sh: the include graph of src/ points one way (TAP).
#
#   util   -> util                      shared leaves
#   server -> server, util              the process model
#   events -> events, server, util      an application
#   hello  -> hello, server, util       another application
#   main.c -> anything                  the wiring
#
# Every project include names its folder ("util/log.h"), so the graph is
# read from the sources alone. An include that goes upward or sideways
# (the server naming an application, one application another, anything
# naming main.c) fails, as does one without a folder or naming a file
# that does not exist. The folder-level edges are printed as comments.
#
# libpq stays inside the db module: only its files (DB_FILES) include
# <libpq-fe.h> or the module's inside (server/dbconn.h, server/dbplan.h);
# everyone else sees db.h.

set -u

SRC=${CFPM_SRCDIR:-.}/src
# shellcheck source=tests/unit/tap.sh
. "$(dirname "$0")/tap.sh"

allowed() {
	# allowed FROM TO: may a file in folder FROM include one in TO?
	case "$1:$2" in
	util:util) return 0 ;;
	server:server | server:util) return 0 ;;
	events:events | events:server | events:util) return 0 ;;
	hello:hello | hello:server | hello:util) return 0 ;;
	.:*) return 0 ;;
	esac
	return 1
}

edges=$(mktemp)
trap 'rm -f "$edges"' EXIT
files=$(cd "$SRC" && find . -name '*.[ch]' | sed 's|^\./||' | sort)
[ -n "$files" ]
ok $? "src/ has sources ($SRC)"

for f in $files; do
	from=$(dirname "$f")
	bad=""
	for inc in $(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$SRC/$f"); do
		to=$(dirname "$inc")
		if [ "$to" = "." ]; then
			bad="$bad $inc(no folder)"
		elif [ ! -f "$SRC/$inc" ]; then
			bad="$bad $inc(missing)"
		elif ! allowed "$from" "$to"; then
			bad="$bad $inc(upward)"
		fi
		echo "$from -> $to" >>"$edges"
	done
	if [ -z "$bad" ]; then
		ok 0 "$f: includes point down"
	else
		ok 1 "$f: includes point down:$bad"
	fi
done

DB_FILES="server/db.c server/dbexec.c server/dbplan.c server/dbconn.h server/dbplan.h"

in_db() {
	case " $DB_FILES " in
	*" $1 "*) return 0 ;;
	esac
	return 1
}

outside=""
for f in $files; do
	in_db "$f" && continue
	if grep -Eq '^[[:space:]]*#[[:space:]]*include[[:space:]]*(<libpq-fe\.h>|"server/db(conn|plan)\.h")' "$SRC/$f"; then
		outside="$outside $f"
	fi
done
[ -z "$outside" ]
ok $? "libpq only inside the db module ($DB_FILES)${outside:+: also in$outside}"
for f in $DB_FILES; do
	[ -f "$SRC/$f" ]
	ok $? "db module file $f exists"
done

sort -u "$edges" | sed 's/^/# edge: /'
finish
