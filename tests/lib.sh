# SPDX-License-Identifier: GPL-2.0-only
#
# Helpers the shell tests share: the root rule and the TAP-like report lines.
# Source it; it defines FAILS, pass, fail and require_root.

FAILS=0

pass() { echo "ok   - $*"; }
fail() { echo "FAIL - $*"; FAILS=$((FAILS + 1)); }

# require_root NAME: these tests need root. Without it they skip, except under
# CI=true, where skipping would hide them, so they fail.
require_root() {
	[ "$(id -u)" -eq 0 ] && return 0
	if [ "${CI:-}" = true ]; then
		echo "$1: CI=true but not root: these tests must run" >&2
		exit 1
	fi
	echo "$1: skipped: needs root"
	exit 0
}

# topo_session NAME PREFIX: the working set of a test on scripts/topology.sh:
# P (namespace prefix), W (scratch directory), PIN (bpffs directory), a trap
# that removes all three however the test ends, ringlb() run in the
# balancer's namespace against them, and die() for set-up failures.
# Needs ROOT and topology.sh sourced.
topo_session() {
	TEST_NAME=$1
	P=$2$$
	W=$(mktemp -d)
	PIN=/sys/fs/bpf/ringlb-$P
	trap 'topo_down "$P" "$W"; rm -rf "$PIN" "$W"' EXIT
}

ringlb() {
	nsenter --net="/run/netns/${P}lb" "$ROOT/build/ringlb" --state "$W/state.json" \
		--pin-dir "$PIN" "$@"
}

die() { echo "$TEST_NAME: setup failed: $*" >&2; exit 1; }
