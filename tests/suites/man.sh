#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The man pages say what the binary does (no root needed). Its tests
# (tests/suites/lib.sh runs them; `man.sh TEST...` runs some):
#
#   render     each page renders with man(1) without a warning
#   commands   ringlb(8) has a section for every command `ringlb --help`
#              lists, and in it every option the command's synopsis lists
#   globals    ringlb(8)'s GLOBAL OPTIONS have every global option
#   named      every option ringlb(8) names exists
#   daemon     ringlb-daemon(8) has every option of `ringlb daemon` in its OPTIONS
#   state      ringlb-state(5) names every key of the state files the tests'
#              seed corpus holds (tests/fuzz/corpus/state, loaded by the
#              fuzzer and test_state)
#
# The set-up renders the pages (man(1), 160 columns) and `ringlb --help`
# into a scratch directory; the tests read them there.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/suites/lib.sh"

PAGES="ringlb.8 ringlb-daemon.8 ringlb-state.5"
scratch_dir
trap 'rm -rf "$W"' EXIT

setup() {
	local page
	for page in $PAGES; do
		MANWIDTH=160 man --warnings -E UTF-8 -l "$ROOT/build/man/$page" >"$W/$page" \
			2>"$W/$page.err"
	done
	"$ROOT/build/ringlb" --help >"$W/help"
}

t_render() {
	local page
	for page in $PAGES; do
		[ -s "$W/$page" ] && [ ! -s "$W/$page.err" ] &&
			pass "man -l $page: $(wc -l <"$W/$page") lines, no warning" ||
			fail "man -l $page: $(head -3 "$W/$page.err")"
	done
}

# page_check CHECK: one of the checks below on the rendered pages, as a pass or a fail.
page_check() {
	local out
	if out=$(page_check_py "$1"); then
		pass "$out"
	else
		fail "${out:-$1: the check did not run}"
	fi
}

# page_check_py CHECK: prints what CHECK found; exits 0 when it holds.
page_check_py() {
	/usr/bin/python3 - "$W" "$ROOT" "$1" <<'PYEOF'
import glob, json, re, sys

w, root, which = sys.argv[1], sys.argv[2], sys.argv[3]

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

def command_options():
    """Each command's name and the options its synopsis lists."""
    out = []
    for synopsis in commands:
        words = synopsis.split()
        name = words[0] + (" " + words[1] if len(words) > 1 and re.fullmatch(r"[a-z][a-z-]*", words[1]) else "")
        # Optional options in brackets, required ones bare (decap attach --from PREFIX...).
        out.append((name, re.findall(r"(?<![\w-])(--[a-z-]+)", synopsis)))
    return out

def global_options():
    usage = help_text.split("Global options:")[1]
    return sorted(set(re.findall(r"(?<![\w-])(--[a-z-]+|-v)(?![\w-])", usage)) - {"--help"}) + ["--help"]

def check_commands():
    subsections = blocks(w + "/ringlb.8", 3)
    missing = []
    for name, options in command_options():
        block = subsections.get(name)
        if block is None:
            missing.append("no section '%s'" % name)
            continue
        missing += ["%s: %s" % (name, o) for o in options if not option_in(block, o)]
    return not missing, ("ringlb(8): a section for each of the %d commands of ringlb --help, with each of "
        "their %d options%s" % (len(commands), sum(len(o) for _, o in command_options()),
                                "; missing: " + ", ".join(missing) if missing else ""))

def check_globals():
    globals_ = global_options()
    section = blocks(w + "/ringlb.8", 0).get("GLOBAL OPTIONS", "")
    absent = [o for o in globals_ if not option_in(section, o)]
    return not absent, "ringlb(8) GLOBAL OPTIONS: %s%s" % (" ".join(globals_),
        "; missing: " + " ".join(absent) if absent else "")

def check_named():
    known = set(global_options())
    for _, options in command_options():
        known.update(options)
    named = set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", ringlb))
    unknown = sorted(named - known)
    return not unknown, "every one of the %d options ringlb(8) names exists%s" % (len(named),
        ": not " + " ".join(unknown) if unknown else "")

def check_daemon():
    daemon = [c for c in commands if c.startswith("daemon")][0]
    section = blocks(w + "/ringlb-daemon.8", 0).get("OPTIONS", "")
    opts = re.findall(r"\[(--[a-z-]+)", daemon)
    absent = [o for o in opts if not option_in(section, o)]
    return bool(opts and not absent), "ringlb-daemon(8) OPTIONS: %s%s" % (" ".join(opts),
        "; missing: " + " ".join(absent) if absent else "")

def keys(value, out):
    if isinstance(value, dict):
        for k, v in value.items():
            out.add(k)
            keys(v, out)
    elif isinstance(value, list):
        for v in value:
            keys(v, out)
    return out

def check_state():
    state_keys = set()
    for f in glob.glob(root + "/tests/fuzz/corpus/state/*.json"):
        keys(json.load(open(f)), state_keys)
    page = open(w + "/ringlb-state.5", encoding="utf-8").read()
    absent = sorted(k for k in state_keys if not re.search(r"(?<![\w])%s(?![\w])" % k, page))
    return bool(state_keys and not absent), "ringlb-state(5) names all %d keys of the state corpus%s" % (
        len(state_keys), ": missing " + " ".join(absent) if absent else "")

ok, what = globals()["check_" + which]()
print(what)
sys.exit(0 if ok else 1)
PYEOF
}

t_commands() { page_check commands; }
t_globals() { page_check globals; }
t_named() { page_check named; }
t_daemon() { page_check daemon; }
t_state() { page_check state; }

suite_test render
suite_test commands
suite_test globals
suite_test named
suite_test daemon
suite_test state
suite_main "$@"
