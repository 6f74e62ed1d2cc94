#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# The alert thresholds the daemon's status page draws, read from the shipped
# rules (ringlb.rules.yml) so the page and the alerts cannot disagree: a C
# header of #defines on standard output. Each threshold is the number
# compared after a given piece of a given alert's expr; a rule rewritten so
# that a piece is gone fails the build, naming the alert.
#
#   scripts/prometheus/thresholds.sh RULES.yml > build/alerts.h
set -eu

rules=$1

awk '
# The expr of each alert, its block lines joined: alert name -> expression.
function flush() { if (name != "") expr[name] = text; name = ""; text = ""; inexpr = 0 }
function indent(s) { match(s, /^ */); return RLENGTH }
/^ *- (alert|record):/ { flush(); if ($2 == "alert:") name = $3; next }
inexpr && (indent($0) > exprindent || $0 ~ /^ *$/) { text = text " " $0; next }
{ inexpr = 0 }
name != "" && /^ *expr:/ {
	exprindent = indent($0)
	line = $0
	sub(/^ *expr: */, "", line)
	if (line == "|") inexpr = 1
	else text = line
}
END { flush() }

# number ALERT PIECE: the literal compared by ">" right after PIECE in ALERT.
function number(alert, piece,    e, at, rest) {
	e = expr[alert]
	at = index(e, piece)
	if (!at) fail(alert, "no \"" piece "\" in its expr")
	rest = substr(e, at + length(piece))
	if (!match(rest, /^[ \t]*>[ \t]*[0-9][0-9.]*/)) fail(alert, "no \"> NUMBER\" after \"" piece "\"")
	rest = substr(rest, 1, RLENGTH)
	sub(/^[ \t]*>[ \t]*/, "", rest)
	return rest
}
# matcher ALERT LABEL OP: the regular expression of LABEL OP "..." in ALERT.
function matcher(alert, label, op,    e, at, rest) {
	e = expr[alert]
	at = index(e, label op "\"")
	if (!at) fail(alert, "no " label op "\"...\" in its expr")
	rest = substr(e, at + length(label op "\""))
	return substr(rest, 1, index(rest, "\"") - 1)
}
function fail(alert, why) {
	printf "thresholds.sh: %s: alert %s: %s\n", FILENAME, alert, why > "/dev/stderr"
	bad = 1
	exit 1
}
END {
	if (bad) exit 1
	print "/* Generated from " FILENAME " by scripts/prometheus/thresholds.sh: do not edit. */"
	print "#ifndef RINGLB_ALERTS_H"
	print "#define RINGLB_ALERTS_H"
	print "/* RinglbDropsRising: frames a second of one drop reason, and which reasons count. */"
	print "#define ALERT_DROPS_PER_S " number("RinglbDropsRising", "[5m]))")
	print "#define ALERT_DROPS_REASONS \"" matcher("RinglbDropsRising", "reason", "=~") "\""
	print "#define ALERT_DROPS_EXCEPT \"" matcher("RinglbDropsRising", "reason", "!~") "\""
	print "/* RinglbFlowTableFull: the flow table'"'"'s entries over its capacity. */"
	print "#define ALERT_FLOW_TABLE_RATIO " number("RinglbFlowTableFull", "ringlb_flow_table_capacity")
	print "/* RinglbBackendImbalance judges a VIP only above this many packets a second. */"
	print "#define ALERT_IMBALANCE_MIN_PACKETS_PER_S " \
		number("RinglbBackendImbalance", "rate(ringlb_vip_packets_total[10m]))")
	print "#endif"
}
' "$rules"
