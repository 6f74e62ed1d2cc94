#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The CLI's contract on bad input: every malformed address, port, MAC, name
# or number, every unknown or duplicate VIP or backend, every command in the
# wrong order, a missing interface, a missing bpffs, an unprivileged caller
# and a corrupt file gets exactly one line on stderr, a non-zero exit, and
# changes nothing: the state file and the kernel's rings stay byte for byte
# the same. Also: --help explains every command.
# Its tests (tests/suites/lib.sh runs them; `cli.sh TEST...` runs some):
#
#   vips_backends  malformed, duplicate and unknown VIPs and backends, bad
#                  weights, MACs and names, a MAC that cannot be resolved
#   day_two        a change's one line and --quiet, the forwarding warning,
#                  show's host line and health without a daemon
#   interfaces     a missing interface, attach twice, detach of another one,
#                  --flows on maps of another size (and verify of the size)
#   lists          decap attach's lists of prefixes and VIPs; a host of more
#                  addresses than the decap program knows is refused
#   options        bad --flows, decap, check, daemon and lookup arguments;
#                  unknown commands, verbs and options; missing arguments
#   quic           bad --quic-lb configurations and key files, server ids,
#                  --cid, QUIC commands on a VIP of no QUIC, a key file that
#                  holds another key than the state's
#   privilege      an unprivileged caller, a command before attach, a pin
#                  directory not on bpffs, attach under ip netns exec
#   restore        restore of malformed, other-version and inconsistent files
#   corrupt_state  a corrupt state file is refused and left as it is
#   help           --help lists every command; COMMAND --help explains each
#   audit          the audit log: a JSON line per attempt, none forged
#   neigh_mac      a MAC learned on an interface ringlb is not attached to
#   save           save writes a new file, never over one or through a link
#   valgrind       CLI runs and the daemon without a memory error or a leak
#   verifier       attach without CAP_PERFMON: one line; with -v, the log
#   detach         the set-up's attach detaches
#
# Runs in a private network namespace with one veth pair. Needs root; skips
# without it, except under CI=true.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/suites/lib.sh"
RINGLB_BIN=$ROOT/build/ringlb

require_root cli

VIP=198.18.0.100:80/tcp

setup() {
	veth_session rlbcli
	# The verifier test's fresh pin directory too, however the script ends.
	trap 'ip netns del "$NS" 2>/dev/null; rm -rf "$PIN" "$PIN-none" "$PIN-fresh" "$PIN-netns" "$W"' EXIT
	ringlb attach eth0 >/dev/null 2>&1 || { echo "cli: attach failed" >&2; exit 1; }
	ringlb vip add "$VIP" --vnodes 200
	ringlb vip add "[2001:db8::100]:443/tcp"
	ringlb backend add "$VIP" b1 198.18.0.11 --mac 02:00:00:00:00:11 --weight 2
	ringlb backend add "$VIP" b2 198.18.0.12 --mac 02:00:00:00:00:12
	ringlb backend drain "$VIP" b2
}

# The picture of "nothing changed": the state file and the rings the kernel serves.
snapshot() {
	sha256sum <"$W/state.json"
	ringlb show --json | jq -r '.vips[].kernel_ring_digest'
}

# refused DESCRIPTION EXPECTED_TEXT -- COMMAND...: one line, non-zero, no change.
refused() {
	local what=$1 expect=$2 rc before after lines
	shift 3
	before=$(snapshot)
	"$@" >/dev/null 2>"$W/err"
	rc=$?
	after=$(snapshot)
	lines=$(wc -l <"$W/err")
	if [ $rc -ne 0 ] && [ "$lines" -eq 1 ] && grep -qF -- "$expect" "$W/err" &&
		[ "$before" = "$after" ]; then
		pass "$what: exit $rc, '$(cat "$W/err")'"
	else
		fail "$what: exit $rc, $lines lines: '$(cat "$W/err")', changed: $([ "$before" = "$after" ] && echo no || echo yes)"
	fi
}

