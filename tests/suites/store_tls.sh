#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The store over mutual TLS with etcd's user authentication, as docs/scale.md
# sets it up: a real etcd (--client-cert-auth --trusted-ca-file, https only)
# with auth enabled, a root user and a user "ringlb" whose role may read and
# write /ringlb-tls/ and nothing else; a CA and certificates the test makes
# with openssl. Its tests (`store_tls.sh TEST...` runs some):
#
#   mtls         a client certificate from the CA with the user's password:
#                changes commit, show reads them
#   no_cert      no client certificate: refused in one line, nothing changed
#   other_ca     a client certificate from another CA: refused in one line
#   common_name  a client certificate with a CN: etcd's words, in one line
#   server_ca    a server certificate that does not chain to --store-cacert
#                (or, without it, to the system's CAs): refused in one line
#   password     a wrong password, no user, a password file others may read:
#                each refused in one line
#   role         the role is limited to /ringlb-tls/: a store on another
#                prefix is refused (permission denied), in one line
#   proxy        *_proxy variables are not used for the store; --store-proxy is
#   config       the same options from a configuration file: commands and the
#                daemon run without --store; a bad file is refused with its
#                line; the command line overrides it
#   daemon       (after config) the daemon follows a change over TLS
#
# Needs root. Without it the script skips, except under CI=true.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/suites/lib.sh"

require_root store_tls

TEST_NAME=store_tls
URL=https://127.0.0.1:23791
STORE="$URL/ringlb-tls"
VIP=198.18.0.100:80/tcp

# admin ARGS: etcdctl as etcd's root user.
admin() {
	ip netns exec "$NS" etcdctl --endpoints "$URL" --cacert "$C/ca.pem" --cert "$C/admin.pem" \
		--key "$C/admin-key.pem" --user root:rootpw "$@"
}
# tls ARGS: ringlb on the store with the host's certificate, the CA and the user.
tls() {
	ringlb --store "$STORE" --store-cacert "$C/ca.pem" --store-cert "$C/host.pem" \
		--store-key "$C/host-key.pem" --store-user ringlb --store-password-file "$C/password" "$@"
}
# refused WHAT WANT COMMAND...: COMMAND fails in one line that matches WANT, and the
# kernel, this host's file and the store are as before.
refused() {
	local what=$1 want=$2 before after out rc
	shift 2
	before=$(snapshot)
	out=$("$@" 2>&1 >/dev/null)
	rc=$?
	after=$(snapshot)
	[ $rc -ne 0 ] && [ "$(echo "$out" | wc -l)" -eq 1 ] && echo "$out" | grep -qiE "$want" &&
		[ "$before" = "$after" ] &&
		pass "$what: refused in one line ('$out'), exit $rc, nothing changed" ||
		fail "$what: exit $rc, '$out' (want /$want/), $([ "$before" = "$after" ] || echo 'something changed')"
}
snapshot() {
	{ sha256sum "$W/state.json"; bpftool -j map dump pinned "$PIN/vips" | jq -c .;
		admin get --print-value-only /ringlb-tls/state | sha256sum; } 2>&1
}

setup() {
	veth_session rtl
	trap 'kill $(jobs -p) 2>/dev/null; ip netns del "$NS" 2>/dev/null; rm -rf "$PIN" "$PIN-other" "$PIN-elsewhere" "$W"' EXIT
	C=$W/pki
	test_pki "$C"
	printf 'ringlbpw\n' >"$C/password"
	chmod 600 "$C/password"
	mkdir -p "$W/etcd"
	etcd_up_tls "$NS" 127.0.0.1:23791 23801 "$W/etcd" "$C"
	# Users and the role before auth is on (etcd asks for none until then).
	{ admin user add root:rootpw && admin role add ringlb &&
		admin role grant-permission ringlb --prefix=true readwrite /ringlb-tls/ &&
		admin user add ringlb:ringlbpw && admin user grant-role ringlb ringlb &&
		admin auth enable; } >/dev/null 2>&1 || die "etcd users: $(tail -3 "$W/etcd/etcd.log")"
	tls attach eth0 >/dev/null || die "attach"
}

