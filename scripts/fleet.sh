#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# A fleet of balancer hosts in network namespaces, sourced by tests/suites/fleet.sh:
#
#   c1 (198.18.10.2) -- r1 -- balancer segment 198.18.20.0/24 (a bridge in r1):
#                             lb1 .11, lb2 .12, lb3 .13, etcd .5
#                       r1 -- backend segment 198.18.30.0/24 (a bridge in r1):
#                             b1 .11, b2 .12, b3 .13 (nginx, ringlb's decap)
#
# r1 routes between them and learns the VIPs (198.18.100.0/24) by BGP from
# every balancer (bird2, AS 65000 against 65011 .. 65013), installing one
# multipath route with a layer-4 hash. Each balancer runs bird2 with the
# routes ringlb's daemon writes (scripts/bird/balancer.conf).

. "$(dirname "${BASH_SOURCE[0]}")/netns.sh"

FLEET_VIP=198.18.100.1
fleet_lb() { echo "198.18.20.1$1"; }
fleet_backend() { echo "198.18.30.1$1"; }

# fleet_link NS IFACE BRIDGE_PORT BRIDGE ADDR/LEN: NS's IFACE on r1's BRIDGE.
fleet_link() {
	local p=$FLEET_PREFIX
	ip -n "${p}r1" link add "$3" type veth peer name "$2" netns "$p$1"
	ip -n "${p}r1" link set "$3" master "$4" up
	ip -n "$p$1" link set "$2" up
	ip -n "$p$1" addr add "$5" dev "$2"
}

# fleet_nginx I: nginx on backend I: / says its name, /long is 512 KiB of its digit at 32 KiB/s.
fleet_nginx() {
	local i=$1 dir=$FLEET_WORKDIR/b$1
	mkdir -p "$dir/tmp"
	head -c 524288 /dev/zero | tr '\0' "$i" >"$dir/long"
	cat >"$dir/nginx.conf" <<EOF
user root;
worker_processes 1;
pid $dir/nginx.pid;
error_log $dir/nginx.err;
events { worker_connections 2048; }
http {
	access_log off;
	default_type text/plain;
	client_body_temp_path $dir/tmp;
	proxy_temp_path $dir/tmp;
	fastcgi_temp_path $dir/tmp;
	uwsgi_temp_path $dir/tmp;
	scgi_temp_path $dir/tmp;
	server {
		listen 80 backlog=4096;
		location = /long { alias $dir/long; limit_rate 32k; }
		location / { return 200 "b$i\n"; }
	}
}
EOF
	ip netns exec "${FLEET_PREFIX}b$i" nginx -c "$dir/nginx.conf"
}

# fleet_router_bird: r1's bird: a BGP session per balancer, their routes merged into one
# multipath route in the kernel.
fleet_router_bird() {
	local dir=$FLEET_WORKDIR/r1 i
	mkdir -p "$dir"
	{
		echo "router id 198.18.20.1;"
		echo "protocol device { scan time 1; }"
		echo "protocol kernel { ipv4 { import none; export all; }; merge paths yes; }"
		for i in 1 2 3; do
			cat <<EOF
protocol bgp lb$i {
	local 198.18.20.1 as 65000;
	neighbor $(fleet_lb "$i") as 6501$i;
	hold time 3;
	keepalive time 1;
	connect retry time 1;
	error wait time 1, 2;
	ipv4 { import all; export none; };
}
EOF
		done
	} >"$dir/bird.conf"
	ip netns exec "${FLEET_PREFIX}r1" bird -c "$dir/bird.conf" -s "$dir/bird.ctl" -P "$dir/bird.pid"
}