t_vips_backends() {
	refused "malformed VIP address" "malformed VIP" -- ringlb vip add 198.18.0.300:80/tcp
	refused "port out of range" "port must be 1..65535" -- ringlb vip add 198.18.0.100:99999/tcp
	refused "port 0" "port must be 1..65535" -- ringlb vip add 198.18.0.100:0/tcp
	refused "protocol other than tcp/udp" "protocol must be tcp or udp" -- ringlb vip add 198.18.0.100:80/sctp
	refused "IPv6 VIP without brackets" "IPv6 endpoints are written" -- ringlb vip add 2001:db8::100:80/tcp
	refused "duplicate VIP" "already exists" -- ringlb vip add "$VIP"
	refused "unknown VIP" "no such VIP" -- ringlb vip del 198.18.0.199:80/tcp
	refused "mistyped VIP: the nearest named" "no such VIP 198.18.0.10:80/tcp (did you mean 198.18.0.100:80/tcp?)" -- ringlb backend drain 198.18.0.10:80/tcp b1
	refused "VIP on another port: the same address named" "no such VIP 198.18.0.100:8080/tcp (did you mean 198.18.0.100:80/tcp?)" -- ringlb backend weight 198.18.0.100:8080/tcp b1 3
	refused "unknown VIP like no other: no guess" "no such VIP 198.19.77.1:25/udp" -- ringlb vip del 198.19.77.1:25/udp
	refused "vnodes out of range" "--vnodes must be 1..1048576, not 0" -- ringlb vip add 198.18.0.101:80/tcp --vnodes 0
	refused "vnodes not a number" "--vnodes must be a number, 1..1048576; 'many' is not a decimal number" -- ringlb vip add 198.18.0.101:80/tcp --vnodes many
	refused "malformed MAC" "malformed MAC" -- ringlb backend add "$VIP" b9 198.18.0.19 --mac 02:00:00:zz:00:19
	refused "multicast MAC" "must be unicast" -- ringlb backend add "$VIP" b9 198.18.0.19 --mac 01:00:5e:00:00:19
	refused "malformed backend address" "malformed address" -- ringlb backend add "$VIP" b9 198.18.0.500 --mac 02:00:00:00:00:19
	refused "bad backend name" "bad backend name" -- ringlb backend add "$VIP" "b 9" 198.18.0.19 --mac 02:00:00:00:00:19
	refused "duplicate backend" "already exists" -- ringlb backend add "$VIP" b1 198.18.0.19 --mac 02:00:00:00:00:19
	refused "backend of an unknown VIP" "no such VIP" -- ringlb backend add 198.18.0.199:80/tcp b9 198.18.0.19 --mac 02:00:00:00:00:19
	refused "unknown backend" "no backend 'ghost'" -- ringlb backend drain "$VIP" ghost
	refused "weight out of range" "the weight must be 0..10000, not 10001" -- ringlb backend weight "$VIP" b1 10001
	refused "weight not a number" "the weight must be a number, 0..10000; 'abc' is not a decimal number" -- ringlb backend weight "$VIP" b1 abc
	refused "weight with a leading zero" "'07' is a number with a leading zero" -- ringlb backend weight "$VIP" b1 07
	refused "--weight not a number" "--weight must be a number, 0..10000; 'heavy' is not a decimal number" -- ringlb backend add "$VIP" b9 198.18.0.19 --mac 02:00:00:00:00:19 --weight heavy
	refused "port not a number" "port is not a decimal number" -- ringlb vip add 198.18.0.100:http/tcp
	refused "ring over the point limit" "ring over its limit" -- ringlb backend weight "$VIP" b1 10000
	refused "drain twice" "already draining" -- ringlb backend drain "$VIP" b2
	refused "undrain of an active backend" "backend 'b1' is not draining" -- ringlb backend undrain "$VIP" b1
	refused "weight of a draining backend" "backend 'b2' is draining: add --undrain to weigh and undrain it, or 'ringlb backend undrain $VIP b2' first" -- ringlb backend weight "$VIP" b2 3
	refused "undrain of an unknown backend" "no backend 'ghost'" -- ringlb backend undrain "$VIP" ghost
	refused "MAC that cannot be resolved" "cannot resolve the MAC" -- ringlb backend add "$VIP" b9 203.0.113.9
}

# Undrain, and weight --undrain: the drain undone through the same change as drain (the
# audit log, the ring), the ring the same one before the drain and after the undrain.
t_undrain() {
	local drained undrained again weighed audit plan
	drained=$(vip_digest "$VIP")
	audit=$(wc -l <"$W/audit.log")
	plan=$(ringlb plan "$VIP" undrain b2 --json | jq -r '.backends[] | select(.name == "b2") | .share_after')
	if ringlb backend undrain "$VIP" b2 2>"$W/err" && [ ! -s "$W/err" ] &&
		[ "$(backend_field "$VIP" b2 state)" = active ]; then
		pass "undrain: b2 active again, nothing said; plan had said its share after: $plan, show says $(backend_field "$VIP" b2 share)"
	else
		fail "undrain: b2 $(backend_field "$VIP" b2 state), '$(cat "$W/err")'"
	fi
	undrained=$(vip_digest "$VIP")
	[ "$(tail -1 "$W/audit.log" | jq -c '[.command[-4:], .result]')" = '[["backend","undrain","'"$VIP"'","b2"],"ok"]' ] &&
		[ "$(wc -l <"$W/audit.log")" -eq $((audit + 1)) ] &&
		pass "undrain: one audit line, $(tail -1 "$W/audit.log" | jq -c '[.command[-4:], .result]')" ||
		fail "undrain: audit log: $(tail -1 "$W/audit.log")"
	ringlb backend drain "$VIP" b2 || fail "drain again"
	again=$(vip_digest "$VIP")
	ringlb backend weight "$VIP" b2 1 --undrain || fail "weight --undrain"
	weighed=$(vip_digest "$VIP")
	if [ "$drained" != "$undrained" ] && [ "$again" = "$drained" ] && [ "$weighed" = "$undrained" ] &&
		[ "$(backend_field "$VIP" b2 state) $(backend_field "$VIP" b2 weight)" = "active 1" ]; then
		pass "undrain: drain, undrain, drain, weight 1 --undrain: the kernel's ring alternates between two digests ($drained drained, $undrained not)"
	else
		fail "undrain: ring digests drained $drained, undrained $undrained, drained again $again, weight --undrain $weighed; b2 $(backend_field "$VIP" b2 state) weight $(backend_field "$VIP" b2 weight)"
	fi
	ringlb backend drain "$VIP" b2 || fail "drain b2 as the set-up had it"
}

