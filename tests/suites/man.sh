#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The man pages say what the binary does (no root needed):
#   - each page renders with man(1) without a warning
#   - ringlb(8) has a section for every command `ringlb --help` lists, and
#     in it every option the command's synopsis lists; its GLOBAL OPTIONS
#     have every global option; every option it names exists
#   - ringlb-daemon(8) has every option of `ringlb daemon` in its OPTIONS
#   - ringlb-state(5) names every key of the state files the tests' seed
#     corpus holds (tests/corpus/state, loaded by the fuzzer and test_state)
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
FAILS=0
pass() { echo "ok   - $*"; }
fail() { echo "FAIL - $*"; FAILS=$((FAILS + 1)); }
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT

for page in ringlb.8 ringlb-daemon.8 ringlb-state.5; do
	MANWIDTH=160 man --warnings -E UTF-8 -l "$ROOT/build/man/$page" >"$W/$page" 2>"$W/$page.err"
	[ -s "$W/$page" ] && [ ! -s "$W/$page.err" ] &&
		pass "man -l $page: $(wc -l <"$W/$page") lines, no warning" ||
		fail "man -l $page: $(head -3 "$W/$page.err")"
done

"$ROOT/build/ringlb" --help >"$W/help"
if ! /usr/bin/python3 - "$W" "$ROOT" <<'PYEOF'
import glob, json, re, sys

w, root = sys.argv[1], sys.argv[2]
fails = 0

def check(ok, what):
    global fails
    print(("ok   - " if ok else "FAIL - ") + what)
    fails += not ok

def option_in(text, opt):
    return re.search(re.escape(opt) + r"(?![\w-])", text) is not None

def blocks(page, level):
    """Headed blocks of a rendered page: sections (level 0) or subsections (3)."""
    out, title = {}, None
    for line in open(page, encoding="utf-8"):
        m = re.match(r"^ {%d}(\S.*?)\s*$" % level, line)
        if m and (level == 0 or not line.startswith(" " * (level + 1))):
            title = m.group(1)
            out[title] = ""
        elif level == 3 and re.match(r"^\S", line):
            title = None
        elif title is not None:
            out[title] += line
    return out

help_text = open(w + "/help").read()
commands = [l[len("  ringlb "):] for l in help_text.splitlines() if l.startswith("  ringlb ")]
ringlb = open(w + "/ringlb.8", encoding="utf-8").read()
subsections = blocks(w + "/ringlb.8", 3)
known = set()
missing = []
for synopsis in commands:
    words = synopsis.split()
    name = words[0] + (" " + words[1] if len(words) > 1 and re.fullmatch(r"[a-z]+", words[1]) else "")
    options = re.findall(r"\[(--[a-z-]+)", synopsis)
    known.update(options)
    block = subsections.get(name)
    if block is None:
        missing.append("no section '%s'" % name)
        continue
    missing += ["%s: %s" % (name, o) for o in options if not option_in(block, o)]
check(not missing, "ringlb(8): a section for each of the %d commands of ringlb --help, with each of "
      "their %d options%s" % (len(commands), sum(len(re.findall(r"\[--", c)) for c in commands),
                              "; missing: " + ", ".join(missing) if missing else ""))

usage = help_text.split("Global options:")[1]
globals_ = sorted(set(re.findall(r"(?<![\w-])(--[a-z-]+|-v)(?![\w-])", usage)) - {"--help"}) + ["--help"]
known.update(globals_)
section = blocks(w + "/ringlb.8", 0).get("GLOBAL OPTIONS", "")
absent = [o for o in globals_ if not option_in(section, o)]
check(not absent, "ringlb(8) GLOBAL OPTIONS: %s%s" % (" ".join(globals_),
      "; missing: " + " ".join(absent) if absent else ""))

named = set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", ringlb))
unknown = sorted(named - known)
check(not unknown, "every one of the %d options ringlb(8) names exists%s" % (len(named),
      ": not " + " ".join(unknown) if unknown else ""))

daemon = [c for c in commands if c.startswith("daemon")][0]
section = blocks(w + "/ringlb-daemon.8", 0).get("OPTIONS", "")
opts = re.findall(r"\[(--[a-z-]+)", daemon)
absent = [o for o in opts if not option_in(section, o)]
check(opts and not absent, "ringlb-daemon(8) OPTIONS: %s%s" % (" ".join(opts),
      "; missing: " + " ".join(absent) if absent else ""))

def keys(value, out):
    if isinstance(value, dict):
        for k, v in value.items():
            out.add(k)
            keys(v, out)
    elif isinstance(value, list):
        for v in value:
            keys(v, out)
    return out

state_keys = set()
for f in glob.glob(root + "/tests/fuzz/corpus/state/*.json"):
    keys(json.load(open(f)), state_keys)
page = open(w + "/ringlb-state.5", encoding="utf-8").read()
absent = sorted(k for k in state_keys if not re.search(r"(?<![\w])%s(?![\w])" % k, page))
check(state_keys and not absent, "ringlb-state(5) names all %d keys of the state corpus%s" %
      (len(state_keys), ": missing " + " ".join(absent) if absent else ""))
sys.exit(1 if fails else 0)
PYEOF
then
	FAILS=$((FAILS + 1))
fi
echo "man: $FAILS failed"
[ "$FAILS" -eq 0 ]
