#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The test network: one bridge, one load balancer, N backends, 2 clients,
# each in its own network namespace, all named with a prefix so parallel
# runs never collide. Source it for the topo_* functions, or run
#   scripts/topology.sh up PREFIX WORKDIR [BACKENDS]   /   down PREFIX WORKDIR
#
#   ${P}sw   bridge br0 (bridge netfilter off: it would drop frames we test)
#   ${P}lb   eth0 198.18.0.2/24 2001:db8::2/64         (ringlb attaches here)
#   ${P}bI   eth0 198.18.0.1I/24 2001:db8::1I/64, the VIPs on lo, nginx
#   ${P}cJ   eth0 198.18.0.2J/24 2001:db8::2J/64, routes to the VIPs via the LB
#
# Backends run nginx answering "bI" on / and slow bodies of "I"s on /slow
# (256 KiB) and /slower (1 MiB) at 16 KiB/s (/slow's rate: TOPO_SLOW_RATE, in
# nginx's words, 16k unless set), so a connection can be held open
# across a drain or a run of changes; /held is /slower's body at full speed,
# for a client that holds the connection open itself (tests/tools/heldget.py).
# Run the controller in ${P}lb with: nsenter --net=/run/netns/${P}lb ringlb ...
# (ip netns exec remounts /sys and would hide /sys/fs/bpf; see DESIGN.md).

. "$(dirname "${BASH_SOURCE[0]}")/netns.sh"

TOPO_VIP4=198.18.0.100
TOPO_VIP6=2001:db8::100
TOPO_LB4=198.18.0.2
TOPO_LB6=2001:db8::2

topo_backend_addr4() { echo "198.18.0.$((10 + $1))"; }
topo_backend_addr6() { echo "2001:db8::$((10 + $1))"; }
topo_client_addr4() { echo "198.18.0.$((20 + $1))"; }
topo_client_addr6() { echo "2001:db8::$((20 + $1))"; }

# Fixed MACs, so benchmarks can address frames without asking: 02:00:00:00:00:HH.
TOPO_LB_MAC=02:00:00:00:00:02
topo_backend_mac() { printf '02:00:00:00:00:%02x' $((0x10 + $1)); }
topo_client_mac() { printf '02:00:00:00:00:%02x' $((0x20 + $1)); }

# topo_link NS PEER ADDR4 ADDR6 MAC: a host's eth0, plugged into the bridge as PEER.
topo_link() {
	local p=$TOPO_PREFIX ns=$1 peer=$2
	ip netns add "$ns"
	ip -n "${p}sw" link add "$peer" type veth peer name eth0 netns "$ns"
	ip -n "$ns" link set eth0 address "$5"
	ip -n "${p}sw" link set "$peer" master br0 up
	ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.accept_dad=0
	ip -n "$ns" link set lo up
	ip -n "$ns" link set eth0 up
	ip -n "$ns" addr add "$3/24" dev eth0
	ip -n "$ns" -6 addr add "$4/64" dev eth0 nodad
}

# topo_nginx I: start backend I's nginx.
topo_nginx() {
	local i=$1 dir=$TOPO_WORKDIR
	head -c 262144 /dev/zero | tr '\0' "$i" >"$dir/slow-b$i"
	head -c 1048576 /dev/zero | tr '\0' "$i" >"$dir/slower-b$i"
	cat >"$dir/nginx-b$i.conf" <<EOF
user root;
worker_processes 1;
pid $dir/nginx-b$i.pid;
error_log $dir/nginx-b$i.err;
events { worker_connections 1024; }
http {
	access_log off;
	default_type text/plain;
	client_body_temp_path $dir/nginx-b$i.tmp;
	proxy_temp_path $dir/nginx-b$i.tmp;
	fastcgi_temp_path $dir/nginx-b$i.tmp;
	uwsgi_temp_path $dir/nginx-b$i.tmp;
	scgi_temp_path $dir/nginx-b$i.tmp;
	server {
		listen 80 backlog=4096;
		listen [::]:80 backlog=4096;
		location = /slow { alias $dir/slow-b$i; limit_rate ${TOPO_SLOW_RATE:-16k}; }
		location = /slower { alias $dir/slower-b$i; limit_rate 16k; }
		location = /held { alias $dir/slower-b$i; }
		location / { return 200 "b$i\n"; }
	}
}
EOF
	ip netns exec "${TOPO_PREFIX}b$i" nginx -c "$dir/nginx-b$i.conf"
}

# topo_up PREFIX WORKDIR [BACKENDS]
topo_up() {
	TOPO_PREFIX=$1 TOPO_WORKDIR=$2
	local n=${3:-3} p=$1 i
	local here
	here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

	ip netns add "${p}sw"
	ip -n "${p}sw" link add br0 type bridge
	ip -n "${p}sw" link set br0 up
	# br_netfilter is built in here: keep it away from bridged test frames.
	ip netns exec "${p}sw" sh -c 'for f in /proc/sys/net/bridge/bridge-nf-call-*; do
		[ -e "$f" ] && echo 0 >"$f"; done; true'

	topo_link "${p}lb" p-lb "$TOPO_LB4" "$TOPO_LB6" "$TOPO_LB_MAC"
	# Native XDP_TX on a veth needs an XDP program on the peer.
	ip -n "${p}sw" link set dev p-lb xdp obj "$here/build/xdp_pass.bpf.o" sec xdp program xdp_pass

	for i in $(seq 1 "$n"); do
		topo_link "${p}b$i" "p-b$i" "$(topo_backend_addr4 "$i")" "$(topo_backend_addr6 "$i")" \
			"$(topo_backend_mac "$i")"
		ip -n "${p}b$i" addr add "$TOPO_VIP4/32" dev lo
		ip -n "${p}b$i" -6 addr add "$TOPO_VIP6/128" dev lo nodad
		# Direct server return: hold the VIP, but never answer ARP for it.
		ip netns exec "${p}b$i" sysctl -qw net.ipv4.conf.all.arp_ignore=1 \
			net.ipv4.conf.all.arp_announce=2 net.ipv4.conf.all.rp_filter=0 \
			net.ipv4.conf.eth0.rp_filter=0
		topo_nginx "$i"
	done
	for i in 1 2; do
		topo_link "${p}c$i" "p-c$i" "$(topo_client_addr4 "$i")" "$(topo_client_addr6 "$i")" \
			"$(topo_client_mac "$i")"
		ip -n "${p}c$i" route add "$TOPO_VIP4/32" via "$TOPO_LB4"
		ip -n "${p}c$i" -6 route add "$TOPO_VIP6/128" via "$TOPO_LB6"
		# Frames the balancer forwards must carry real checksums (DESIGN.md).
		ip netns exec "${p}c$i" ethtool -K eth0 tx off >/dev/null
	done
}

# topo_down PREFIX WORKDIR: stop the servers and remove every namespace.
topo_down() {
	local dir=$2
	netns_down "$1" "$dir"/nginx-b*.pid
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	set -eu
	case "${1:-}" in
	up) topo_up "$2" "$3" "${4:-3}" ;;
	down) topo_down "$2" "$3" ;;
	*) echo "usage: $0 up PREFIX WORKDIR [BACKENDS] | down PREFIX WORKDIR" >&2; exit 2 ;;
	esac
fi