# A backend this host has no route to is added, with one line of warning; one it can reach, silently.
t_no_route() {
	local rc
	ringlb backend add "$VIP" b7 198.19.7.7 --mac 02:00:00:00:00:17 >/dev/null 2>"$W/err"
	rc=$?
	if [ $rc -eq 0 ] && [ "$(wc -l <"$W/err")" -eq 1 ] &&
		grep -qF "ringlb: backend add: warning: this host has no route to 198.19.7.7" "$W/err" &&
		[ "$(backend_field "$VIP" b7 state)" = active ]; then
		pass "no route: exit 0, b7 added, '$(cat "$W/err")'"
	else
		fail "no route: exit $rc, b7 $(backend_field "$VIP" b7 state), stderr '$(cat "$W/err")'"
	fi
	ringlb backend add "$VIP" b8 198.18.0.18 --mac 02:00:00:00:00:18 >/dev/null 2>"$W/err"
	rc=$?
	[ $rc -eq 0 ] && [ ! -s "$W/err" ] && pass "no route: a backend on eth0's network added without a word" ||
		fail "no route: b8 on eth0's network: exit $rc, '$(cat "$W/err")'"
	ringlb backend remove "$VIP" b7 && ringlb backend remove "$VIP" b8 || fail "remove b7, b8"
}

# A change says what it did in one line (not with --quiet); an encapsulated VIP on an
# interface where forwarding is off gets one line of warning naming the sysctl; show
# starts with the host's facts and says no daemon checks the backends.
t_day_two() {
	local out err gen rc
	out=$(ringlb backend weight "$VIP" b1 3 2>"$W/err")
	gen=$(ringlb show --json | jq .generation)
	[ "$out" = "backend weight $VIP b1 3: done, state generation $gen" ] && [ ! -s "$W/err" ] &&
		pass "a change says: '$out'" || fail "a change said '$out', '$(cat "$W/err")'"
	out=$(ringlb --quiet backend weight "$VIP" b1 2 2>&1)
	[ -z "$out" ] && pass "--quiet: nothing" || fail "--quiet said '$out'"
	ip netns exec "$NS" sysctl -qw net.ipv4.conf.eth0.forwarding=0
	ringlb vip add 198.18.0.101:80/tcp --forward ipip >/dev/null 2>"$W/err" ||
		fail "vip add --forward ipip: $(cat "$W/err")"
	err=$(cat "$W/err")
	[ "$(wc -l <<<"$err")" = 1 ] && grep -qF "forwarding is off on eth0 for IPv4" <<<"$err" &&
		grep -qF "sysctl -w net.ipv4.conf.eth0.forwarding=1" <<<"$err" &&
		pass "forwarding off: '$err'" || fail "forwarding off: '$err'"
	out=$(ringlb verify 2>&1)
	rc=$?
	[ $rc -eq 1 ] && [ "$(grep -c forwarding <<<"$out")" = 1 ] &&
		grep -qF "forwarding is off on eth0 for IPv4" <<<"$out" &&
		grep -qF "sysctl -w net.ipv4.conf.eth0.forwarding=1" <<<"$out" &&
		pass "verify, forwarding off: exit 1, '$(grep forwarding <<<"$out")'" ||
		fail "verify, forwarding off: exit $rc, '$out'"
	ip netns exec "$NS" sysctl -qw net.ipv4.conf.eth0.forwarding=1
	out=$(ringlb verify 2>&1)
	rc=$?
	[ $rc -eq 0 ] && ! grep -q forwarding <<<"$out" &&
		pass "verify, forwarding on: exit 0, '$out'" || fail "verify, forwarding on: exit $rc, '$out'"
	ringlb vip del 198.18.0.101:80/tcp >/dev/null 2>"$W/err"
	[ ! -s "$W/err" ] && pass "forwarding on: no warning" || fail "forwarding on: '$(cat "$W/err")'"
	ip netns exec "$NS" sysctl -qw net.ipv4.conf.eth0.forwarding=0
	out=$(ringlb show | head -1)
	[[ $out =~ ^"Host: attached to eth0 (native, build $(cat "$ROOT/VERSION"), program "[0-9a-f]{16}"); encapsulation from 198.18.0.2, GUE port 19523; no daemon running (no health checks, no repairs)"$ ]] &&
		pass "show: '$out'" || fail "show's first line: '$out'"
	[ "$(backend_field "$VIP" b1 health)" = "unchecked (no daemon)" ] &&
		pass "show: b1's health unchecked (no daemon)" ||
		fail "show: b1's health '$(backend_field "$VIP" b1 health)' with no daemon"
}

# decap_sets: the decap program's trusted prefixes and VIP slots, as bpftool dumps them.
decap_sets() {
	bpftool map dump pinned "$PIN/decap/decap_from" -j | jq -c 'sort_by(.key)'
	bpftool map dump pinned "$PIN/decap/decap_vip" -j | jq -c 'sort_by(.key)'
}