t_mtls() {
	tls vip add "$VIP" --check none &&
		tls backend add "$VIP" b1 198.18.0.11 --mac 02:00:00:00:00:11 >/dev/null &&
		tls backend add "$VIP" b2 198.18.0.12 --mac 02:00:00:00:00:12 >/dev/null || fail "changes over mutual TLS"
	[ "$(admin get --print-value-only /ringlb-tls/state | jq -r '[.vips[].backends[].name] | join(" ")')" = "b1 b2" ] &&
		[ "$(tls show --json | jq -r '[.vips[].backends[].name] | join(" ")')" = "b1 b2" ] && tls verify >/dev/null &&
		pass "over mutual TLS as etcd user ringlb: 3 changes in /ringlb-tls/state, show reads them, verify clean" ||
		fail "mtls: store '$(admin get --print-value-only /ringlb-tls/state | head -c 200)'"
}

t_no_cert() {
	refused "no client certificate" "it may want --store-cert" \
		ringlb --store "$STORE" --store-cacert "$C/ca.pem" --store-user ringlb \
		--store-password-file "$C/password" backend weight "$VIP" b1 3
}

t_other_ca() {
	refused "a client certificate from another CA" "is --store-cert from its CA" \
		ringlb --store "$STORE" --store-cacert "$C/ca.pem" --store-cert "$C/other-host.pem" \
		--store-key "$C/other-host-key.pem" --store-user ringlb --store-password-file "$C/password" \
		backend weight "$VIP" b1 3
}

t_common_name() {
	pki_cert "$C" named ca DNS:lb.test clientAuth "/O=ringlb test/CN=lb1.test" || die "certificate"
	refused "a client certificate with a common name (etcd 3.4's gateway refuses them)" \
		"HTTP 400: CommonName of client" \
		tls --store-cert "$C/named.pem" --store-key "$C/named-key.pem" backend weight "$VIP" b1 3
}

t_server_ca() {
	refused "a server certificate not from --store-cacert's CA" "certificate" \
		ringlb --store "$STORE" --store-cacert "$C/other-ca.pem" --store-cert "$C/host.pem" \
		--store-key "$C/host-key.pem" --store-user ringlb --store-password-file "$C/password" \
		backend weight "$VIP" b1 3
	refused "a server certificate not from the system's CAs (no --store-cacert)" "certificate" \
		ringlb --store "$STORE" --store-cert "$C/host.pem" --store-key "$C/host-key.pem" \
		--store-user ringlb --store-password-file "$C/password" backend weight "$VIP" b1 3
}

t_password() {
	printf 'wrong\n' >"$W/wrong"
	chmod 600 "$W/wrong"
	refused "a wrong password" "authentication failed" tls --store-password-file "$W/wrong" \
		backend weight "$VIP" b1 3
	refused "no user (auth is on)" "user name is empty|user" \
		ringlb --store "$STORE" --store-cacert "$C/ca.pem" --store-cert "$C/host.pem" \
		--store-key "$C/host-key.pem" backend weight "$VIP" b1 3
	cp "$C/password" "$W/open"
	chmod 644 "$W/open"
	refused "a password file others may read" "password.*(others|group|mode)" \
		tls --store-password-file "$W/open" backend weight "$VIP" b1 3
}

t_role() {
	refused "a store on a prefix the role does not cover" "permission denied" \
		tls --store "$URL/elsewhere" --state "$W/elsewhere.json" --pin-dir "$PIN-elsewhere" \
		vip add 198.18.0.101:80/tcp --check none
}

t_proxy() {
	# A proxy that is not there: taken, every request would fail.
	# Answered by the store itself: no fail-static note (this host's copy would answer too).
	https_proxy=http://127.0.0.1:9 HTTPS_PROXY=http://127.0.0.1:9 all_proxy=http://127.0.0.1:9 \
		tls show --json 2>"$W/proxy.err" | jq -e 'has("store_fail_static") | not' >/dev/null &&
		[ ! -s "$W/proxy.err" ] &&
		pass "https_proxy, HTTPS_PROXY and all_proxy set to a closed port: the store is reached without them" ||
		fail "proxy variables: $(cat "$W/proxy.err")"
	refused "--store-proxy on a closed port (the proxy is used when configured)" "proxy|connect" \
		tls --store-proxy http://127.0.0.1:9 backend weight "$VIP" b1 3
}

