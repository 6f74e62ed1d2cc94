#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# Every fuzzer over its seed corpus, each input once (libFuzzer's -runs=0: no
# exploration; `make fuzz` explores). Exits non-zero on the first input a
# fuzzer finds fault with, printing its report.
#
#   tests/fuzz/replay.sh BUILD_DIR NAME...   (the Makefile's FUZZERS, less "fuzz_")
set -u
build=$1
shift
root=$(cd "$(dirname "$0")/../.." && pwd)
for f in "$@"; do
	log=$build/checks/fuzz_$f.log
	mkdir -p "$build/checks"
	# A faulting input is written under the build, never into the tree (-artifact_prefix).
	if ! "$build/fuzz_$f" -runs=0 -artifact_prefix="$build/checks/fuzz_$f-" \
		"$root/tests/fuzz/corpus/$f" >"$log" 2>&1; then
		tail -40 "$log"
		exit 1
	fi
	echo "fuzz_$f: $(ls "$root/tests/fuzz/corpus/$f" | wc -l) seeds run once, no fault"
done