# decap attach takes --from and --vip as comma-separated lists; its synopsis shows both required.
t_lists() {
	local from synopsis before k
	synopsis=$(ringlb decap attach --help | head -1)
	[[ $synopsis == *" --from PREFIX... --vip ADDR... [--mode native|generic]"* ]] &&
		pass "decap attach --help: '${synopsis#  }'" || fail "decap attach --help: '$synopsis'"
	if ringlb decap attach eth1 --mode generic --from 198.18.11.2/32,198.18.13.0/24 \
		--from 2001:db8:11::2/128 --vip 198.18.0.100,2001:db8::100 2>"$W/err"; then
		from=$(bpftool map dump pinned "$PIN/decap/decap_from" -j 2>/dev/null | jq length)
		[ "$from" = 3 ] && pass "decap attach --from A,B --from C --vip X,Y: the program trusts 3 prefixes" ||
			fail "decap attach with lists: the peers map holds '$from' entries, want 3"
		# More addresses than the program can know as its own: refused, nothing changed.
		before=$(decap_sets)
		for k in $(seq 0 1024); do
			echo "address add 198.19.$((k / 256)).$((k % 256))/32 dev lo"
		done | ip -n "$NS" -batch - || fail "adding 1,025 addresses to lo"
		refused "decap attach on a host of over 1,024 addresses" "more than 1024 addresses" -- \
			ringlb decap attach eth1 --mode generic --from 198.18.13.0/24 --vip 198.18.0.101
		[ "$(decap_sets)" = "$before" ] &&
			pass "the refused attach left the trusted prefixes and the VIPs as they were" ||
			fail "the refused attach changed the trusted prefixes or the VIPs"
		for k in $(seq 0 1024); do
			echo "address del 198.19.$((k / 256)).$((k % 256))/32 dev lo"
		done | ip -n "$NS" -batch - || fail "removing the 1,025 addresses from lo"
		ringlb decap detach eth1 || fail "decap detach eth1"
	else
		fail "decap attach with lists: '$(cat "$W/err")'"
	fi
}

t_interfaces() {
	refused "missing interface" "no such interface" -- ringlb attach nosuch0
	refused "attach twice" "already attached" -- ringlb attach eth0
	refused "detach of an interface not attached" "not attached to eth1" -- ringlb detach eth1
	refused "upgrade of an interface not attached" "eth1: not attached (ringlb attach eth1)" -- ringlb upgrade eth1
	refused "upgrade of an interface not attached, beside one attached" "eth1: not attached" -- ringlb upgrade eth0 eth1
	refused "upgrade of a path, not an interface" "'../links/eth0' is not an interface name" -- ringlb upgrade ../links/eth0
	refused "upgrade of an interface named twice" "interface 'eth0' named twice" -- ringlb upgrade eth0 eth0
	# The flow table keeps the size it was made with; the state never says another.
	refused "attach --flows of another size on existing maps" "the flow table has 65536 entries already, and --flows 1024 sizes only one being made" -- ringlb attach eth1 --mode generic --flows 1024
	[ "$(jq .flow_entries "$W/state.json")" = 65536 ] && pass "the state records the kernel's 65536 flows" ||
		fail "the state records $(jq .flow_entries "$W/state.json") flows, the kernel has 65536"
	cp "$W/state.json" "$W/flows.json"
	sed -i 's/"flow_entries": 65536/"flow_entries": 1024/' "$W/state.json"
	ringlb verify >"$W/out" 2>&1
	grep -qF "the flow table has 65536 entries, the state says 1024" "$W/out" &&
		pass "verify: '$(grep -F "flow table" "$W/out")'" ||
		fail "verify of a state with another flow table size: '$(cat "$W/out")'"
	cp "$W/flows.json" "$W/state.json"
}

t_options() {
	refused "--flows other than pinned or stateless" "--flows is pinned or stateless" -- ringlb vip add 198.18.0.101:80/tcp --forward gue --flows sometimes
	refused "a stateless l2 VIP" "--flows stateless needs --forward gue" -- ringlb vip add 198.18.0.101:80/tcp --flows stateless
	refused "decap drained of a malformed VIP" "malformed VIP" -- ringlb decap drained 198.18.0.300:80/tcp
	refused "decap drained of a UDP VIP" "only a TCP VIP" -- ringlb decap drained 198.18.0.100:53/udp
	refused "unknown check" "must be tcp, http:PATH or none" -- ringlb vip add 198.18.0.101:80/tcp --check ping
	refused "HTTP check path without /" "starts with /" -- ringlb vip add 198.18.0.101:80/tcp --check http:health
	refused "HTTP check path with a space" "without spaces" -- ringlb vip add 198.18.0.101:80/tcp --check "http:/a b"
	refused "check timeout over the interval" "timeout is 10 ms .. the interval" -- ringlb vip add 198.18.0.101:80/tcp --check-interval 500 --check-timeout 600
	refused "check port 0" "--check-port must be" -- ringlb vip add 198.18.0.101:80/tcp --check-port 0
	refused "check interval not a number" "--check-interval must be a number" -- ringlb vip check "$VIP" --check-interval 2s
	refused "decap attach without --from" "--from PREFIX is required" -- ringlb decap attach eth1 --vip 198.18.0.100
	refused "decap attach without --vip" "--vip ADDR is required" -- ringlb decap attach eth1 --from 198.18.0.0/24
	refused "--from with a bad item in its list" "malformed prefix '198.18.300.0/24': not an IPv4 or IPv6 address" -- ringlb decap attach eth1 --from 198.18.0.0/24,198.18.300.0/24 --vip 198.18.0.100
	refused "--from with an empty item" "--from '198.18.0.0/24,': an empty item" -- ringlb decap attach eth1 --from 198.18.0.0/24, --vip 198.18.0.100
	refused "--from length not a number" "malformed prefix '198.18.0.0/2x': the length is not a decimal number" -- ringlb decap attach eth1 --from 198.18.0.0/2x --vip 198.18.0.100
	refused "--from length out of range" "the length must be 0..32" -- ringlb decap attach eth1 --from 198.18.0.0/33 --vip 198.18.0.100
	refused "rise 0" "--rise must be" -- ringlb backend add "$VIP" b9 198.18.0.19 --mac 02:00:00:00:00:19 --rise 0
	refused "check target other than vip or backend" "--check-target is vip or backend" -- ringlb vip check "$VIP" --check-target router
	refused "vip check without an option" "at least one check option" -- ringlb vip check "$VIP"
	refused "vip check of an unknown VIP" "no such VIP" -- ringlb vip check 198.18.0.199:80/tcp --fall 5
	refused "daemon metrics address without a port" "not ADDR:PORT" -- ringlb daemon --metrics 127.0.0.1
	refused "unknown command" "unknown command" -- ringlb frobnicate
	refused "unknown verb" "unknown verb" -- ringlb vip frob "$VIP"
	refused "unknown option" "unknown option" -- ringlb vip add 198.18.0.101:80/tcp --frob
	refused "missing arguments" "missing arguments" -- ringlb backend add "$VIP" b9
	refused "lookup of a malformed client" "malformed client" -- ringlb lookup "$VIP" 198.18.0.21
	refused "lookup across families" "address family" -- ringlb lookup "$VIP" "[2001:db8::21]:4000"
	refused "plan of an unknown verb" "plan add, remove, weight, drain or undrain" -- ringlb plan "$VIP" frob b1
}

