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