t_config() {
	local out rc
	cat >"$W/ringlb.conf" <<-EOF
		# the fleet's store, as docs/scale.md writes it
		state = $W/state.json
		pin-dir = $PIN
		store = $STORE
		store-cacert = $C/ca.pem
		store-cert = $C/host.pem
		store-key = $C/host-key.pem
		store-user = ringlb
		store-password-file = $C/password
	EOF
	nsenter --net="/run/netns/$NS" "$ROOT/build/ringlb" --config "$W/ringlb.conf" \
		backend weight "$VIP" b2 2 >/dev/null &&
		[ "$(admin get --print-value-only /ringlb-tls/state | jq -r '.vips[0].backends[1].weight')" = 2 ] &&
		[ "$(RINGLB_CONFIG=$W/ringlb.conf nsenter --net="/run/netns/$NS" "$ROOT/build/ringlb" show --json |
			jq -r '.vips[0].backends[1].weight')" = 2 ] &&
		pass "--config FILE (and \$RINGLB_CONFIG): a change commits and show reads it with no --store on the command line" ||
		fail "config: $(admin get --print-value-only /ringlb-tls/state | head -c 200)"
	printf 'wrong\n' >"$W/wrong"
	chmod 600 "$W/wrong"
	refused "the command line over the file (--store-password-file with a wrong password)" \
		"authentication failed" nsenter --net="/run/netns/$NS" "$ROOT/build/ringlb" \
		--config "$W/ringlb.conf" --store-password-file "$W/wrong" backend weight "$VIP" b2 3
	sed 's/^store-cacert/store-ca/' "$W/ringlb.conf" >"$W/typo.conf"
	refused "a key the file may not have" "typo.conf: line 5: unknown key 'store-ca'" \
		nsenter --net="/run/netns/$NS" "$ROOT/build/ringlb" --config "$W/typo.conf" \
		backend weight "$VIP" b2 3
	{ cat "$W/ringlb.conf"; echo "store = http://127.0.0.1:23790/ringlb-tls"; } >"$W/twice.conf"
	refused "a key given twice" "line 10: 'store' given twice" nsenter --net="/run/netns/$NS" \
		"$ROOT/build/ringlb" --config "$W/twice.conf" backend weight "$VIP" b2 3
	refused "a --config that is not there" "nowhere.conf" nsenter --net="/run/netns/$NS" \
		"$ROOT/build/ringlb" --config "$W/nowhere.conf" show
}

t_daemon() {
	local t
	nsenter --net="/run/netns/$NS" "$ROOT/build/ringlb" --config "$W/ringlb.conf" daemon \
		--metrics none >"$W/daemon.log" 2>&1 &
	DPID=$!
	for t in $(seq 1 50); do grep -q "ready: serving" "$W/daemon.log" && break; sleep 0.1; done
	# Another host's change, in the store only; the daemon follows it into the kernel.
	tls --state "$W/other.json" --pin-dir "$PIN-other" attach eth1 >/dev/null 2>"$W/other.err" ||
		fail "the other host's attach: $(cat "$W/other.err")"
	tls --state "$W/other.json" --pin-dir "$PIN-other" backend weight "$VIP" b1 4 >/dev/null 2>"$W/other.err" ||
		fail "the other host's change: $(cat "$W/other.err")"
	for t in $(seq 1 50); do
		[ "$(bpftool -j map dump pinned "$PIN/backends" | jq '[.[] | select(.value.weight? == 4)] | length')" != 0 ] &&
			break
		tls verify >/dev/null 2>&1 && break
		sleep 0.1
	done
	tls verify >/dev/null 2>&1 && grep -q "ready: serving" "$W/daemon.log" &&
		pass "the daemon on --config follows another host's change over TLS after $((t / 10)).$((t % 10)) s (verify clean)" ||
		fail "daemon over TLS: $(tail -3 "$W/daemon.log")"
	kill "$DPID"
	wait "$DPID" 2>/dev/null
}

suite_test mtls
suite_test no_cert mtls
suite_test other_ca mtls
suite_test common_name mtls
suite_test server_ca mtls
suite_test password mtls
suite_test role
suite_test proxy mtls
suite_test config mtls
suite_test daemon config
suite_main "$@"
