#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# ringlb as an operator installs it: the Debian package and `make install`.
# Its tests (tests/suites/lib.sh runs them; `package.sh TEST...` runs some):
#
#   build         `make deb` builds the package from a copy of the tree
#   lintian       (after build) lintian finds no error or warning in it
#                 (started by build, in the background)
#   install       (after build) `apt-get install ./ringlb_*.deb` installs it
#                 with nothing else: the installed `ringlb --version` is the
#                 tree's (VERSION), its libraries all resolve
#   man           (after install) each man page renders with `man -l`
#                 without a warning, and man finds it
#   unit          (after install) the unit passes systemd-analyze verify and
#                 is installed disabled, the state directory is 0700
#   completion    (after install) the completion is where bash-completion
#                 looks
#   runbooks      (after install) every alert of the installed rules has a
#                 runbook_url naming a file of the package and a heading in it
#   bird          (after install) the installed bird2 example, filled in,
#                 parses with `bird -p` before the daemon has written its
#                 routes file and after
#   make_install  `make install DESTDIR=... PREFIX=...` puts each file where
#                 PREFIX says (the unit runs that PREFIX's binary), and `make
#                 uninstall` removes them all but an edited /etc/default/ringlb
#   demo          (after install) the demo (scripts/demo.sh) runs with the
#                 installed binary (started by install, in the background; its
#                 slow download at 32 KiB/s), and the download it drains a
#                 backend under completes whole from that backend
#   purge         (after install) `apt-get purge` leaves nothing of the
#                 package (every file it listed is gone, its conffile, its
#                 dpkg and deb-systemd-helper records) but the operator's own
#                 state: a state and key written in /var/lib/ringlb stay; an
#                 empty state directory goes
#
# It installs on this machine, so it refuses to run where ringlb is installed
# or /var/lib/ringlb exists: it never touches an operator's installation.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/suites/lib.sh"

require_root package

TEST_NAME=package
VERSION=$(cat "$ROOT/VERSION")
scratch_dir
OURS=0 # 1 while the package this test installed is on the machine
NS=rpkg$$
PIN=/sys/fs/bpf/ringlb-$NS
cleanup() {
	[ -n "${LINTIAN:-}" ] && kill "$LINTIAN" 2>/dev/null
	# The demo cleans up after itself, and runs the installed binary: it ends first.
	[ -n "${DEMO:-}" ] && wait "$DEMO"
	ip netns del "$NS" 2>/dev/null
	rm -rf "$PIN"
	[ "$OURS" -eq 1 ] && DEBIAN_FRONTEND=noninteractive apt-get purge -y -q ringlb >/dev/null 2>&1
	[ "$OURS" -eq 1 ] && rm -rf /var/lib/ringlb
	rm -rf "$W"
}
trap cleanup EXIT

# suite_will_run NAME: test NAME runs in this invocation (asked, or needed by one
# asked). It reads tests/suites/lib.sh's SELECTED: lib.sh could offer it.
suite_will_run() { [ -n "${SELECTED[$1]:-}" ]; }

setup() {
	if dpkg-query -W -f='${Status}' ringlb 2>/dev/null | grep -q installed || [ -e /var/lib/ringlb ]; then
		fail "ringlb is installed on this machine or /var/lib/ringlb exists: the package test installs and purges ringlb, and does not on an operator's machine"
		exit 1
	fi
}

# --- build -----------------------------------------------------------------------------------
# DEB: the package built. Lintian, when its test runs, reads it in the background meanwhile.
t_build() {
	local start
	start=$(date +%s)
	if make -C "$ROOT" --no-print-directory deb >"$W/deb.log" 2>&1; then
		DEB=$(ls "$ROOT"/build/deb/ringlb_"$VERSION"_*.deb)
		pass "make deb: $(basename "$DEB") ($(stat -c %s "$DEB") bytes) in $(($(date +%s) - start)) s"
	else
		fail "make deb: $(tail -5 "$W/deb.log")"
		exit 1
	fi
	if suite_will_run lintian; then
		lintian --fail-on error,warning "$ROOT"/build/deb/ringlb_"$VERSION"_*.changes >"$W/lintian" 2>&1 &
		LINTIAN=$!
	fi
}

t_lintian() {
	wait "$LINTIAN" &&
		pass "lintian: no error or warning ($(grep -c '^[IP]:' "$W/lintian") notes)" ||
		fail "lintian: $(grep -v 'root privileges' "$W/lintian" | head -5)"
	LINTIAN=
}