# QUIC VIPs: every bad configuration, key file, server id and command in the wrong
# place refused in one line, nothing changed.
t_quic() {
	local q=198.18.0.100:443/udp
	(umask 077 && echo 000102030405060708090a0b0c0d0e0f >"$W/quic.key")
	(umask 000 && echo 000102030405060708090a0b0c0d0e0f >"$W/open.key")
	echo 0001020304 >"$W/short.key"
	chmod 600 "$W/short.key"
	refused "--quic-lb on a TCP VIP" "QUIC-LB is for UDP VIPs" -- ringlb vip add 198.18.0.101:80/tcp --quic-lb rotation=0,sid=1,nonce=8
	refused "--quic-lb without its lengths" "rotation, sid and nonce are all needed" -- ringlb vip add "$q" --quic-lb rotation=0
	refused "--quic-lb rotation 7" "QUIC-LB rotation '7'" -- ringlb vip add "$q" --quic-lb rotation=7,sid=1,nonce=8
	refused "--quic-lb nonce of 3" "QUIC-LB nonce length '3'" -- ringlb vip add "$q" --quic-lb rotation=0,sid=1,nonce=3
	refused "--quic-lb over 19 octets" "at most 19" -- ringlb vip add "$q" --quic-lb rotation=0,sid=10,nonce=10
	refused "--quic-lb with an unknown field" "unknown field 'lb=1'" -- ringlb vip add "$q" --quic-lb rotation=0,sid=1,nonce=8,lb=1
	refused "--quic-lb with a relative key file" "absolute path" -- ringlb vip add "$q" --quic-lb rotation=0,sid=1,nonce=8,key=quic.key
	refused "--quic-lb with a missing key file" "QUIC-LB key file $W/none.key" -- ringlb vip add "$q" --quic-lb "rotation=0,sid=1,nonce=8,key=$W/none.key"
	refused "--quic-lb with a key file others may read" "readable by its owner alone" -- ringlb vip add "$q" --quic-lb "rotation=0,sid=1,nonce=8,key=$W/open.key"
	refused "--quic-lb with a short key" "must hold 32 hex digits" -- ringlb vip add "$q" --quic-lb "rotation=0,sid=1,nonce=8,key=$W/short.key"
	refused "vip quic-lb of a TCP VIP" "QUIC-LB is for UDP VIPs" -- ringlb vip quic-lb "$VIP" --quic-lb rotation=0,sid=1,nonce=8
	refused "vip quic-lb with neither" "or --clear it" -- ringlb vip quic-lb "$VIP"
	refused "--server-id on a VIP of no QUIC" "is no QUIC VIP" -- ringlb backend add "$VIP" b9 198.18.0.19 --mac 02:00:00:00:00:19 --server-id 01
	refused "lookup --cid on a VIP of no QUIC" "is no QUIC VIP" -- ringlb lookup "$VIP" --cid 0011223344
	refused "quic-lb config of a VIP of no QUIC" "is no QUIC VIP" -- ringlb quic-lb config "$VIP"
	refused "lookup without a flow or --cid" "say which flows" -- ringlb lookup "$VIP"
	if ringlb -q vip add "$q" --quic-lb "rotation=2,sid=2,nonce=6,key=$W/quic.key" &&
		ringlb -q backend add "$q" q1 198.18.0.21 --mac 02:00:00:00:00:21 --server-id 0a0b; then
		refused "--server-id another backend has" "another backend of the VIP has it" -- ringlb backend add "$q" q2 198.18.0.22 --mac 02:00:00:00:00:22 --server-id 0a0b
		refused "--server-id of another length" "server ids are 2 octets" -- ringlb backend add "$q" q2 198.18.0.22 --mac 02:00:00:00:00:22 --server-id 0a
		refused "--server-id all zero" "all zero" -- ringlb backend add "$q" q2 198.18.0.22 --mac 02:00:00:00:00:22 --server-id 0000
		refused "--server-id not hex" "malformed server id" -- ringlb backend add "$q" q2 198.18.0.22 --mac 02:00:00:00:00:22 --server-id 0x0a
		refused "lookup --cid not hex" "malformed connection ID" -- ringlb lookup "$q" --cid 4zz
		refused "lookup --cid of 21 octets" "1 to 20 octets" -- ringlb lookup "$q" --cid "$(printf '%042d' 0)"
		# The key file replaced behind ringlb's back: what reads it refuses; the kernel
		# keeps serving the key the state names (fail static).
		echo 0f0e0d0c0b0a09080706050403020100 >"$W/quic.key"
		refused "quic-lb config when the key file holds another key" "holds another key than the state's" -- ringlb quic-lb config "$q"
		refused "lookup --cid when the key file holds another key" "holds another key than the state's" -- ringlb lookup "$q" --cid 4001020304050607080900
		ringlb verify >/dev/null && pass "verify with the key file changed: the kernel serves the state's key" ||
			fail "verify with the key file changed: $(ringlb verify 2>&1)"
		# A state naming the old key's digest, restored where the kernel has no key for it.
		rm -f "$W/quic-saved.json"
		ringlb -q save "$W/quic-saved.json" && ringlb -q vip del "$q" || fail "save, vip del"
		refused "restore of a QUIC VIP whose key file holds another key" "holds another key than the state's" -- ringlb restore "$W/quic-saved.json"
		echo 000102030405060708090a0b0c0d0e0f >"$W/quic.key"
		ringlb -q restore "$W/quic-saved.json" && ringlb verify >/dev/null &&
			pass "restore with the key file as the state says: verify clean" ||
			fail "restore with the right key: $(ringlb verify 2>&1)"
		ringlb -q vip del "$q" || fail "vip del $q"
	else
		fail "a QUIC VIP for the refusals"
	fi
}