# fleet_balancer_bird I: balancer I's bird, from scripts/bird/balancer.conf.
fleet_balancer_bird() {
	local i=$1 dir=$FLEET_WORKDIR/lb$1 here
	here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
	sed -e "s|@ROUTER_ID@|$(fleet_lb "$i")|" -e "s|@LOCAL_AS@|6501$i|" \
		-e "s|@PEER@|198.18.20.1|" -e "s|@PEER_AS@|65000|" \
		-e "s|@ROUTES_DIR@|$dir|" "$here/scripts/bird/balancer.conf" >"$dir/bird.conf"
	ip netns exec "${FLEET_PREFIX}lb$i" bird -c "$dir/bird.conf" -s "$dir/bird.ctl" \
		-P "$dir/bird.pid"
}

# fleet_up PREFIX WORKDIR: the network above (no bird, no etcd, no ringlb yet).
fleet_up() {
	FLEET_PREFIX=$1 FLEET_WORKDIR=$2
	local p=$1 i ns here
	here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
	for ns in c1 r1 etcd lb1 lb2 lb3 b1 b2 b3; do
		ip netns add "$p$ns"
		ip -n "$p$ns" link set lo up
		ip netns exec "$p$ns" sysctl -qw net.ipv4.conf.all.rp_filter=0 \
			net.ipv4.conf.default.rp_filter=0
	done
	ip netns exec "${p}r1" sysctl -qw net.ipv4.ip_forward=1 \
		net.ipv4.fib_multipath_hash_policy=1
	for br in br20 br30; do
		ip -n "${p}r1" link add "$br" type bridge
		ip -n "${p}r1" link set "$br" up
	done
	ip netns exec "${p}r1" sh -c 'for f in /proc/sys/net/bridge/bridge-nf-call-*; do
		[ -e "$f" ] && echo 0 >"$f"; done; true'
	ip -n "${p}r1" addr add 198.18.20.1/24 dev br20
	ip -n "${p}r1" addr add 198.18.30.1/24 dev br30

	ip -n "${p}r1" link add eth0 type veth peer name eth0 netns "${p}c1"
	ip -n "${p}r1" link set eth0 up
	ip -n "${p}r1" addr add 198.18.10.1/24 dev eth0
	ip -n "${p}c1" link set eth0 up
	ip -n "${p}c1" addr add 198.18.10.2/24 dev eth0
	ip -n "${p}c1" route add default via 198.18.10.1
	# Real checksums on frames XDP forwards; one flow, one path (no rehash on retransmission).
	ip netns exec "${p}c1" ethtool -K eth0 tx off >/dev/null
	ip netns exec "${p}c1" sysctl -qw net.core.txrehash=0 net.ipv4.ip_local_port_range="20000 60999"

	fleet_link etcd eth0 p-etcd br20 198.18.20.5/24
	for i in 1 2 3; do
		fleet_link "lb$i" eth0 "p-lb$i" br20 "$(fleet_lb "$i")/24"
		ip -n "${p}lb$i" route add default via 198.18.20.1
		# The balancer's FIB lookups answer only where forwarding is on; XDP_TX back into
		# a veth needs a program on its peer.
		ip netns exec "${p}lb$i" sysctl -qw net.ipv4.conf.all.forwarding=1
		ip -n "${p}r1" link set dev "p-lb$i" xdp obj "$here/build/xdp_pass.bpf.o" sec xdp \
			program xdp_pass
		mkdir -p "$FLEET_WORKDIR/lb$i"
	done
	for i in 1 2 3; do
		fleet_link "b$i" eth0 "p-b$i" br30 "$(fleet_backend "$i")/24"
		ip -n "${p}b$i" route add default via 198.18.30.1
		ip netns exec "${p}b$i" sysctl -qw net.ipv4.conf.eth0.forwarding=1
		ip -n "${p}b$i" addr add "$FLEET_VIP/32" dev lo
		ip -n "${p}r1" link set dev "p-b$i" xdp obj "$here/build/xdp_pass.bpf.o" sec xdp \
			program xdp_pass
		fleet_nginx "$i"
	done
}

# fleet_down PREFIX WORKDIR: stop every server and remove every namespace.
fleet_down() {
	local dir=$2
	netns_down "$1" "$dir"/*/nginx.pid "$dir"/*/bird.pid
}
