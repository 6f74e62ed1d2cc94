#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The benchmark's part 5: what one `ringlb` change costs an operator, the
# whole command (a process per change: state file, lock, kernel, audit), on a
# VIP of the largest kind: 255 backends x 4,096 points (1,044,480 points).
# Each command is timed 5 times and the median printed. Runs in a private
# network namespace with one veth pair, the program attached in generic mode.
# Needs root; prints a line and stops without it.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/suites/lib.sh"
ROUNDS=5
BACKENDS=255

if [ "$(id -u)" -ne 0 ]; then
	echo "5. skipped: it needs root"
	exit 0
fi

TEST_NAME=bench_cli
veth_session rlbbench
VIP=198.18.0.100:80/tcp

ringlb attach eth0 --mode generic >/dev/null || die "attach"
ringlb vip add "$VIP" --vnodes 4096 >/dev/null || die "vip add"
# The backends' addresses are routed nowhere (nothing is sent): each add warns so; keep
# the warnings out of the figures, and say them only if an add fails (so in median_ms).
for i in $(seq 1 $BACKENDS); do
	out=$(ringlb backend add "$VIP" "b$i" "198.18.1.$i" \
		--mac "02:00:00:00:01:$(printf %02x "$i")" 2>&1 >/dev/null) || die "backend add b$i: $out"
done

# median_ms UNDO COMMAND...: the median wall time of ROUNDS runs of `ringlb
# COMMAND`, each followed by `ringlb UNDO...` (split on spaces) so every
# round starts from the same state. "@" in COMMAND is the round's number.
median_ms() {
	local undo=$1 r start
	shift
	for r in $(seq 1 $ROUNDS); do
		start=$(date +%s%N)
		ringlb "${@//@/$r}" >/dev/null 2>"$W/err" || die "$*: $(tail -1 "$W/err")"
		echo $((($(date +%s%N) - start) / 1000))
		# shellcheck disable=SC2086
		[ -z "$undo" ] || ringlb $undo >/dev/null 2>"$W/err" ||
			die "$undo: $(tail -1 "$W/err")"
	done | sort -n | sed -n "$(((ROUNDS + 1) / 2))p" | awk '{ printf "%.1f", $1 / 1000 }'
}

B256="b256 198.18.2.1 --mac 02:00:00:00:02:01"
echo "5. One change through the ringlb command, on a VIP of $BACKENDS backends x 4,096 points"
echo "   ($((BACKENDS * 4096)) points): wall time of the whole command, median of $ROUNDS."
# shellcheck disable=SC2086
{
	add=$(median_ms "backend remove $VIP b256" backend add "$VIP" $B256) &&
	{ ringlb backend add "$VIP" $B256 >/dev/null 2>"$W/err" ||
		die "backend add $VIP $B256: $(tail -1 "$W/err")"; } &&
	remove=$(median_ms "backend add $VIP $B256" backend remove "$VIP" b256) &&
	{ ringlb backend remove "$VIP" b256 >/dev/null 2>"$W/err" ||
		die "backend remove $VIP b256: $(tail -1 "$W/err")"; } &&
	weight=$(median_ms "backend weight $VIP b7 1" backend weight "$VIP" b7 2) &&
	drain=$(median_ms "" backend drain "$VIP" "b1@") &&
	verify=$(median_ms "" verify)
} || exit 1
printf "   %-34s %8s ms\n" "backend add (1 x 4,096 points)" "$add" \
	"backend remove" "$remove" "backend weight 1 -> 2" "$weight" "backend drain (b11 .. b15)" "$drain" \
	"verify (the whole ring, both maps)" "$verify"
ringlb verify >/dev/null || die "verify after the rounds"