t_privilege() {
	refused "unprivileged caller" "needs root" -- nsenter --net="/run/netns/$NS" \
		setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all \
		"$RINGLB_BIN" --state "$W/state.json" --pin-dir "$PIN" vip add 198.18.0.101:80/tcp
	refused "command before attach (fresh pin dir)" "run 'ringlb attach IFACE' first" -- \
		nsenter --net="/run/netns/$NS" "$RINGLB_BIN" --state "$W/state.json" --pin-dir "$PIN-none" \
		vip add 198.18.0.101:80/tcp
	mkdir -p "$W/plain/pins"
	refused "pin dir not on bpffs" "no BPF filesystem" -- \
		nsenter --net="/run/netns/$NS" "$RINGLB_BIN" --state "$W/state.json" --pin-dir "$W/plain/pins" \
		stats
	# ip netns exec gives the command a mount namespace (and a /sys) of its own: a bpffs
	# mounted there would end with it, the state listing an interface nothing runs on.
	mkdir -p "$W/netns"
	refused "attach under ip netns exec" "run ringlb with nsenter --net=/run/netns/NAME" -- \
		ip netns exec "$NS" "$RINGLB_BIN" --state "$W/netns/state.json" --pin-dir "$PIN-netns" \
		attach eth1 --mode generic
	[ ! -e "$W/netns/state.json" ] && [ ! -e "$PIN-netns" ] &&
		pass "attach under ip netns exec: no state, no pin directory" ||
		fail "attach under ip netns exec left $(ls "$W/netns" "$PIN-netns" 2>&1 | tr '\n' ' ')"
}

t_restore() {
	refused "restore of a malformed file" "line" -- ringlb restore /dev/null
	echo '{"version": 2}' >"$W/v2.json"
	refused "restore of another format version" "this ringlb reads version 1" -- ringlb restore "$W/v2.json"
	jq '.vips[0].backends[0].mac = "zz"' "$W/state.json" >"$W/badmac.json"
	refused "restore with a bad MAC inside" "backends[0].mac" -- ringlb restore "$W/badmac.json"
	jq '.vips[0].backends[1].id = .vips[0].backends[0].id' "$W/state.json" >"$W/dupid.json"
	refused "restore with a duplicate backend id" "already taken" -- ringlb restore "$W/dupid.json"
}

# A corrupt state file is refused and left as it is.
t_corrupt_state() {
	local before rc
	cp "$W/state.json" "$W/good.json"
	echo '{ "version": 1, "vips": [ {' >"$W/state.json"
	before=$(sha256sum <"$W/state.json")
	ringlb vip add 198.18.0.101:80/tcp >/dev/null 2>"$W/err"
	rc=$?
	if [ $rc -ne 0 ] && [ "$(wc -l <"$W/err")" -eq 1 ] && grep -q "state file" "$W/err" &&
		[ "$before" = "$(sha256sum <"$W/state.json")" ]; then
		pass "corrupt state file: exit $rc, '$(cat "$W/err")', file untouched"
	else
		fail "corrupt state file: exit $rc, '$(cat "$W/err")'"
	fi
	cp "$W/good.json" "$W/state.json"
}

