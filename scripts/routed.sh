#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The routed test network: backends are not on the balancer's segment, so
# the balancer encapsulates (IPIP or GUE) and the backends run ringlb's
# decap program. Every namespace is named with a prefix; MTU 1500 on every
# link. Source it for routed_up/routed_down.
#
#   ${P}c1   eth0 198.18.10.2/24 2001:db8:10::2/64        the client, default via r1
#   ${P}r1   eth0 .10.1 (client)  eth1 .11.1 (balancer)  eth2 .12.1 (to r2)
#            routes the VIPs to the balancer, the backend subnets to r2
#   ${P}lb   eth0 198.18.11.2/24 2001:db8:11::2/64         one arm, default via r1
#            eth1 198.18.15.2/24 2001:db8:15::2/64         the second arm, to r2,
#                                                          up only in routed_two_armed
#   ${P}r2   eth0 .12.2 (to r1)  br0 .13.1 (subnet A)  eth3 .14.1 (subnet B)  eth4 .15.1
#   ${P}bI   subnet A (I = 1, 2): 198.18.13.1I 2001:db8:13::1I
#            subnet B (I = 3):    198.18.14.13 2001:db8:14::13
#            the VIPs on lo (198.18.20.100 and .101, 2001:db8:20::100 and ::101),
#            nginx (GET, PUT into up/, /slow: 256 KiB at 64 KiB/s), dnsmasq
#            answering who.test with 198.18.99.I
#
# Run the controller in ${P}lb and ${P}bI with nsenter --net=/run/netns/NS.

. "$(dirname "${BASH_SOURCE[0]}")/netns.sh"

ROUTED_VIP4=198.18.20.100
ROUTED_VIP6=2001:db8:20::100
# Second VIPs, so each family has one VIP per encapsulation.
ROUTED_VIP4B=198.18.20.101
ROUTED_VIP6B=2001:db8:20::101
ROUTED_LB4=198.18.11.2
ROUTED_LB6=2001:db8:11::2
ROUTED_CLIENT4=198.18.10.2
ROUTED_CLIENT6=2001:db8:10::2

routed_backend4() { [ "$1" -le 2 ] && echo "198.18.13.1$1" || echo "198.18.14.1$1"; }
routed_backend6() { [ "$1" -le 2 ] && echo "2001:db8:13::1$1" || echo "2001:db8:14::1$1"; }

# routed_veth NS_A IF_A NS_B IF_B: a link between two namespaces.
routed_veth() {
	ip -n "$1" link add "$2" type veth peer name "$4" netns "$3"
	ip -n "$1" link set "$2" up
	ip -n "$3" link set "$4" up
}

# routed_ns NAME: a namespace with loopback up, no DAD, forwarding as asked.
routed_ns() {
	ip netns add "$1"
	ip -n "$1" link set lo up
	ip netns exec "$1" sysctl -qw net.ipv6.conf.all.accept_dad=0 \
		net.ipv6.conf.default.accept_dad=0 net.ipv4.conf.all.rp_filter=0 \
		net.ipv4.conf.default.rp_filter=0
}

routed_router() {
	ip netns exec "$1" sysctl -qw net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1
}

# routed_addr NS IF ADDR4/LEN ADDR6/LEN
routed_addr() {
	ip -n "$1" addr add "$3" dev "$2"
	ip -n "$1" -6 addr add "$4" dev "$2" nodad
}

# routed_backend_servers I: nginx (GET, and PUT into up/) and dnsmasq on backend I.
routed_backend_servers() {
	local i=$1 dir=$ROUTED_WORKDIR ns="${ROUTED_PREFIX}b$1"
	mkdir -p "$dir/b$i/up" "$dir/b$i/tmp"
	head -c 262144 /dev/zero | tr '\0' "$i" >"$dir/b$i/slow"
	cat >"$dir/b$i/nginx.conf" <<EOF
user root;
worker_processes 1;
pid $dir/b$i/nginx.pid;
error_log $dir/b$i/nginx.err;
events { worker_connections 1024; }
http {
	access_log off;
	default_type text/plain;
	client_body_temp_path $dir/b$i/tmp;
	proxy_temp_path $dir/b$i/tmp;
	fastcgi_temp_path $dir/b$i/tmp;
	uwsgi_temp_path $dir/b$i/tmp;
	scgi_temp_path $dir/b$i/tmp;
	server {
		listen 80 backlog=4096;
		listen [::]:80 backlog=4096;
		location /up/ { root $dir/b$i; dav_methods PUT; client_max_body_size 16m; }
		location = /slow { alias $dir/b$i/slow; limit_rate 64k; }
		location / { return 200 "b$i\n"; }
	}
}
EOF
	ip netns exec "$ns" nginx -c "$dir/b$i/nginx.conf"
	ip netns exec "$ns" dnsmasq --conf-file=/dev/null --pid-file="$dir/b$i/dnsmasq.pid" \
		--listen-address="$ROUTED_VIP4" --listen-address="$ROUTED_VIP4B" --bind-interfaces --port=53 --no-resolv --no-hosts \
		--host-record="who.test,198.18.99.$i"
}

