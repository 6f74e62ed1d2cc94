#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The daemon's status page (GET / beside /metrics), on the l2 topology with
# nginx backends, curl and trafgen clients, rendered by a real browser
# (Debian's chromium, headless) and measured in its pixels
# (tests/tools/statuschart.py). The daemon samples every second
# (--sample-interval 1). Its tests (tests/suites/lib.sh runs them;
# `status.sh TEST...` runs some):
#
#   page        GET / is HTML, whole in itself: no script, nothing it would
#               fetch (no src, href, url(), @import), a Content-Security-Policy
#               that forbids fetching; each VIP has its three charts, each with
#               its alert's threshold from the rules file; the backends' table
#               (state, health, weight, share) and the ring's picture; other
#               paths 404, other methods 405
#   doors       the page is behind /metrics' doors: with 8 connections open
#               from one address, a ninth is refused and counted (client_limit)
#   throughput  under a curl load the first VIP's throughput line, in the
#               screenshot, rises from the bottom of its plot, and the
#               threshold line is drawn at the row the page puts it
#   drops       SYNs to a VIP with no backend: drop_no_backend appears in the
#               drop chart's legend above the alert's threshold, and its colour
#               in the chart's plot in the screenshot; the flow table's
#               threshold line (90 %) is drawn in the resources chart
#   bad_use     --sample-interval 0 and past its range refused in one line
#
# Needs root. Without it the script skips, except under CI=true. KEEP=DIR
# keeps the pages and screenshots there.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/suites/lib.sh"
. "$ROOT/scripts/topology.sh"

require_root status

# The suite works in its scratch directory: a relative KEEP is the caller's.
[ -z "${KEEP:-}" ] || KEEP=$(realpath -m -- "$KEEP")
topo_session status rsp
trap '[ -n "${KEEP:-}" ] && cp "$W"/*.html "$W"/*.png "$KEEP"
	kill $(jobs -p) 2>/dev/null; topo_down "$P" "$W"; rm -rf "$PIN" "$W"' EXIT
TOOLS=$ROOT/tests/tools

VIP="$TOPO_VIP4:80/tcp"       # two nginx backends: the load goes here
EMPTY="$TOPO_VIP4:81/tcp"     # no backend: its SYNs drop as drop_no_backend
METRICS=127.0.0.1:9478
BASE=http://$METRICS

in_lb() { nsenter --net="/run/netns/$RINGLB_NS" "$@"; }

# rule NAME: the threshold build/alerts.h has from the rules file.
rule() { sed -n "s/^#define $1 \(.*\)$/\1/p" "$ROOT/build/alerts.h"; }

# snapshot NAME: the page into $W/NAME.html, and Chromium's screenshot of it in $W/NAME.png.
snapshot() {
	in_lb curl -s -m 5 -o "$W/$1.html" "$BASE/" || return 1
	chromium --headless --no-sandbox --disable-gpu --hide-scrollbars \
		--user-data-dir="$W/chromium" --window-size=1400,1000 \
		--screenshot="$W/$1.png" "file://$W/$1.html" >"$W/$1.chromium" 2>&1
}

setup() {
	local i
	topo_up "$P" "$W" 2 || die "topology"
	ringlb attach eth0 >/dev/null || die "attach"
	ringlb vip add "$VIP" --check none >/dev/null && ringlb vip add "$EMPTY" --check none \
		>/dev/null || die "vip add"
	for i in 1 2; do
		ringlb backend add "$VIP" "b$i" "$(topo_backend_addr4 "$i")" --weight "$i" \
			>/dev/null || die "backend b$i"
	done
	nsenter --net="/run/netns/$RINGLB_NS" "$ROOT/build/ringlb" --state "$W/state.json" \
		--pin-dir "$PIN" daemon --metrics "$METRICS" --metrics-deadline 3 \
		--sample-interval 1 >>"$W/daemon.log" 2>&1 &
	DPID=$!
	for i in $(seq 1 250); do
		grep -q 'ready: serving' "$W/daemon.log" && return 0
		kill -0 "$DPID" 2>/dev/null || break
		sleep 0.02
	done
	die "the daemon did not start: $(tail -3 "$W/daemon.log")"
}

