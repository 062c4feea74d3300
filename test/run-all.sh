#!/usr/bin/env bash
# test/run-all.sh — THE test command for gpuselect.
#
# 1. copies the source tree to a scratch directory (the checkout is never
#    built in, so concurrent in-tree builds are not disturbed);
# 2. builds the CPU-only variant (USE_CUDA=0) and, when nvcc is found, the
#    CUDA variant (USE_CUDA=1), both with warnings as errors (COPT=-Werror);
# 3. runs the C unit tests (make unit);
# 4. installs each variant into a private install tree (a relocated copy of
#    the PostgreSQL 15 server; no system directory is written, no sudo);
# 5. per variant: starts a throw-away cluster, runs pg_regress
#    (make installcheck) and the TAP tests (prove test/t/*.pl);
# 6. prints a summary and, as its last line, "N passed, M failed".
#
# Works as root (the server then runs as the postgres user) and as a normal
# user.  Environment:
#   GS_VARIANTS="cpu cuda"  variants to build/test (default: cpu, plus cuda if nvcc)
#   GS_SKIP_TAP=1           skip the TAP tests
#   GS_KEEP=1               keep the scratch directory (printed at the end)
#   GS_JOBS=N               make -j (default: nproc)
set -u -o pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/test/lib/pgenv.sh"

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

# record STAGE PASSED FAILED
record() {
	PASS=$((PASS + $2))
	FAIL=$((FAIL + $3))
	SUMMARY+=("$(printf '%-28s %5d passed, %3d failed' "$1" "$2" "$3")")
}

section() { printf '\n===== %s =====\n' "$*"; }

section "gpuselect tests: $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo no-git) on $(hostname), user $(id -un), variants: $GS_VARIANTS"
echo "PostgreSQL: $("$GS_PG_CONFIG" --version)   nvcc: ${NVCC:-none}   scratch: $WORK"

declare -A BUILT INSTALLED
for v in $GS_VARIANTS; do
	case $v in
	cpu) use_cuda=0 ;;
	cuda) use_cuda=1 ;;
	*) echo "unknown variant $v" >&2; record "build-$v" 0 1; continue ;;
	esac
	section "build $v (make USE_CUDA=$use_cuda COPT=-Werror)"
	b=$WORK/build-$v
	gs_copy_tree "$ROOT" "$b"
	start=$SECONDS
	if make -C "$b" -j"$JOBS" USE_CUDA=$use_cuda COPT=-Werror >"$WORK/build-$v.log" 2>&1 &&
		[ -f "$b/gpuselect.so" ]; then
		echo "built in $((SECONDS - start)) s"
		grep -iE 'warning:' "$WORK/build-$v.log" | head -20
		BUILT[$v]=1
		record "build $v" 1 0
	else
		tail -60 "$WORK/build-$v.log"
		record "build $v" 0 1
		continue
	fi
	if [ "$v" = cuda ]; then
		# the module must load on machines without a CUDA runtime/driver
		if ldd "$b/gpuselect.so" | grep -q 'libcudart'; then
			echo "gpuselect.so links libcudart dynamically (expected static)"
			record "cuda static link" 0 1
		else
			record "cuda static link" 1 0
		fi
	fi
done

# ---------------- unit tests ----------------
ub=
for v in cpu cuda; do [ -n "${BUILT[$v]:-}" ] && { ub=$WORK/build-$v; break; }; done
if [ -n "$ub" ]; then
	section "unit tests (make unit)"
	make -C "$ub" -j"$JOBS" unit >"$WORK/unit.log" 2>&1
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

# ---------------- install + server tests per variant ----------------
for v in $GS_VARIANTS; do
	[ -n "${BUILT[$v]:-}" ] || continue
	b=$WORK/build-$v
	tree=$WORK/install-$v
	section "install $v (private tree $tree)"
	if gs_private_install "$b" "$tree" USE_CUDA=$([ "$v" = cuda ] && echo 1 || echo 0); then
		record "install $v" 1 0
	else
		record "install $v" 0 1
		continue
	fi

	section "regression tests $v (make installcheck)"
	if ! gs_cluster_start "$tree"; then
		record "cluster $v" 0 1
		continue
	fi
	rm -f "$b/regression.diffs" "$b/regression.out"
	make -C "$b" USE_CUDA=$([ "$v" = cuda ] && echo 1 || echo 0) installcheck >"$WORK/regress-$v.log" 2>&1
	rrc=$?
	cat "$WORK/regress-$v.log"
	rp=$(grep -cE '\.\.\. ok' "$WORK/regress-$v.log")
	rf=$(grep -cE '\.\.\. FAILED|\.\.\. failed' "$WORK/regress-$v.log")
	if [ "$rrc" != 0 ] && [ "$rf" = 0 ]; then rf=1; fi
	if [ -s "$b/regression.diffs" ]; then
		echo "----- regression.diffs ($v) -----"
		cat "$b/regression.diffs"
		echo "----- end of regression.diffs -----"
	fi
	record "regress $v" "$rp" "$rf"

	if [ "${GS_SKIP_TAP:-0}" != 1 ] && compgen -G "$ROOT/test/t/*.pl" >/dev/null; then
		section "TAP tests $v (prove test/t)"
		# the TAP scripts reach the cluster through PGHOST/PGPORT/PGUSER
		(cd "$b" && GS_VARIANT=$v PATH="$(gs_pg_bindir):$PATH" \
			prove -v --timer test/t/*.pl) >"$WORK/tap-$v.log" 2>&1
		trc=$?
		cat "$WORK/tap-$v.log"
		tp=$(grep -cE '^ok [0-9]+' "$WORK/tap-$v.log")
		tf=$(grep -cE '^not ok [0-9]+' "$WORK/tap-$v.log")
		# scripts that died or had a bad plan without a "not ok" line
		tdead=$(awk '/^Test Summary Report/ { s = 1 }
			s && /\(Wstat: [0-9]+.*Failed: 0\)/ { n++ } END { print n + 0 }' "$WORK/tap-$v.log")
		tf=$((tf + tdead))
		if [ "$trc" != 0 ] && [ "$tf" = 0 ]; then tf=1; fi
		record "TAP $v" "$tp" "$tf"
	fi
	if ! "$(gs_pg_bindir)/pg_isready" -q; then
		echo "server not running after the tests; log tail:"
		tail -50 "$GS_SERVER_LOG"
	elif grep -qE 'terminated by signal|server process .* was terminated' "$GS_SERVER_LOG"; then
		echo "a backend crashed during the tests; log excerpt:"
		grep -E -B2 -A5 'terminated by signal' "$GS_SERVER_LOG" | head -40
		record "no backend crash $v" 0 1
	fi
	gs_cluster_stop
done

section "summary"
printf '%s\n' "${SUMMARY[@]}"
echo "$PASS passed, $FAIL failed"
[ "$FAIL" = 0 ] && [ "$PASS" -gt 0 ]
