#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# profile.sh OBJ PROG -- COMMAND...: where BPF program PROG (of object OBJ)
# spends its time while COMMAND runs, by source line. perf samples every
# CPU's clock (cpu-clock, 20 kHz: this VM has no hardware counters); the
# samples inside bpf_prog_TAG_PROG (its tag: that very program, not another
# build of it) are mapped to source lines with the JIT
# image's line info (build/jit_lines), and the lines printed with their
# share of PROG's own samples, the most first; FILE:0 is code the compiler
# made with no line of its own. Time spent in the kernel's helpers and maps
# (an LRU insert, a hash lookup), and in PROG's global functions, is not
# counted: perf report shows it. Needs root and perf (linux-perf).
#
#   scripts/profile.sh build/ringlb.bpf.o ringlb_xdp -- build/bench_xdp reference
set -euo pipefail

[ $# -ge 4 ] && [ "$3" = -- ] || { echo "usage: profile.sh OBJ PROG -- COMMAND..." >&2; exit 2; }
OBJ=$1 PROG=$2
shift 3
ROOT=$(cd "$(dirname "$0")/.." && pwd)
command -v perf >/dev/null || { echo "profile.sh: perf is not installed (apt-get install linux-perf)" >&2; exit 1; }
make -s -C "$ROOT" --no-print-directory build/jit_lines >&2
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT

perf record -q -e cpu-clock -F 20000 -a -o "$W/perf.data" -- "$@" >"$W/out" 2>&1 ||
	{ tail -5 "$W/out" >&2; exit 1; }
# Only the instances of this very program (its tags): not another build's of the same name.
"$ROOT/build/jit_lines" "$OBJ" "$PROG" >"$W/lines"
read -r TAG MAINTAG < <(awk 'NR == 1 { print $4, $5 }' "$W/lines" | tr -d :)
[[ $TAG =~ ^[0-9a-f]{16}$ && $MAINTAG =~ ^[0-9a-f]{16}$ ]] ||
	{ echo "profile.sh: jit_lines gave no tags: $(head -1 "$W/lines")" >&2; exit 1; }
perf script -i "$W/perf.data" -F ip,sym,symoff 2>/dev/null |
	awk -v a="bpf_prog_${TAG}_$PROG+" -v b="bpf_prog_${MAINTAG}_$PROG+" \
		'index($2, a) || index($2, b) { sub(/.*\+/, "", $2); print $2 }' >"$W/offsets"
python3 - "$W/offsets" "$W/lines" "$PROG" <<'PY'
import bisect, collections, sys

offsets, lines, prog = sys.argv[1:4]
table = []
for l in open(lines):
    if l.startswith('#'):
        size = int(l.split()[-5])
        continue
    off, where = l.rstrip('\n').split(' ', 1)
    table.append((int(off, 16), where))
table.sort(key=lambda t: t[0])
starts = [o for o, _ in table]
by_line, total, past = collections.Counter(), 0, 0
for l in open(offsets):
    off = int(l, 16)
    total += 1
    if off >= size:
        past += 1
        continue
    i = bisect.bisect_right(starts, off) - 1
    by_line[table[i][1] if i >= 0 else '?'] += 1
if not total:
    sys.exit(f"profile.sh: no sample inside {prog} (its tag as built here)")
print(f"{prog}: {total} samples of its own")
if past:
    print(f"  ({past} past the end of the image loaded here)")
for where, n in by_line.most_common(30):
    print(f"{n:8d} {100.0 * n / total:5.1f}%  {where.strip()[:110]}")
PY
