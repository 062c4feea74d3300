#!/usr/bin/env bash
# test/citus-build.sh — Citus, built for one PostgreSQL, for the Citus TAP
# test (test/t/015_citus.pl; docs/citus.md).
#
#   test/citus-build.sh /path/to/pg_config    prints the staged install
#
# Citus is not part of gpuselect: its sources are a tarball outside the
# tree (GS_CITUS_SRC, default the first ../shared/deps/citus-*.tar.gz next
# to the checkout), built in a scratch directory by its own configure and
# make, and installed with DESTDIR into a staging directory
# (a tree of the server's absolute paths: lib/citus*.so,
# share/extension/citus*) that test/run-all.sh copies into its private
# install tree.  The staging directory is cached per tarball and server,
# like the PostgreSQL builds of test/pg-binaries.sh:
#
#   GS_CITUS_CACHE (default ${XDG_CACHE_HOME:-$HOME/.cache}/gpuselect/citus)
#     <tarball name>-pg<version>/stage/...
#
# Citus main builds against PostgreSQL 16, 17 and 18.  On Debian 12 it
# needs liblz4-dev libzstd-dev libcurl4-openssl-dev, and the server's
# headers libkrb5-dev (gssapi) -- .ci/run installs them.  The build costs
# about a CPU-minute (52 s user + 12 s system, make -j2, PostgreSQL 17); on
# the shared 2-core development machine, at a load of 12-17, it took 6 min
# of wall time.  Later runs copy the cached files: seconds.
#
# Sourced (. test/citus-build.sh), it only defines gs_citus_build PG_CONFIG.

GS_CITUS_CACHE=${GS_CITUS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gpuselect/citus}

# the Citus source tarball, or nothing
gs_citus_source() {
	local root f
	if [ -n "${GS_CITUS_SRC:-}" ]; then
		[ -f "$GS_CITUS_SRC" ] && echo "$GS_CITUS_SRC"
		return
	fi
	root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
	for f in "$root"/../shared/deps/citus-*.tar.gz; do
		[ -f "$f" ] && { echo "$f"; return; }
	done
}

# gs_citus_build PG_CONFIG -> prints the staging directory (progress and
# the build log's tail on stderr); fails when there are no sources or the
# build fails
gs_citus_build() {
	local pgc=$1 src ver key stage work start
	src=$(gs_citus_source)
	if [ -z "$src" ]; then
		echo "citus-build: no Citus sources (GS_CITUS_SRC, or ../shared/deps/citus-*.tar.gz)" >&2
		return 1
	fi
	ver=$("$pgc" --version | awk '{print $2}')
	key=$(basename "$src" .tar.gz)-pg$ver
	stage=$GS_CITUS_CACHE/$key/stage
	mkdir -p "$GS_CITUS_CACHE" || return 1
	(
		exec 9>"$GS_CITUS_CACHE/.lock"
		flock 9
		[ -f "$GS_CITUS_CACHE/$key/done" ] && exit 0
		rm -rf "${GS_CITUS_CACHE:?}/$key"
		work=$(mktemp -d "${TMPDIR:-/tmp}/gs-citus.XXXXXX")
		trap 'rm -rf "$work"' EXIT
		start=$SECONDS
		echo "citus-build: building $(basename "$src") for PostgreSQL $ver" >&2
		tar xzf "$src" -C "$work" || exit 1
		cd "$work"/citus* || exit 1
		if ! { ./configure PG_CONFIG="$pgc" && make -j"${GS_JOBS:-$(nproc)}" &&
			make install DESTDIR="$stage"; } >"$work/build.log" 2>&1; then
			tail -40 "$work/build.log" >&2
			rm -rf "${GS_CITUS_CACHE:?}/$key"
			exit 1
		fi
		echo "citus-build: built in $((SECONDS - start)) s" >&2
		touch "$GS_CITUS_CACHE/$key/done"
	) || return 1
	echo "$stage"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	set -u -o pipefail
	[ $# = 1 ] || { echo "usage: $0 /path/to/pg_config" >&2; exit 2; }
	gs_citus_build "$1"
fi
