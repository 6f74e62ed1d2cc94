#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Bash completion (scripts/ringlb.bash-completion), run through the real
# bash-completion framework as bash runs it on <Tab>. Its tests
# (tests/suites/lib.sh runs them; `completion.sh TEST...` runs some):
#
#   words       objects, verbs and global options
#   values      option values (--mode, --forward, --flows, --check,
#               --check-target, files for --svg and --state)
#   names       VIPs (IPv4 and IPv6) and backend names from the state the
#               command line names, plan's verbs and the backends it can remove
#   unreadable  a state it cannot read completes nothing and prints nothing
#   options     for every command `ringlb --help` lists, exactly its options
#               (and --json, --verbose, --help)
#
# Needs root. Without it the script skips, except under CI=true.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/suites/lib.sh"

require_root completion

TEST_NAME=completion
veth_session rcmp
V4=198.18.0.100:80/tcp
V6='[2001:db8::100]:53/udp'
R="$ROOT/build/ringlb --state $W/state.json --pin-dir $PIN"

setup() {
	local b
	ringlb attach eth0 --mode generic >/dev/null || die "attach"
	ringlb vip add "$V4" --check none >/dev/null && ringlb vip add "$V6" >/dev/null || die "vip add"
	for b in web-1 web-2 web-3; do
		ringlb backend add "$V4" "$b" "198.18.0.1${b#web-}" --mac "02:00:00:00:00:0${b#web-}" \
			>/dev/null || die "backend add $b"
	done
	ringlb backend add "$V6" dns-1 2001:db8::11 --mac 02:00:00:00:01:01 >/dev/null ||
		die "v6 backend"
}

# complete LINE: what <Tab> at the end of LINE offers, sorted, on one line.
complete_line() {
	bash --norc -c '
		source /usr/share/bash-completion/bash_completion
		source "$1/scripts/ringlb.bash-completion"
		line=$2
		COMP_LINE=$line COMP_POINT=${#line}
		read -ra COMP_WORDS <<<"$line"
		[[ $line == *" " ]] && COMP_WORDS+=("")
		COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
		COMPREPLY=()
		_ringlb ringlb "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
		printf "%s\n" "${COMPREPLY[@]}" | sort | tr "\n" " " | sed "s/ $//"' _ "$ROOT" "$1"
}

expect() { # LINE WANT
	local got
	got=$(complete_line "$1" 2>"$W/stderr")
	if [ "$got" = "$2" ] && [ ! -s "$W/stderr" ]; then
		pass "'${1#"$R" }<Tab>' offers: $got"
	else
		fail "'${1#"$R" }<Tab>': got '$got', want '$2'$([ -s "$W/stderr" ] && echo "; stderr: $(head -2 "$W/stderr")")"
	fi
}

t_words() {
	expect "$R " "attach backend daemon decap detach flows host lookup plan quic-lb restore save secret show stats store upgrade verify vip"
	expect "$R ba" "backend"
	expect "$R --" "--help --json --pin-dir --state --store --verbose --version"
	expect "$R vip " "add check del quic-lb sources"
	expect "$R backend " "add drain remove undrain weight"
}

t_values() {
	expect "$R vip add 198.18.0.9:80/tcp --forward " "gue ipip l2"
	expect "$R vip add 198.18.0.9:80/tcp --flows " "pinned stateless"
	expect "$R vip add 198.18.0.9:80/tcp --check " "dns: http: none tcp udp:"
	expect "$R vip add 198.18.0.9:80/tcp --check-target " "backend vip"
	expect "$R attach eth0 --mode " "generic native"
	expect "$R decap attach eth0 --from 198.18.0.0/24 --mode " "generic native"
	touch "$W/ring.svg"
	expect "$R show $V4 --svg $W/ring.s" "$W/ring.svg"
	expect "$R --state $W/sta" "$W/state.json $W/state.json.lock"
}

t_names() {
	expect "$R backend drain " "$V4 $V6"
	expect "$R show " "$V4 $V6"
	expect "$R backend weight $V4 " "web-1 web-2 web-3"
	expect "$R backend remove $V6 " "dns-1"
	expect "$R backend add $V4 " ""
	expect "$R plan $V4 " "add drain remove undrain weight"
	expect "$R plan $V4 remove " "web-1 web-2 web-3"
	expect "$R plan $V4 undrain " "web-1 web-2 web-3"
	expect "$R decap attach eth0 --from 198.18.0.0/24 --vip 198.18.0.9 --" "--from --gue-port --help --json --mode --verbose --vip"
	expect "$R lookup " "$V4 $V6"
	expect "$R backend weight --json $V4 w" "web-1 web-2 web-3"
}

t_unreadable() {
	expect "$ROOT/build/ringlb --state $W/none.json --pin-dir $PIN backend drain " ""
}

# Every command's options, exactly as its synopsis in `ringlb --help` lists them.
t_options() {
	local bad=0 object rest verb want got commands
	while read -r object rest; do
		verb=""
		[[ $rest =~ ^[a-z][a-z-]* ]] && verb=${BASH_REMATCH[0]}
		want=$({ grep -o -- '--[a-z-]*' <<<"$rest"; echo --json; echo --verbose; echo --help; } |
			sort -u | tr '\n' ' ' | sed 's/ $//')
		got=$(complete_line "$R $object ${verb:+$verb }--")
		[ "$got" = "$want" ] || { bad=$((bad + 1)); echo "  $object $verb: got '$got', want '$want'"; }
	done < <("$ROOT/build/ringlb" --help | sed -n 's/^  ringlb //p')
	commands=$("$ROOT/build/ringlb" --help | grep -c '^  ringlb ')
	[ "$bad" -eq 0 ] && pass "the options of all $commands commands complete exactly as ringlb --help lists them" ||
		fail "$bad of $commands commands complete other options than ringlb --help lists"
}

suite_test words
suite_test values
suite_test names
suite_test unreadable
suite_test options
suite_main "$@"
