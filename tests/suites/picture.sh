#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The ring as a picture: `ringlb show VIP --svg FILE` and `ringlb plan ...
# --svg FILE`, rendered by a real browser (Debian's chromium, headless) to PNG.
#   - each picture is well-formed, self-contained SVG (no script, no link,
#     nothing fetched) and renders to a PNG of its size
#   - the share of each backend's colour in each band, counted from the PNG's
#     pixels (tests/tools/svgshares.py), is within 2 percentage points of the
#     share `show --json` and `plan --json` state: the ring and the share
#     bands of show; the before and after rings of a plan, and its moves band
#     against the share that moves
#   - both ways of drawing: a ring of few points arc by arc, one of 24,576
#     points in sectors; IPv4 and IPv6 VIPs
#   - draining and down backends are marked in the legend and own no colour
#     on the circle; a backend held while its VIP fails open keeps its colour
#   - bad use: --svg without a VIP, an unknown VIP, a directory that does not
#     exist: one line, non-zero exit, no file
#
# Its tests (tests/suites/lib.sh runs them; `picture.sh TEST...` runs some), on
# one VIP of five backends (weights 1 to 5, b4 draining, b5 down) set up first:
#
#   show       the VIP's ring and share bands (24,576 points, in sectors), its
#              table still printed, draining b4 and down b5 marked
#   plan       a plan that adds a backend: after, before and moves bands
#   small      a VIP of 96 points drawn arc by arc, and a plan that removes one
#   v6         an IPv6 VIP to standard output, and a plan of a weight change
#   bad_use    five misuses refused in one line, no file written
#
# Needs root. Without it the script skips, except under CI=true.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/suites/lib.sh"

require_root picture

TEST_NAME=picture
veth_session rpic
V4=198.18.0.100:80/tcp
V6='[2001:db8::100]:53/udp'
SMALL=198.18.0.101:80/tcp

# render NAME: $W/NAME.svg to $W/NAME.png in headless Chromium (a profile of its own, in W).
render() {
	chromium --headless --no-sandbox --disable-gpu --hide-scrollbars \
		--user-data-dir="$W/chromium" --window-size=1040,700 \
		--screenshot="$W/$1.png" "file://$W/$1.svg" >"$W/$1.chromium" 2>&1
}

# well_formed NAME: the SVG parses as XML and asks for nothing outside itself.
well_formed() {
	/usr/bin/python3 - "$W/$1.svg" <<'PYEOF'
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
assert root.tag == "{http://www.w3.org/2000/svg}svg", root.tag
text = open(sys.argv[1]).read()
for bad in ("<script", "href", "url(", "@import", "<image", "<foreignObject"):
    assert bad not in text, bad
PYEOF
}

# png_size NAME: WIDTHxHEIGHT of $W/NAME.png.
png_size() { /usr/bin/python3 -c 'import sys; from PIL import Image; print("%dx%d" % Image.open(sys.argv[1]).size)' "$W/$1.png"; }