# A state file missing where the kernel serves (a mistyped --state, a deleted file):
# every command and the daemon refuse in one line that names the file and the pins,
# and the kernel keeps serving the state it had.
t_missing_state() {
	local cmd rc ok=0 n=0 line=
	for cmd in "vip add 198.18.0.101:80/tcp" "backend remove $VIP b1" "detach eth0" "show" \
		"verify" "lookup $VIP 198.18.0.9:1000" "secret set $W/none" "host drain" \
		"daemon --metrics none"; do
		n=$((n + 1))
		# shellcheck disable=SC2086
		nsenter --net="/run/netns/$RINGLB_NS" "$RINGLB_BIN" --state "$W/typo.json" \
			--pin-dir "$PIN" $cmd >/dev/null 2>"$W/err"
		rc=$?
		if [ $rc -ne 0 ] && [ "$(wc -l <"$W/err")" -eq 1 ] &&
			grep -qF "no state file at $W/typo.json, but the kernel serves the deployment pinned under $PIN" "$W/err"; then
			ok=$((ok + 1))
		else
			line="$line $cmd: exit $rc '$(cat "$W/err")';"
		fi
	done
	if [ $ok -eq $n ] && [ ! -e "$W/typo.json" ] && ringlb verify >/dev/null; then
		pass "a missing --state where the kernel serves: $ok of $n commands refused in one line, the daemon too ('$(cat "$W/err")'); nothing written, verify clean"
	else
		fail "a missing --state where the kernel serves: $ok of $n refused;$line"
	fi
}

# --help explains every command.
t_help() {
	local helped cmd
	if ringlb --help >"$W/help" && [ "$(grep -c "^  ringlb " "$W/help")" -eq 34 ]; then
		pass "ringlb --help lists the 34 commands"
	else
		fail "ringlb --help: $(grep -c '^  ringlb ' "$W/help") commands listed"
	fi
	helped=0
	for cmd in attach detach vip backend secret decap show stats lookup plan verify save restore; do
		if ringlb "$cmd" --help >"$W/help" 2>&1 && grep -q "ringlb $cmd" "$W/help"; then
			helped=$((helped + 1))
		else
			fail "ringlb $cmd --help"
		fi
	done
	[ $helped -eq 13 ] && pass "ringlb COMMAND --help explains each of the 13 command words"
}

# The audit log: one JSON line per attempt of a mutating command, accepted or
# refused, with the user behind sudo; no argument can forge a line or a field.
t_audit() {
	local before after forged
	before=$(wc -l <"$W/audit.log")
	forged=$(printf '198.18.0.1" result="ok"\nforged')
	SUDO_USER=alice ringlb backend weight "$VIP" b1 3 >/dev/null 2>&1
	ringlb vip add "$forged" >/dev/null 2>&1
	ringlb vip add 198.18.0.101:80/tcp --vnodes 0 >/dev/null 2>&1
	after=$(wc -l <"$W/audit.log")
	if [ $((after - before)) -eq 3 ] && jq -e . "$W/audit.log" >/dev/null &&
		tail -3 "$W/audit.log" | head -1 | jq -e '.result == "ok" and .sudo_user == "alice" and
			(.command | index("weight")) != null' >/dev/null &&
		tail -2 "$W/audit.log" | head -1 | jq -e --arg f "$forged" '.result == "error" and
			(.command | index($f | gsub("\n"; "\\x0a"))) != null and
			(.error | test("malformed VIP"))' >/dev/null &&
		tail -1 "$W/audit.log" | jq -e '.result == "error" and (.error | test("--vnodes"))' >/dev/null; then
		pass "audit log: $after JSON lines; an accepted change with its sudo user, a refusal with a quote and a newline in its argument, a usage error: 3 lines, each with its result and error"
	else
		fail "audit log: $((after - before)) lines for 3 attempts: $(tail -3 "$W/audit.log" | tr '\n' ' ')"
	fi
	ringlb backend weight "$VIP" b1 2
}

# A MAC from the neighbour table must be one learned on an attached interface.
t_neigh_mac() {
	ip -n "$NS" neigh replace 198.18.5.5 lladdr 02:00:00:00:05:05 dev eth1 nud permanent
	refused "a MAC learned on an interface ringlb is not attached to" \
		"not on an interface ringlb is attached to" -- ringlb backend add "$VIP" b9 198.18.5.5
}

# save writes a new file, never over one, never through a link.
t_save() {
	echo precious >"$W/victim"
	ln -s "$W/victim" "$W/link"
	refused "save over an existing file" "exists" -- ringlb save "$W/victim"
	refused "save through a planted link" "exists" -- ringlb save "$W/link"
	[ "$(cat "$W/victim")" = precious ] && pass "save: the file behind the link is untouched" ||
		fail "save wrote through a link"
}

# vg_lane NAME COMMAND...: each COMMAND, in turn, under valgrind; a line "ok" for
# each that ran without a memory error or a leak, valgrind's report for the others.
vg_lane() {
	local name=$1 cmd
	shift
	for cmd in "$@"; do
		# shellcheck disable=SC2086
		if nsenter --net="/run/netns/$NS" valgrind -q --error-exitcode=99 --leak-check=full \
			--suppressions="$ROOT/tests/tools/valgrind.supp" \
			--errors-for-leak-kinds=definite,indirect "$RINGLB_BIN" --state "$W/state.json" \
			--pin-dir "$PIN" $cmd >/dev/null 2>"$W/vg-$name"; then
			echo ok
		elif [ $? -ne 99 ] && ! grep -q "==[0-9]*==" "$W/vg-$name"; then
			echo ok # the command failed as it should, valgrind found nothing
		else
			echo "valgrind: ringlb $cmd:"; head -20 "$W/vg-$name"
		fi
	done
}