# routed_up PREFIX WORKDIR: the network above, with three backends.
routed_up() {
	ROUTED_PREFIX=$1 ROUTED_WORKDIR=$2
	local p=$1 i here
	here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

	for ns in c1 r1 lb r2 b1 b2 b3; do routed_ns "$p$ns"; done
	routed_router "${p}r1"
	routed_router "${p}r2"
	# The balancer's FIB lookup answers only on interfaces that forward.
	routed_router "${p}lb"

	routed_veth "${p}c1" eth0 "${p}r1" eth0
	routed_addr "${p}c1" eth0 198.18.10.2/24 2001:db8:10::2/64
	routed_addr "${p}r1" eth0 198.18.10.1/24 2001:db8:10::1/64
	ip -n "${p}c1" route add default via 198.18.10.1
	ip -n "${p}c1" -6 route add default via 2001:db8:10::1
	# The client's frames cross the balancer's XDP: real checksums, and one flow one path.
	ip netns exec "${p}c1" ethtool -K eth0 tx off >/dev/null

	routed_veth "${p}r1" eth1 "${p}lb" eth0
	routed_addr "${p}r1" eth1 198.18.11.1/24 2001:db8:11::1/64
	routed_addr "${p}lb" eth0 198.18.11.2/24 2001:db8:11::2/64
	ip -n "${p}lb" route add default via 198.18.11.1
	ip -n "${p}lb" -6 route add default via 2001:db8:11::1
	# Native XDP_TX and redirects into a veth need an XDP program on its peer.
	ip -n "${p}r1" link set dev eth1 xdp obj "$here/build/xdp_pass.bpf.o" sec xdp program xdp_pass
	for vip in "$ROUTED_VIP4" "$ROUTED_VIP4B"; do
		ip -n "${p}r1" route add "$vip/32" via 198.18.11.2
	done
	for vip in "$ROUTED_VIP6" "$ROUTED_VIP6B"; do
		ip -n "${p}r1" -6 route add "$vip/128" via 2001:db8:11::2
	done

	routed_veth "${p}r1" eth2 "${p}r2" eth0
	routed_addr "${p}r1" eth2 198.18.12.1/24 2001:db8:12::1/64
	routed_addr "${p}r2" eth0 198.18.12.2/24 2001:db8:12::2/64
	ip -n "${p}r1" route add 198.18.13.0/24 via 198.18.12.2
	ip -n "${p}r1" route add 198.18.14.0/24 via 198.18.12.2
	ip -n "${p}r1" -6 route add 2001:db8:13::/64 via 2001:db8:12::2
	ip -n "${p}r1" -6 route add 2001:db8:14::/64 via 2001:db8:12::2
	ip -n "${p}r2" route add default via 198.18.12.1
	ip -n "${p}r2" -6 route add default via 2001:db8:12::1

	# Subnet A: a bridge in r2 with backends 1 and 2; subnet B: backend 3 alone.
	ip -n "${p}r2" link add br0 type bridge
	ip -n "${p}r2" link set br0 up
	ip netns exec "${p}r2" sh -c 'for f in /proc/sys/net/bridge/bridge-nf-call-*; do
		[ -e "$f" ] && echo 0 >"$f"; done; true'
	routed_addr "${p}r2" br0 198.18.13.1/24 2001:db8:13::1/64
	for i in 1 2; do
		routed_veth "${p}r2" "a$i" "${p}b$i" eth0
		ip -n "${p}r2" link set "a$i" master br0
	done
	routed_veth "${p}r2" eth3 "${p}b3" eth0
	routed_addr "${p}r2" eth3 198.18.14.1/24 2001:db8:14::1/64
	# A backend's decap program sends hop-list packets on with XDP_TX.
	for dev in a1 a2 eth3; do
		ip -n "${p}r2" link set dev "$dev" xdp obj "$here/build/xdp_pass.bpf.o" sec xdp \
			program xdp_pass
	done
	for i in 1 2 3; do
		routed_addr "${p}b$i" eth0 "$(routed_backend4 "$i")/24" "$(routed_backend6 "$i")/64"
		if [ "$i" -le 2 ]; then
			ip -n "${p}b$i" route add default via 198.18.13.1
			ip -n "${p}b$i" -6 route add default via 2001:db8:13::1
		else
			ip -n "${p}b$i" route add default via 198.18.14.1
			ip -n "${p}b$i" -6 route add default via 2001:db8:14::1
		fi
		# The FIB answers the decap program's second chance only where forwarding is on.
		ip netns exec "${p}b$i" sysctl -qw net.ipv4.conf.eth0.forwarding=1 \
			net.ipv6.conf.eth0.forwarding=1
		ip -n "${p}b$i" addr add "$ROUTED_VIP4/32" dev lo
		ip -n "${p}b$i" addr add "$ROUTED_VIP4B/32" dev lo
		ip -n "${p}b$i" -6 addr add "$ROUTED_VIP6/128" dev lo nodad
		ip -n "${p}b$i" -6 addr add "$ROUTED_VIP6B/128" dev lo nodad
		routed_backend_servers "$i"
	done
}

# routed_two_armed: the balancer's second arm, and the backend subnets routed through it.
routed_two_armed() {
	local p=$ROUTED_PREFIX here
	here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
	routed_veth "${p}lb" eth1 "${p}r2" eth4
	routed_addr "${p}lb" eth1 198.18.15.2/24 2001:db8:15::2/64
	routed_addr "${p}r2" eth4 198.18.15.1/24 2001:db8:15::1/64
	ip -n "${p}r2" link set dev eth4 xdp obj "$here/build/xdp_pass.bpf.o" sec xdp program xdp_pass
	for net in 198.18.13.0/24 198.18.14.0/24; do
		ip -n "${p}lb" route add "$net" via 198.18.15.1
	done
	for net in 2001:db8:13::/64 2001:db8:14::/64; do
		ip -n "${p}lb" -6 route add "$net" via 2001:db8:15::1
	done
}

# routed_down PREFIX WORKDIR: stop the servers and remove every namespace.
routed_down() {
	local dir=$2
	netns_down "$1" "$dir"/b*/nginx.pid "$dir"/b*/dnsmasq.pid
}