# compare NAME BAND WANT_JSON: each backend's colour share in BAND against WANT
# ({name: share}); prints the worst difference in points, fails over 2.
compare() {
	jq -n --argjson got "$(jq ".bands[\"$2\"]" "$W/$1.shares")" --argjson want "$3" '
		[($want | keys[]) as $k | (($got[$k] // 0) - $want[$k]) | fabs] +
		[($got | keys[]) as $k | select($want[$k] == null) | $got[$k]] | max * 10000 | round / 100'
}

# picture NAME: render it, measure it, say whether it is a picture at all.
picture() {
	well_formed "$1" || { fail "$1: not a well-formed, self-contained SVG"; return 1; }
	render "$1" || { fail "$1: chromium failed: $(tail -2 "$W/$1.chromium")"; return 1; }
	[ "$(png_size "$1")" = 1040x700 ] || { fail "$1: PNG of $(png_size "$1")"; return 1; }
	"$ROOT/tests/tools/svgshares.py" "$W/$1.svg" "$W/$1.png" >"$W/$1.shares"
}

within() { awk -v d="$1" 'BEGIN { exit !(d <= 2.0) }'; }

setup() {
	local i
	ringlb attach eth0 --mode generic >/dev/null || die "attach"
	ringlb vip add "$V4" --check none >/dev/null || die "vip add"
	for i in 1 2 3 4 5; do
		ringlb backend add "$V4" "b$i" "198.18.0.1$i" --mac "02:00:00:00:00:0$i" --weight "$i" \
			>/dev/null || die "backend add b$i"
	done
	ringlb backend drain "$V4" b4 >/dev/null || die "drain"
	# The daemon's verdict, as the state file holds it: b5 down (restore applies it).
	ringlb save "$W/saved.json" >/dev/null || die "save"
	jq '(.vips[0].backends[] | select(.name == "b5")) |= . + {health: "down"}' "$W/saved.json" \
		>"$W/down.json" && ringlb restore "$W/down.json" >/dev/null || die "restore with b5 down"
}

# --- show: the ring and the shares, in sectors (24,576 points) -------------------------
t_show() {
	local want d_ring d_share
	ringlb show "$V4" --svg "$W/show.svg" >"$W/show.txt" &&
		ringlb show "$V4" --json >"$W/show.json" && picture show && {
		want=$(jq '[.vips[0].backends[] | select(.share > 0) | {(.name): .share}] | add' "$W/show.json")
		d_ring=$(compare show ring "$want")
		d_share=$(compare show share "$want")
		if within "$d_ring" && within "$d_share" && grep -q "in 1024 sectors" "$W/show.svg"; then
			pass "show $V4 (24,576 points, drawn in sectors): colours on the ring within $d_ring points of show --json's shares, the share band within $d_share"
		else
			fail "show $V4: ring off by $d_ring, share band by $d_share points; shares $(jq -c .bands "$W/show.shares"), want $want"
		fi
	}
	grep -q "^VIP $V4" "$W/show.txt" && [ "$(grep -c '^VIP' "$W/show.txt")" -eq 1 ] &&
		pass "show VIP --svg FILE still prints that VIP's table" ||
		fail "show VIP --svg: printed $(head -3 "$W/show.txt")"

	# Marks: b4 draining and b5 down own nothing, say why, and have outline swatches.
	/usr/bin/python3 - "$W/show.svg" "$W/show.shares" <<'PYEOF' && pass "draining b4 and down b5 are marked in the legend (outline swatch, why) and own no colour on the circle" || fail "marks: see above"
import json, sys, xml.etree.ElementTree as ET
NS = "{http://www.w3.org/2000/svg}"
root = ET.parse(sys.argv[1]).getroot()
texts = [t.text or "" for t in root.iter(NS + "text")]
swatch = {r.get("data-name"): r.get("fill") for r in root.iter(NS + "rect") if r.get("class") == "swatch"}
shares = json.load(open(sys.argv[2]))["bands"]["ring"]
ok = True
for name, word in (("b4", "draining"), ("b5", "down")):
    if swatch.get(name) != "none" or not any(t.startswith(word) for t in texts) or name in shares:
        print("  %s: swatch %s, %s in legend: %s, share %s" % (name, swatch.get(name), word,
              any(t.startswith(word) for t in texts), shares.get(name)))
        ok = False
for name in ("b1", "b2", "b3"):
    if swatch.get(name, "none") == "none" or name not in shares:
        print("  %s: no colour" % name)
        ok = False
sys.exit(0 if ok else 1)
PYEOF
}

# --- plan: after, before, what moves (in sectors) ----------------------------------------
t_plan() {
	local after before d_after d_before d_moves
	ringlb plan "$V4" add b6 198.18.0.16 --weight 2 --svg "$W/plan.svg" >/dev/null &&
		ringlb plan "$V4" add b6 198.18.0.16 --weight 2 --json >"$W/plan.json" && picture plan && {
		after=$(jq '[.backends[] | select(.share_after > 0) | {(.name): .share_after}] | add' "$W/plan.json")
		before=$(jq '[.backends[] | select(.share_before > 0) | {(.name): .share_before}] | add' "$W/plan.json")
		d_after=$(compare plan after "$after")
		d_before=$(compare plan before "$before")
		d_moves=$(compare plan moves "{\"moves\": $(jq .moved "$W/plan.json")}")
		if within "$d_after" && within "$d_before" && within "$d_moves" &&
			grep -q "b1 → b6" "$W/plan.svg"; then
			pass "plan add b6 --svg: after within $d_after points of plan --json, before within $d_before, the moves band within $d_moves of the $(jq '.moved * 100 | . * 100 | round / 100' "$W/plan.json")% that moves; the legend says b1 → b6"
		else
			fail "plan add b6: after off by $d_after, before by $d_before, moves by $d_moves points; $(jq -c .bands "$W/plan.shares")"
		fi
	}
}

# --- a ring of 96 points, arc by arc; a plan that removes a backend ------------------------
t_small() {
	local i d arcs d_after d_moves
	ringlb vip add "$SMALL" --check none --vnodes 16 >/dev/null || die "small vip"
	for i in 1 2 3; do
		ringlb backend add "$SMALL" "s$i" "198.18.0.2$i" --mac "02:00:00:00:01:0$i" \
			--weight "$i" >/dev/null || die "small backend s$i"
	done
	ringlb show "$SMALL" --svg "$W/small.svg" >/dev/null && ringlb show "$SMALL" --json >"$W/small.json" &&
		picture small && {
		d=$(compare small ring "$(jq '[.vips[0].backends[] | {(.name): .share}] | add' "$W/small.json")")
		arcs=$(grep -o 'Z' "$W/small.svg" | wc -l)
		within "$d" && ! grep -q sectors "$W/small.svg" &&
			pass "show of a 96-point ring, arc by arc ($arcs arcs drawn): colours within $d points" ||
			fail "small ring: off by $d points"
	}
	ringlb plan "$SMALL" remove s2 --svg "$W/small-plan.svg" >/dev/null &&
		ringlb plan "$SMALL" remove s2 --json >"$W/small-plan.json" && picture small-plan && {
		d_after=$(compare small-plan after "$(jq '[.backends[] | select(.share_after > 0) | {(.name): .share_after}] | add' "$W/small-plan.json")")
		d_moves=$(compare small-plan moves "{\"moves\": $(jq .moved "$W/small-plan.json")}")
		within "$d_after" && within "$d_moves" && grep -q "s2 → s" "$W/small-plan.svg" &&
			pass "plan remove s2 (arc by arc): after within $d_after points, moves within $d_moves" ||
			fail "small plan: after off by $d_after, moves by $d_moves points"
	}
}

# --- IPv6, to standard output; a weight change ---------------------------------------------
t_v6() {
	local d
	ringlb vip add "$V6" >/dev/null || die "v6 vip"
	ringlb backend add "$V6" d1 2001:db8::11 --mac 02:00:00:00:02:01 >/dev/null &&
		ringlb backend add "$V6" d2 2001:db8::12 --mac 02:00:00:00:02:02 >/dev/null || die "v6 backends"
	ringlb show "$V6" --svg - >"$W/v6.svg" && picture v6 && {
		d=$(compare v6 ring "$(ringlb show "$V6" --json | jq '[.vips[0].backends[] | {(.name): .share}] | add')")
		within "$d" && grep -q "2001:db8::100" "$W/v6.svg" &&
			pass "show $V6 --svg - writes the picture alone to standard output: colours within $d points" ||
			fail "v6: off by $d points"
	}
	ringlb plan "$V6" weight d1 3 --svg "$W/v6-plan.svg" >/dev/null && picture v6-plan &&
		grep -q "weight 1 → 3" "$W/v6-plan.svg" &&
		pass "plan weight --svg: the legend says the weight changes" ||
		fail "plan weight --svg: $(grep -o 'weight [0-9]* → [0-9]*' "$W/v6-plan.svg")"
}

# --- bad use ---------------------------------------------------------------------------------
refused() { # WANT_EXIT FILE ARGS...: one line, that exit, and no FILE (nor a temporary beside it).
	local want=$1 file=$2 out rc
	shift 2
	out=$(ringlb "$@" 2>&1 >/dev/null)
	rc=$?
	if [ "$rc" -eq "$want" ] && [ "$(echo "$out" | wc -l)" -eq 1 ] && [ ! -e "$file" ] &&
		! compgen -G "$file*" >/dev/null; then
		pass "refused, exit $rc: ringlb $* ('$out')"
	else
		fail "ringlb $*: exit $rc (want $want), '$out', file: $(ls "$(dirname "$file")" 2>&1 | head -3)"
	fi
}
t_bad_use() {
	refused 2 "$W/none.svg" show --svg "$W/none.svg"
	refused 1 "$W/unknown.svg" show 198.18.0.199:80/tcp --svg "$W/unknown.svg"
	refused 1 "$W/no/such/dir.svg" show "$V4" --svg "$W/no/such/dir.svg"
	refused 1 "$W/bad.svg" show not-a-vip --svg "$W/bad.svg"
	refused 1 "$W/plan-unknown.svg" plan "$V4" remove nobody --svg "$W/plan-unknown.svg"
}

suite_test show
suite_test plan
suite_test small
suite_test v6
suite_test bad_use
suite_main "$@"
