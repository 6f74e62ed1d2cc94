#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# `make demo`: ringlb live, in network namespaces on this machine. Builds the
# test topology (a bridge, a balancer, three nginx backends, two clients),
# attaches ringlb natively, adds a VIP with backends of weight 1, 2 and 3,
# sends real HTTP connections, drains a backend while a download from it is
# still running, and tears everything down, whatever happens. RINGLB names the
# binary (default: the tree's build/ringlb; tests/suites/package.sh runs the
# installed /usr/sbin/ringlb).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/scripts/topology.sh"

if [ "$(id -u)" -ne 0 ]; then
	echo "demo: needs root (network namespaces, XDP)" >&2
	exit 1
fi

P=rlbdemo
W=$(mktemp -d)
PIN=/sys/fs/bpf/ringlb-demo
VIP="$TOPO_VIP4:80/tcp"

cleanup() {
	topo_down "$P" "$W"
	rm -rf "$PIN" "$W"
}
trap cleanup EXIT
topo_down "$P" "$W" # a previous run that was killed

RINGLB=${RINGLB:-$ROOT/build/ringlb}
# /slow's rate (scripts/topology.sh), in nginx's KiB.
SLOW_RATE=${TOPO_SLOW_RATE:-16k}
ringlb() { nsenter --net="/run/netns/${P}lb" "$RINGLB" --state "$W/state.json" --pin-dir "$PIN" "$@"; }
say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
run() { printf '$ %s\n' "$*"; "$@"; }

# distribution N CLIENT: N new connections, then how many each backend answered.
distribution() {
	ip netns exec "${P}c$2" curl -s -m 30 -H 'Connection: close' "http://$TOPO_VIP4/[1-$1]" |
		sort | uniq -c | awk '{ printf "   %-4s %5d connections\n", $2, $1 }'
}

echo "ringlb: $RINGLB ($("$RINGLB" --version))"
say "Topology: bridge, balancer 198.18.0.2, backends b1-b3 (nginx, VIP on lo), clients c1-c2"
topo_up "$P" "$W" 3

say "Attach ringlb to the balancer's eth0 (native XDP) and add a VIP with 3 weighted backends"
run ringlb attach eth0
run ringlb vip add "$VIP"
for i in 1 2 3; do
	run ringlb backend add "$VIP" "b$i" "$(topo_backend_addr4 "$i")" --weight "$i"
done
run ringlb show

say "600 real HTTP connections from c1 (each a new flow)"
distribution 600 1

say "A slow download (256 KiB at ${SLOW_RATE%k} KiB/s) from c2, port 28000; ringlb lookup says where it goes"
DRAINED=$(ringlb lookup "$VIP" "$(topo_client_addr4 2):28000")
echo "   c2:28000 -> $DRAINED"
ip netns exec "${P}c2" curl -s -m 60 --local-port 28000 "http://$TOPO_VIP4/slow" -o "$W/slow" \
	-w '%{http_code} %{size_download}' >"$W/slow.res" &
SLOW=$!
sleep 2

say "Drain $DRAINED while the download runs"
run ringlb backend drain "$VIP" "$DRAINED"
run ringlb show
say "300 new connections after the drain: none reach $DRAINED"
distribution 300 1
run ringlb stats

say "Waiting for the download to finish on $DRAINED"
wait $SLOW
echo "   HTTP status and bytes: $(cat "$W/slow.res"); bytes not from $DRAINED: $(tr -d "${DRAINED#b}" <"$W/slow" | wc -c)"
sleep 4
say "Live flows: a packet in the last --idle seconds (closing connections count until then)"
run ringlb stats --idle 3
say "Live flows of $DRAINED are 0: take it out"
run ringlb backend remove "$VIP" "$DRAINED"
run ringlb show
say "Tearing down"
