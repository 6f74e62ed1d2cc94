#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# katran_obj.sh KATRAN_SRC OUT: build Katran's XDP balancer (its
# katran/lib/bpf/balancer.bpf.c, default features) from a checkout of
# facebookincubator/katran that a developer fetched outside this tree, into
# the object OUT, for `KATRAN_BPF_OBJ=OUT build/bench_xdp reference` (1g: ringlb
# beside Katran's own program). Nothing of Katran's is kept in the repository.
# Katran's sources include glibc's headers for a BPF target, which ask for the
# 32-bit stubs; an empty one stands in for it, in a scratch directory.
set -euo pipefail

[ $# -eq 2 ] || { echo "usage: katran_obj.sh KATRAN_SRC OUT" >&2; exit 2; }
SRC=$1 OUT=$2
CLANG=${BPF_CLANG:-clang-16}
[ -f "$SRC/katran/lib/bpf/balancer.bpf.c" ] ||
	{ echo "katran_obj.sh: $SRC has no katran/lib/bpf/balancer.bpf.c" >&2; exit 1; }
MULTIARCH=$(gcc -print-multiarch)
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
mkdir -p "$W/gnu"
: >"$W/gnu/stubs-32.h"
"$CLANG" -O2 -g -target bpf -D__KERNEL__ -I"$SRC" -I"$W" "-I/usr/include/$MULTIARCH" \
	-Wno-unused-value -Wno-pointer-sign -Wno-compare-distinct-pointer-types \
	-c "$SRC/katran/lib/bpf/balancer.bpf.c" -o "$OUT"
echo "$OUT: Katran's balancer_ingress, from $(git -C "$SRC" rev-parse --short HEAD 2>/dev/null || echo "$SRC")"