# --- install -----------------------------------------------------------------------------------
# DEMO: the demo running on the installed binary, when its test runs.
t_install() {
	local commit store_err
	export DEBIAN_FRONTEND=noninteractive
	OURS=1
	if apt-get install -y -q --no-install-recommends "$DEB" >"$W/install.log" 2>&1; then
		pass "apt-get install ./$(basename "$DEB")"
	else
		fail "apt-get install: $(tail -3 "$W/install.log")"
		exit 1
	fi
	dpkg-query -L ringlb >"$W/files"
	[ "$(/usr/sbin/ringlb --version)" = "ringlb $VERSION" ] &&
		[ "$(dpkg-query -W -f='${Version}' ringlb)" = "$VERSION" ] &&
		[ "$(type -P ringlb)" = /usr/sbin/ringlb ] &&
		pass "the installed ringlb --version says 'ringlb $VERSION', as VERSION and the package's version" ||
		fail "version: '$(/usr/sbin/ringlb --version 2>&1)', package $(dpkg-query -W -f='${Version}' ringlb), VERSION $VERSION"
	# The copy make deb built from has no .git: the commit of ringlb_build_info came in its COMMIT file.
	commit=$(git -C "$ROOT" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
	grep -qaF "$commit" /usr/sbin/ringlb &&
		pass "the installed ringlb knows the commit it was built from ($commit), for ringlb_build_info" ||
		fail "the installed ringlb does not hold the commit $commit"
	ldd /usr/sbin/ringlb >"$W/ldd" && ! grep -q "not found" "$W/ldd" &&
		pass "its $(wc -l <"$W/ldd") libraries resolve (the package's Depends: $(dpkg-query -W -f='${Depends}' ringlb | tr ',' '\n' | grep -c .) packages)" ||
		fail "ldd: $(grep 'not found' "$W/ldd")"
	# libcurl, opened only with a store: named in Depends, and opened by the installed
	# binary (an etcd at a closed port is then a refused connection, not a missing library).
	store_err=$(/usr/sbin/ringlb --state "$W/state.json" \
		--pin-dir "$W/pins" --store etcd://127.0.0.1:9/ringlb-pkg show 2>&1)
	dpkg-query -W -f='${Depends}' ringlb | grep -q "libcurl4" &&
		[[ $store_err == *"127.0.0.1:9"* ]] && [[ $store_err != *"cannot load"* ]] &&
		pass "libcurl4 in Depends, and the installed ringlb opens it: '$store_err'" ||
		fail "libcurl: Depends '$(dpkg-query -W -f='${Depends}' ringlb)', a store command said '$store_err'"
	# The demo, when its test runs, runs from here on in the background while the tests
	# that only read the installation run.
	if suite_will_run demo; then
		# Its slow download at 32 KiB/s, not 16: about 7 s, still running at the drain
		# (2 s in), and the demo done in two thirds of the time.
		TOPO_SLOW_RATE=32k RINGLB=/usr/sbin/ringlb "$ROOT/scripts/demo.sh" >"$W/demo.log" 2>&1 &
		DEMO=$!
	fi
}

t_man() {
	local page name
	for page in $(grep '/usr/share/man/man.*\.gz$' "$W/files"); do
		name=$(basename "$page" .gz)
		if MANWIDTH=100 man --warnings -E UTF-8 -l "$page" >"$W/$name.txt" 2>"$W/$name.err" &&
			[ ! -s "$W/$name.err" ] && grep -q "^NAME" "$W/$name.txt" &&
			man -w "${name%.*}" | grep -q "^$page$"; then
			pass "man -l $page: $(wc -l <"$W/$name.txt") lines, no warning; man ${name%.*} finds it"
		else
			fail "man -l $page: $(head -3 "$W/$name.err")"
		fi
	done
	[ "$(grep -c '/usr/share/man/man.*\.gz$' "$W/files")" -eq 3 ] ||
		fail "the package has $(grep -c '/usr/share/man/man.*\.gz$' "$W/files") man pages, want 3"
}

t_unit() {
	local unit=/lib/systemd/system/ringlb.service
	systemd-analyze verify "$unit" >"$W/verify" 2>&1 && grep -q '^ExecStart=/usr/sbin/ringlb --config /etc/ringlb/ringlb.conf daemon' "$unit" &&
		[ ! -e /etc/systemd/system/multi-user.target.wants/ringlb.service ] &&
		pass "$unit: systemd-analyze verify clean, runs /usr/sbin/ringlb, installed disabled" ||
		fail "unit: $(head -3 "$W/verify"), $(grep ExecStart "$unit")"
	[ "$(stat -c '%a %U' /var/lib/ringlb)" = "700 root" ] && [ -f /etc/default/ringlb ] &&
		grep -qx /etc/default/ringlb /var/lib/dpkg/info/ringlb.conffiles &&
		grep -qx /etc/ringlb/ringlb.conf /var/lib/dpkg/info/ringlb.conffiles &&
		/usr/sbin/ringlb --config /etc/ringlb/ringlb.conf --help >/dev/null &&
		pass "/var/lib/ringlb is 0700 root; /etc/default/ringlb and /etc/ringlb/ringlb.conf are conffiles, the latter read clean" ||
		fail "state directory $(stat -c '%a %U' /var/lib/ringlb 2>&1), conffiles $(cat /var/lib/dpkg/info/ringlb.conffiles 2>&1)"
}

t_completion() {
	local got
	got=$(bash --norc -c 'source /usr/share/bash-completion/bash_completion
		_completion_loader ringlb; COMP_WORDS=(ringlb ba); COMP_CWORD=1; COMP_LINE="ringlb ba"
		COMP_POINT=9; _ringlb ringlb ba ringlb; echo "${COMPREPLY[*]}"' 2>&1)
	[ "$got" = backend ] && pass "bash-completion loads the installed completion: 'ringlb ba<Tab>' offers backend" ||
		fail "installed completion: '$got'"
}

# --- the alerts' runbooks ----------------------------------------------------------------------
t_runbooks() {
	local rules=/usr/share/ringlb/prometheus/ringlb.rules.yml out rc files
	out=$("$ROOT/tests/tools/runbooks.py" "$rules" 2>&1)
	rc=$?
	# Each file a link names is the package's own, not one left on the machine by something else.
	files=$(grep -o 'file://[^#]*' "$rules" | sed 's|^file://||' | sort -u)
	if [ "$rc" -eq 0 ] && [ -n "$files" ] &&
		[ -z "$(grep -vxFf "$W/files" <<<"$files")" ]; then
		pass "$(tail -1 <<<"$out") in the installed rules, to $(tr '\n' ' ' <<<"$files")(the package's)"
	else
		fail "runbook links of $rules: $(grep -v '^ok' <<<"$out" | head -3); files '$files'"
	fi
}

# --- the bird2 example, before and after the daemon's routes -------------------------------------
t_bird() {
	local conf=/usr/share/ringlb/bird/balancer.conf routes=$W/bird/ringlb-routes.conf before after
	mkdir -p "$W/bird"
	sed -e 's|@ROUTER_ID@|198.18.0.2|' -e 's|@LOCAL_AS@|65011|' -e 's|@PEER@|198.18.0.1|' \
		-e 's|@PEER_AS@|65000|' -e "s|@ROUTES_DIR@|$W/bird|" "$conf" >"$W/bird/bird.conf"
	before=$(bird -p -c "$W/bird/bird.conf" 2>&1)
	printf 'protocol static ringlb_vips4 {\n\tipv4;\n}\nprotocol static ringlb_vips6 {\n\tipv6;\n}\n' >"$routes"
	after=$(bird -p -c "$W/bird/bird.conf" 2>&1)
	[ -f "$conf" ] && grep -qxF "$conf" "$W/files" && [ -z "$before" ] && [ -z "$after" ] &&
		! grep -q '@[A-Z_]*@' "$W/bird/bird.conf" &&
		pass "$conf, filled in: bird -p accepts it with no routes file yet and with the daemon's" ||
		fail "$conf: without the routes file '$before', with it '$after'"
}

# --- the demo, with the installed binary --------------------------------------------------------
t_demo() {
	local rc
	wait "$DEMO"
	rc=$?
	DEMO=
	if [ $rc -eq 0 ] &&
		grep -q "^ringlb: /usr/sbin/ringlb (ringlb $VERSION)" "$W/demo.log" &&
		grep -q "connections" "$W/demo.log" &&
		grep -q "HTTP status and bytes: 200 262144; bytes not from b[1-3]: 0$" "$W/demo.log"; then
		pass "the demo runs with /usr/sbin/ringlb: $(grep -c '^\$ ringlb' "$W/demo.log") commands, exit 0, the download through the drain whole"
	else
		fail "demo with the installed binary: $(tail -5 "$W/demo.log")"
	fi
}

# --- purge: the package goes, the operator's state stays -----------------------------------------
operator() { nsenter --net="/run/netns/$NS" /usr/sbin/ringlb --pin-dir "$PIN" "$@"; }
t_purge() {
	local vip=198.18.0.100:80/tcp sum left leftdirs records
	ip netns add "$NS"
	ip -n "$NS" link add eth0 type veth peer name eth1
	ip -n "$NS" link set eth0 up
	ip -n "$NS" link set eth1 up
	operator attach eth0 --mode generic >/dev/null && operator vip add "$vip" --check none >/dev/null ||
		fail "the installed ringlb could not write its default state"
	operator detach eth0 >/dev/null
	ip netns del "$NS"
	rm -rf "$PIN"
	sum=$(cd /var/lib/ringlb && sha256sum state.json secret)
	apt-get purge -y -q ringlb >"$W/purge.log" 2>&1 || fail "apt-get purge: $(tail -3 "$W/purge.log")"
	left=$(while read -r f; do [ -e "$f" ] && [ ! -d "$f" ] && echo "$f"; done <"$W/files")
	leftdirs=$(while read -r f; do [ -d "$f" ] && [[ $f == *ringlb* ]] && echo "$f"; done <"$W/files")
	records=$(ls /var/lib/dpkg/info/ringlb.* /var/lib/systemd/deb-systemd-helper-enabled/*ringlb* \
		/var/lib/systemd/deb-systemd-helper-masked/*ringlb* 2>/dev/null)
	if [ -z "$left" ] && [ -z "$leftdirs" ] && [ -z "$records" ] && [ ! -e /etc/default/ringlb ] && [ ! -e /etc/ringlb ] &&
		! dpkg-query -W ringlb >/dev/null 2>&1 && [ "$(cd /var/lib/ringlb && sha256sum state.json secret)" = "$sum" ]; then
		pass "apt-get purge: none of the package's $(wc -l <"$W/files") paths, its conffile or records are left; the operator's state and key stay ($(ls /var/lib/ringlb | tr '\n' ' '))"
	else
		fail "purge left: files '$left', dirs '$leftdirs', records '$records', /etc/default/ringlb $([ -e /etc/default/ringlb ] && echo present), state $(ls /var/lib/ringlb 2>&1 | tr '\n' ' ')"
	fi
	rm -rf /var/lib/ringlb
	apt-get install -y -q --no-install-recommends "$DEB" >"$W/install2.log" 2>&1 &&
		apt-get purge -y -q ringlb >"$W/purge2.log" 2>&1 && [ ! -e /var/lib/ringlb ] &&
		! dpkg-query -W ringlb >/dev/null 2>&1 &&
		pass "install and purge again: the empty state directory goes too" ||
		fail "second purge: /var/lib/ringlb $(ls -ld /var/lib/ringlb 2>&1)"
	OURS=0
}

# --- make install / make uninstall ------------------------------------------------------------------
t_make_install() {
	local prefix dest files rest
	for prefix in /usr /usr/local; do
		dest="$W/dest${prefix//\//-}"
		make -C "$ROOT" --no-print-directory install DESTDIR="$dest" PREFIX="$prefix" >"$W/install.log" 2>&1 ||
			{ fail "make install PREFIX=$prefix: $(tail -3 "$W/install.log")"; continue; }
		files=$(cd "$dest" && find . -type f | sort | tr '\n' ' ')
		[ -x "$dest$prefix/sbin/ringlb" ] && [ "$("$dest$prefix/sbin/ringlb" --version)" = "ringlb $VERSION" ] &&
			grep -q "^ExecStart=$prefix/sbin/ringlb --config /etc/ringlb/ringlb.conf daemon" "$dest$prefix/lib/systemd/system/ringlb.service" &&
			[ -f "$dest/etc/ringlb/ringlb.conf" ] &&
			[ -f "$dest$prefix/share/man/man8/ringlb.8" ] && [ -f "$dest$prefix/share/man/man5/ringlb-state.5" ] &&
			[ -f "$dest$prefix/share/bash-completion/completions/ringlb" ] &&
			[ "$(stat -c %a "$dest/var/lib/ringlb")" = 700 ] &&
			pass "make install DESTDIR PREFIX=$prefix: $(echo "$files" | wc -w) files; the unit runs $prefix/sbin/ringlb" ||
			fail "make install PREFIX=$prefix: $files"
		"$ROOT/tests/tools/runbooks.py" "$dest$prefix/share/ringlb/prometheus/ringlb.rules.yml" \
			--root "$dest" >"$W/runbooks.out" 2>&1 &&
			pass "make install PREFIX=$prefix: $(tail -1 "$W/runbooks.out") (to $prefix/share/ringlb/prometheus/runbooks.md)" ||
			fail "make install PREFIX=$prefix: runbook links: $(grep -v '^ok' "$W/runbooks.out" | head -3)"
		echo "DAEMON_OPTS=\"--metrics none\"" >>"$dest/etc/default/ringlb"
		make -C "$ROOT" --no-print-directory uninstall DESTDIR="$dest" PREFIX="$prefix" >"$W/uninstall.log" 2>&1
		rest=$(cd "$dest" && find . -type f | sort | tr '\n' ' ')
		[ "$rest" = "./etc/default/ringlb " ] && [ ! -e "$dest/var/lib/ringlb" ] &&
			grep -q "KEPT.*edited" "$W/uninstall.log" &&
			pass "make uninstall PREFIX=$prefix: every file gone but the edited /etc/default/ringlb" ||
			fail "make uninstall PREFIX=$prefix left: $rest"
	done
}

suite_test build
suite_test install build
suite_test man install
suite_test unit install
suite_test completion install
suite_test runbooks install
suite_test bird install
suite_test lintian build
suite_test make_install
suite_test demo install
suite_test purge install
suite_main "$@"