# valgrind: the CLI reads, changes and fails without a memory error or a leak.
# Two lanes at once, one CPU each: the reads (a shared lock on the state: each
# sees a committed state) beside the changes and refusals, in their order.
t_valgrind() {
	local vg_ok vg_runs vg_daemon vg_rc t reads changes
	local -a lane_r=("show" "show --json" "stats --json" "verify" "plan $VIP add b7 198.18.0.17" \
		"lookup $VIP 198.18.0.21:4000" "show $VIP --svg $W/vg.svg" \
		"plan $VIP remove b1 --svg $W/vg-plan.svg" "show $VIP --svg $W/no/dir.svg" "--version")
	local -a lane_w=("vip add 198.18.0.105:80/tcp" "vip del 198.18.0.105:80/tcp" \
		"backend weight $VIP b1 3" "backend weight $VIP ghost 3" "vip add nonsense" "save $W/vg.json" \
		"vip add 198.18.0.106:80/tcp --check http:/x --rise 3" "vip check 198.18.0.106:80/tcp --fall 4" \
		"vip del 198.18.0.106:80/tcp" "daemon --metrics nowhere")
	vg_lane r "${lane_r[@]}" >"$W/vg-r.out" &
	reads=$!
	vg_lane w "${lane_w[@]}" >"$W/vg-w.out" &
	changes=$!
	wait "$reads" "$changes"
	vg_runs=$((${#lane_r[@]} + ${#lane_w[@]}))
	vg_ok=$(cat "$W/vg-r.out" "$W/vg-w.out" | grep -c '^ok$')
	grep -hv '^ok$' "$W/vg-r.out" "$W/vg-w.out"
	# The daemon itself: two seconds of checks and a scrape, then SIGTERM.
	nsenter --net="/run/netns/$NS" valgrind -q --error-exitcode=99 --leak-check=full \
		--suppressions="$ROOT/tests/tools/valgrind.supp" --errors-for-leak-kinds=definite,indirect \
		"$RINGLB_BIN" --state "$W/state.json" --pin-dir "$PIN" daemon --metrics 127.0.0.1:9478 \
		>/dev/null 2>"$W/vg-daemon" &
	vg_daemon=$!
	for t in $(seq 1 100); do grep -q "ready: serving" "$W/vg-daemon" && break; sleep 0.1; done
	sleep 2
	nsenter --net="/run/netns/$NS" curl -s -o /dev/null http://127.0.0.1:9478/metrics
	kill "$vg_daemon"
	wait "$vg_daemon"
	vg_rc=$?
	vg_runs=$((vg_runs + 1))
	if [ $vg_rc -eq 0 ] && ! grep -q "==[0-9]*==" "$W/vg-daemon"; then
		vg_ok=$((vg_ok + 1))
	else
		echo "valgrind: ringlb daemon (exit $vg_rc):"; grep "==" "$W/vg-daemon" | head -30
	fi
	if [ $vg_ok -eq $vg_runs ]; then
		pass "valgrind: $vg_runs CLI runs (reads, changes, refusals) with no memory error and no leak"
	else
		fail "valgrind: $((vg_runs - vg_ok)) of $vg_runs CLI runs had memory errors or leaks"
	fi
}

# A program the verifier refuses: without CAP_PERFMON (or CAP_SYS_ADMIN) it
# rejects the data path's pointer arithmetic. A fresh deployment (nothing
# attached yet, so nothing else needs CAP_SYS_ADMIN): one line without -v;
# with -v, libbpf's messages and the verifier's log too.
no_perfmon() {
	nsenter --net="/run/netns/$NS" setpriv --bounding-set=-perfmon,-sys_admin \
		--inh-caps=-perfmon,-sys_admin "$RINGLB_BIN" --state "$W/fresh/state.json" \
		--pin-dir "$PIN-fresh" "$@"
}
t_verifier() {
	local rc
	mkdir -p "$W/fresh"
	no_perfmon attach eth1 --mode generic >/dev/null 2>"$W/err"
	rc=$?
	if [ $rc -eq 1 ] && [ "$(wc -l <"$W/err")" -eq 1 ] &&
		grep -q "cannot load the XDP program: Permission denied; the verifier needs CAP_PERFMON" "$W/err" &&
		grep -q "(ringlb -v shows libbpf's log)" "$W/err" && [ ! -e "$W/fresh/state.json" ]; then
		pass "attach the verifier refuses: exit 1, '$(cat "$W/err")'"
	else
		fail "attach the verifier refuses: exit $rc, '$(cat "$W/err")'"
	fi
	no_perfmon -v attach eth1 --mode generic >/dev/null 2>"$W/verbose"
	if grep -q "BEGIN PROG LOAD LOG" "$W/verbose" && grep -q "processed [0-9]* insns" "$W/verbose" &&
		[ "$(grep -c '^ringlb: attach: ' "$W/verbose")" -eq 1 ] && ! grep -q "ringlb -v shows" "$W/verbose"; then
		pass "attach -v the verifier refuses: libbpf's messages and the verifier's log ($(wc -l <"$W/verbose") lines), then the one line"
	else
		fail "attach -v: no verifier log: $(head -5 "$W/verbose")"
	fi
	rm -rf "$PIN-fresh"
}

t_detach() {
	ringlb detach eth0 || fail "detach"
}

suite_test vips_backends
suite_test undrain
suite_test no_route
suite_test day_two
suite_test lists
suite_test interfaces
suite_test options
suite_test quic
suite_test privilege
suite_test restore
suite_test corrupt_state
suite_test missing_state
suite_test help
suite_test audit
suite_test neigh_mac
suite_test save
suite_test valgrind
suite_test verifier
suite_test detach
suite_main "$@"
