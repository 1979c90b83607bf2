# Steps tools/stack-up, tools/cluster-up and tools/install-deps share,
# sourced by each (POSIX sh; test_deploy.py calls debian_mirror too).
# Each function says what it needs; none changes directory or exits on
# its own except through `set -e` in the caller.

pgbin=/usr/lib/postgresql/15/bin

# The mirror this machine takes bookworm from (deb822 or one-line form).
debian_mirror() {
	awk '/^URIs:/ { uris = $2 }
	    /^Suites:/ { for (i = 2; i <= NF; i++) if ($i == "bookworm") found = uris }
	    /^$/ { uris = "" }
	    END { print found }' /etc/apt/sources.list.d/*.sources 2>/dev/null |
	    head -n 1 | grep . ||
	awk '$1 == "deb" && $3 == "bookworm" { print $2; exit }' \
	    /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null
}

# common_deps TOP [COMMAND...]: runs tools/install-deps unless nginx,
# PostgreSQL 15, the build's libraries and every COMMAND named are there.
common_deps() {
	_top=$1
	shift
	_have=yes
	for _cmd in nginx "$@"; do
		command -v "$_cmd" >/dev/null 2>&1 || _have=no
	done
	[ "$_have" = yes ] && [ -x "$pgbin/initdb" ] &&
	    pkg-config --exists fcgi libpq jansson libcrypto libseccomp ||
	    "$_top/tools/install-deps"
}

# common_build TOP: builds cfpm and cfpm-token into TOP/build unless
# TOP/build/cfpm exists (an out-of-tree build needs an unconfigured tree).
common_build() {
	_build=$1/build
	if [ ! -x "$_build/cfpm" ]; then
		(cd "$1" && { [ -x configure ] || autoreconf -fi; } &&
		    { [ ! -f config.status ] || make -s distclean; })
		mkdir -p "$_build"
		(cd "$_build" && "$1/configure" -q && make -s -j"$(nproc)")
	fi
}

# common_user: creates the system user cfpm (cfpm's workers run as it,
# user/group in cfpm.conf) if missing, and shows it and www-data (nginx).
common_user() {
	if ! id cfpm >/dev/null 2>&1; then
		useradd --system --user-group --home-dir /nonexistent \
		    --no-create-home --shell /usr/sbin/nologin cfpm
		echo "   created system user cfpm"
	fi
	id cfpm
	id www-data
}

# common_tokens BUILD DIR: a signing key and DIR/jwks.json (kept if there
# already), then the benchmark's tokens in DIR/tokens (valid.jwt reads and
# writes, readonly.jwt, expired.jwt, ...).
common_tokens() {
	if [ ! -f "$2/jwt.key.pem" ]; then
		"$1/cfpm-token" keygen --dir "$2"
	fi
	"$1/cfpm-token" bench --key "$2/jwt.key.pem" --dir "$2/tokens" --pool 100
}

# common_cfpm_auth DIR: the lines of cfpm.conf every deployment here
# shares: the token issuer and audience the tokens carry, DIR's key set,
# and the ping path.
common_cfpm_auth() {
	cat <<CONF
auth.issuer = https://auth.bench.local
auth.audience = events-api
auth.key_file = $1/jwks.json
ping.path = /ping
CONF
}

# common_schema TOP PSQL...: the events table and ROWS seeded rows
# (psql variable rows), through the psql command line given (connected
# to the events database, ON_ERROR_STOP set).
common_schema() {
	_top=$1
	_rows=$2
	shift 2
	"$@" -f "$_top/sql/schema.sql"
	echo "   seeding $_rows rows..."
	"$@" -v rows="$_rows" -f "$_top/sql/seed.sql"
}

# common_role TOP PSQL...: the role cfpm: log in, read and insert events,
# nothing else (TOP/sql/role.sql, the file the package ships, through the
# psql command line given, connected to events).
common_role() {
	_top=$1
	shift
	"$@" -f "$_top/sql/role.sql"
}

# common_nginx_site TOP OUT [SED-ARG...]: etc/nginx/cfpm.conf with
# Debian's fastcgi_params by absolute path and the caller's sed edits,
# into OUT.
common_nginx_site() {
	_src=$1/etc/nginx/cfpm.conf
	_out=$2
	shift 2
	sed -e "s|include fastcgi_params|include /etc/nginx/fastcgi_params|" \
	    "$@" "$_src" >"$_out"
}

# common_nginx_conf DIR: DIR/nginx.conf, one worker as www-data with its
# pid, logs and temporary files in DIR, serving DIR/cfpm-site.conf.
common_nginx_conf() {
	cat >"$1/nginx.conf" <<CONF
worker_processes 1;
pid $1/nginx.pid;
error_log $1/error.log;
user www-data;
events { worker_connections 4096; }
http {
    access_log off;
    client_body_temp_path $1/body;
    fastcgi_temp_path $1/fastcgi;
    proxy_temp_path $1/proxy;
    uwsgi_temp_path $1/uwsgi;
    scgi_temp_path $1/scgi;
    include $1/cfpm-site.conf;
}
CONF
}

# common_show CURL-ARG...: one request as a reader would type it (the
# token hidden) and its answer without the headers that change per run.
common_show() {
	echo
	echo "\$ curl $*" | sed -e 's/Bearer [A-Za-z0-9._-]*/Bearer $TOKEN/'
	curl -s -i "$@" | sed -e '/^Server:/d' -e '/^Date:/d' -e '/^Connection:/d'
	echo
}
