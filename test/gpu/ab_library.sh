#!/bin/bash
# test/gpu/ab_library.sh BASE_TAR ROUNDS CMD... — two builds of gpuselect in
# one device call, so that a load benchmark compares them on the same
# instance (the GPU machine's speed varies between instances): the base is
# a tree archived here (git archive -o .ab-base.tar BASE; carry it), built
# on the device next to the working tree's build that pg_device_run.sh
# service-on installed.  Then ROUNDS times, base then working tree: install
# that library and run CMD with GS_AB=base|tree and GS_AB_ROUND in the
# environment (CMD restarts the server itself, as two_gpu_scale.sh does).
# The base must have the same SQL objects (only the library is swapped).
set -u -o pipefail
cd "$(dirname "$0")/../.."
tar=${1:?usage: ab_library.sh BASE_TAR ROUNDS CMD...} rounds=${2:?}
shift 2
OUTD=${OUT:-test/gpu/out}
lib=$(pg_config --pkglibdir)/gpuselect.so
work=$(mktemp -d /tmp/ab-base.XXXXXX)
tar -xf "$tar" -C "$work" || exit 1
if ! make -C "$work" -j16 USE_CUDA=1 >"$OUTD/ab-base-build.log" 2>&1; then
	tail -20 "$OUTD/ab-base-build.log"
	exit 1
fi
cp "$work/gpuselect.so" /tmp/gpuselect-base.so
cp "$lib" /tmp/gpuselect-tree.so
echo "base: $(tar -tf "$tar" | head -1) built; tree: the working tree's build"
for r in $(seq 1 "$rounds"); do
	for v in base tree; do
		cp "/tmp/gpuselect-$v.so" "$lib"
		echo "== round $r: $v"
		GS_AB=$v GS_AB_ROUND=$r "$@"
	done
done
cp /tmp/gpuselect-tree.so "$lib"