t_page() {
	local headers bad n
	headers=$(in_lb curl -s -m 5 -D - -o "$W/page.html" "$BASE/")
	grep -qi '^content-type: text/html; charset=utf-8' <<<"$headers" &&
		grep -qi "^content-security-policy: default-src 'none'" <<<"$headers" &&
		pass "GET / is text/html, with a Content-Security-Policy that lets it fetch nothing" ||
		fail "GET / headers: $(tr -d '\r' <<<"$headers" | tr '\n' '|')"
	bad=$(grep -oiE '<script|<link|<img|<iframe|<object|<embed|(src|href)=|url\(|@import|@font-face' \
		"$W/page.html" | sort -u | tr '\n' ' ')
	[ -z "$bad" ] && pass "the page has no script and refers to nothing outside itself" ||
		fail "the page holds: $bad"
	n=$(grep -c '<section class="vip"' "$W/page.html")
	[ "$n" -eq 2 ] && [ "$(grep -c '<figure class="chart' "$W/page.html")" -eq 6 ] &&
		[ "$(grep -c '<line class="threshold"' "$W/page.html")" -eq 6 ] &&
		pass "2 VIPs, each with its three charts, each chart with its threshold line" ||
		fail "$n VIP sections, $(grep -c '<figure class="chart' "$W/page.html") charts, $(grep -c '<line class="threshold"' "$W/page.html") threshold lines (want 2, 6, 6)"
	# Each chart's threshold is its alert's, as the rules file says.
	/usr/bin/python3 - "$W/page.html" "$(rule ALERT_IMBALANCE_MIN_PACKETS_PER_S)" \
		"$(rule ALERT_DROPS_PER_S)" "$(rule ALERT_FLOW_TABLE_RATIO)" \
		"$ROOT/scripts/prometheus/ringlb.rules.yml" <<'PYEOF' &&
import re, sys
html, pps, drops, ratio, rules = sys.argv[1], *map(float, sys.argv[2:5]), sys.argv[5]
text = open(rules).read()
# The numbers build/alerts.h holds are the rules file's.
for alert, piece, want in (("RinglbBackendImbalance", "rate(ringlb_vip_packets_total[10m])) >", pps),
                           ("RinglbDropsRising", "[5m])) >", drops),
                           ("RinglbFlowTableFull", "ringlb_flow_table_capacity >", ratio)):
    rule = text[text.index("alert: " + alert):]
    rule = rule[:rule.index("annotations")]
    got = float(re.search(re.escape(piece) + r"\s*([0-9.]+)", rule).group(1))
    if got != want:
        sys.exit("%s: rules say %g, build/alerts.h %g" % (alert, got, want))
page = open(html).read()
for kind, want in (("throughput", pps), ("drops", drops), ("resources", ratio * 100)):
    for fig in re.findall(r'<figure class="chart %s">.*?</figure>' % kind, page, re.S):
        got = float(re.search(r'<line class="threshold" data-value="([0-9.e+-]+)"', fig).group(1))
        if got != want:
            sys.exit("%s chart: threshold %g, want %g" % (kind, got, want))
PYEOF
	pass "thresholds as the rules file has them: $(rule ALERT_IMBALANCE_MIN_PACKETS_PER_S) packets/s, $(rule ALERT_DROPS_PER_S) drops/s, $(rule ALERT_FLOW_TABLE_RATIO) of the flow table" ||
		fail "thresholds: see above"
	# The backends' table: name, address, state, health, weight, share.
	grep -q '<tr><td>b2</td><td>198.18.0.12</td><td>active</td><td>unchecked</td><td class="n">2</td><td class="n">6[0-9].[0-9][0-9]%</td></tr>' "$W/page.html" &&
		grep -q 'no backends: every new flow is dropped' "$W/page.html" &&
		[ "$(grep -c '<div class="ring"><svg' "$W/page.html")" -eq 2 ] &&
		pass "the backends with state, health, weight and share; the ring's picture of each VIP" ||
		fail "backends or ring: $(grep -o '<tr><td>b2</td>[^\n]*</tr>' "$W/page.html")"
	[ "$(in_lb curl -s -o /dev/null -w '%{http_code}' "$BASE/other")" = 404 ] &&
		[ "$(in_lb curl -s -o /dev/null -w '%{http_code}' -X POST "$BASE/")" = 405 ] &&
		pass "other paths 404, POST / 405" || fail "other paths or methods answered"
}

t_doors() {
	local pids=() k code before
	refused() { in_lb curl -s -m 5 "$BASE/metrics" |
		sed -n 's/^ringlb_metrics_connections_refused_total{why="client_limit"} //p'; }
	before=$(refused)
	# Eight connections that send nothing hold the address' doors (--metrics-deadline 3 s).
	for k in 1 2 3 4 5 6 7 8; do
		in_lb bash -c 'exec 3<>/dev/tcp/127.0.0.1/9478 && sleep 2' 2>/dev/null &
		pids+=($!)
	done
	sleep 0.5
	code=$(in_lb curl -s -m 1 -o /dev/null -w '%{http_code}' "$BASE/")
	wait "${pids[@]}" 2>/dev/null
	if [ "$code" = 000 ] && [ "$(refused)" -gt "$before" ]; then
		pass "GET / with 8 connections open from its address: refused, counted as client_limit ($before -> $(refused))"
	else
		fail "GET / with 8 connections open: HTTP $code, client_limit $before -> $(refused)"
	fi
	[ "$(in_lb curl -s -m 5 -o /dev/null -w '%{http_code}' "$BASE/")" = 200 ] &&
		pass "once they are gone, GET / is answered" || fail "GET / after the doors freed"
}

t_throughput() {
	local out rate rows want
	# Three idle samples at least, then a load for 8 s, the page read during it.
	sleep 3
	on_client 1 timeout 12 curl -s -Z --parallel-max 16 -m 2 "http://$TOPO_VIP4/[1-1000000]" \
		>/dev/null 2>&1 &
	sleep 8
	snapshot load || { fail "screenshot: $(tail -2 "$W/load.chromium")"; return; }
	kill %% 2>/dev/null
	out=$("$TOOLS/statuschart.py" "$W/load.html" "$W/load.png" throughput packets)
	rate=$(sed -n 's|.*<li data-name="packets"[^>]*>.*packets: <b>\([^<]*\)</b>.*|\1|p' "$W/load.html" |
		head -1 | sed 's/k$/e3/; s/M$/e6/')
	# The browser draws the line where the page says (within 3 px), and that rises:
	# idle at the first point, at the load's rate (above the threshold) at the last.
	if jq -e --argjson min "$(rule ALERT_IMBALANCE_MIN_PACKETS_PER_S)" --argjson rate "${rate:-0}" '
		.series.packets | .first != null and (.first - .want_first | fabs) <= 3 and
		(.last - .want_last | fabs) <= 3 and .want_first <= 3 and
		.want_last >= .want_first + 10 and $rate > $min' <<<"$out" >/dev/null; then
		pass "throughput: the packets line rises under load, drawn from $(jq .series.packets.first <<<"$out") px above the plot's bottom to $(jq .series.packets.last <<<"$out") px (the page: $(jq .series.packets.want_first <<<"$out") and $(jq .series.packets.want_last <<<"$out")), last rate ${rate}/s"
	else
		fail "throughput: want a line from the bottom (<= 3 px) rising by 10 px or more, drawn within 3 px of the page's points, at a rate over $(rule ALERT_IMBALANCE_MIN_PACKETS_PER_S)/s; got rate ${rate}/s, $(jq -c .series.packets <<<"$out")"
	fi
	want=$(jq '.threshold.want_row' <<<"$out")
	rows=$(jq -c '.threshold.rows' <<<"$out")
	jq -e --argjson w "$want" '.threshold.rows | any(. >= $w - 2 and . <= $w + 1)' <<<"$out" >/dev/null &&
		pass "throughput: the threshold line ($(rule ALERT_IMBALANCE_MIN_PACKETS_PER_S) packets/s) is drawn at row $want (red rows $rows)" ||
		fail "throughput: no threshold line at row $want: red rows $rows"
}

t_drops() {
	local c1mac out pixels rate
	c1mac=$(ip -n "${P}c1" -j link show eth0 | jq -r '.[0].address')
	printf '{ eth(da=%s, sa=%s, type=0x0800),\n  ipv4(sa=%s, da=%s, ttl=64),\n  tcp(sp=drnd(), dp=81, syn) }\n' \
		"$TOPO_LB_MAC" "$c1mac" "$(topo_client_addr4 1)" "$TOPO_VIP4" >"$W/syn.trafgen"
	# The page is read while the SYNs still come: its last rate is theirs.
	on_client 1 timeout 8 env -C "$W" trafgen -o eth0 -c "$W/syn.trafgen" -n 6000 -t 1ms --cpus 1 -q \
		>/dev/null 2>&1 &
	sleep 3
	snapshot drops || { fail "screenshot: $(tail -2 "$W/drops.chromium")"; return; }
	wait $!
	rate=$(sed -n 's|.*<li data-name="drop_no_backend"[^>]*>.*drop_no_backend: <b>\([^<]*\)</b>.*|\1|p' \
		"$W/drops.html" | head -1)
	awk -v r="${rate:-0}" -v t="$(rule ALERT_DROPS_PER_S)" 'BEGIN { exit !(r + 0 > t + 0) }' &&
		pass "drops: drop_no_backend in the drop chart's legend at ${rate}/s, above the alert's $(rule ALERT_DROPS_PER_S)/s" ||
		fail "drops: drop_no_backend at '${rate}'/s in the legend: $(grep -o '<li data-name="drop_[^"]*"' "$W/drops.html" | sort -u | tr '\n' ' ')"
	out=$("$TOOLS/statuschart.py" "$W/drops.html" "$W/drops.png" drops drop_no_backend)
	pixels=$(jq '.series.drop_no_backend.pixels' <<<"$out")
	[ "$pixels" -ge 20 ] &&
		pass "drops: drop_no_backend's colour $(jq -r '.series.drop_no_backend.colour' <<<"$out") drawn in the drop chart ($pixels px)" ||
		fail "drops: drop_no_backend drawn in $pixels px: $out"
	out=$("$TOOLS/statuschart.py" "$W/drops.html" "$W/drops.png" resources)
	jq -e '.threshold.want_row as $w | .threshold.rows | any(. >= $w - 2 and . <= $w + 1)' <<<"$out" >/dev/null &&
		pass "resources: the flow table's threshold line drawn at row $(jq .threshold.want_row <<<"$out")" ||
		fail "resources: threshold line: $out"
}

t_bad_use() {
	local v out rc
	for v in 0 3601 ten; do
		out=$(ringlb daemon --metrics none --sample-interval "$v" 2>&1)
		rc=$?
		[ "$rc" -eq 2 ] && [ "$(wc -l <<<"$out")" -eq 1 ] &&
			pass "daemon --sample-interval $v refused, exit 2: $out" ||
			fail "daemon --sample-interval $v: exit $rc, '$out'"
	done
}

suite_test page
suite_test doors
suite_test throughput
suite_test drops
suite_test bad_use
suite_main "$@"
