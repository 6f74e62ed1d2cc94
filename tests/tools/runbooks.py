#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
#
# runbooks.py RULES [--root DIR] [--map PATH=FILE]...: every alert of the
# Prometheus rules file RULES has a runbook_url annotation of the form
# file:///PATH#ANCHOR, PATH is a file (read under DIR when given, a
# DESTDIR; or FILE when --map names PATH, the tree's copy of an installed
# file), and ANCHOR is a heading of it as Markdown renderers name headings
# (lower case, spaces as dashes, punctuation dropped). One line per alert;
# exit 0 only when every link resolves.
import re
import sys
import yaml


def slug(heading):
    s = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return s.replace(" ", "-")


def anchors(path):
    with open(path, encoding="utf-8") as f:
        return {slug(m.group(1)) for m in re.finditer(r"^#+ (.*)$", f.read(), re.M)}


def main(argv):
    rules, root, maps = argv[1], "", {}
    args = argv[2:]
    while args:
        if args[0] == "--root" and len(args) > 1:
            root = args[1].rstrip("/")
        elif args[0] == "--map" and len(args) > 1 and "=" in args[1]:
            k, v = args[1].split("=", 1)
            maps[k] = v
        else:
            print(f"usage: {argv[0]} RULES [--root DIR] [--map PATH=FILE]...", file=sys.stderr)
            return 2
        args = args[2:]
    with open(rules, encoding="utf-8") as f:
        doc = yaml.safe_load(f)
    bad = alerts = 0
    for group in doc["groups"]:
        for rule in group["rules"]:
            if "alert" not in rule:
                continue
            alerts += 1
            name = rule["alert"]
            url = rule.get("annotations", {}).get("runbook_url", "")
            m = re.fullmatch(r"file://(/[^#]+)#(.+)", url)
            if not m:
                print(f"FAIL {name}: runbook_url '{url}' is not file:///PATH#ANCHOR")
                bad += 1
                continue
            path = maps.get(m.group(1), root + m.group(1))
            try:
                found = m.group(2) in anchors(path)
            except OSError as e:
                print(f"FAIL {name}: {url}: {path}: {e.strerror}")
                bad += 1
                continue
            if not found:
                print(f"FAIL {name}: {url}: {path} has no heading #{m.group(2)}")
                bad += 1
                continue
            print(f"ok   {name}: {url} ({path})")
    if alerts == 0:
        print(f"FAIL {rules}: no alerts")
        return 1
    print(f"{alerts - bad} of {alerts} runbook links resolve")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
