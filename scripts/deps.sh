#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# Install the Debian 12 packages ringlb builds, tests and demos with, when they
# are missing. Idempotent: a machine that has them all is left alone, without
# touching the network. `make test`, `make demo` and `make bench` call this.
set -eu

# Build: clang's BPF target, libbpf + bpftool for skeletons, jansson for the
# state file, libmnl for neighbour lookups, libcap for privilege checks.
# Tests: cmocka, iproute2 and ethtool for namespace topologies,
# nginx-light as a real backend, curl as a real client, jq to read --json
# output (the suites run its language through gojq, which starts in 2 ms
# where jq 1.6 takes 23), netsniff-ng's trafgen as a packet generator,
# valgrind for the CLI, python3-scapy to send a forged TCP reset, dnsmasq
# and dig as a real UDP service and client. The daemon: libmicrohttpd for /metrics, libsystemd for
# sd_notify; its tests: prometheus (the server and promtool), systemd
# (systemd-analyze), bc. The store: libcurl and libssl (base64) for etcd's
# JSON gateway; its tests: etcd-server and etcd-client, openssl for their
# CA and certificates. libinih for the configuration file. The fleet: bird2.
# The package: scdoc for the man pages, debhelper, dpkg-dev and fakeroot to
# build the .deb, lintian to check it, man-db to read the pages,
# bash-completion for the completion's test; the ring pictures: chromium
# (headless) renders them and python3-pil counts their pixels. QUIC: Debian's
# ngtcp2 client (gtlsclient) against our test server on libngtcp2, nghttp3 and
# GnuTLS.
PACKAGES="make gcc clang clang-16 llvm libbpf-dev bpftool libelf-dev zlib1g-dev \
libjansson-dev libmnl-dev libcap-dev libcmocka-dev libclang-rt-14-dev iproute2 ethtool \
nginx-light curl jq gojq netsniff-ng util-linux valgrind python3 python3-scapy \
dnsmasq-base bind9-dnsutils libmicrohttpd-dev libsystemd-dev prometheus systemd bc libcurl4-openssl-dev libssl-dev \
libinih-dev etcd-server etcd-client openssl bird2 \
scdoc debhelper dpkg-dev fakeroot lintian man-db bash-completion chromium python3-pil \
ngtcp2-client libngtcp2-dev libngtcp2-crypto-gnutls-dev libnghttp3-dev libgnutls28-dev"

missing=""
for pkg in $PACKAGES; do
	if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
		missing="$missing $pkg"
	fi
done

if [ -z "$missing" ]; then
	exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
	echo "deps.sh: missing Debian packages:$missing; run as root or install them" >&2
	exit 1
fi

echo "deps.sh: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -q >/dev/null
# shellcheck disable=SC2086
apt-get install -y -q --no-install-recommends $missing >/dev/null
