#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
#
# One chart of the daemon's status page, measured in a browser's screenshot
# of it (tests/suites/status.sh):
#
#   statuschart.py PAGE.html PAGE.png KIND [NAME...]
#
# KIND is the chart's class (throughput, drops, resources); the first one on
# the page (the first VIP's) is measured. The HTML gives its plot's
# background colour and size, its threshold line's y and its series'
# colours; the PNG is searched for the plot (its first pixel of that
# background, in raster order, is the plot's top left corner: the page
# draws it at 1:1). Printed as JSON:
#
#   box            [x0, y0, x1, y1] of the plot in the PNG
#   threshold      {"want_row": the row where the HTML puts the line,
#                   "rows": rows where the line's red covers 40 % or more of the plot's width}
#   series.NAME    {"colour", "pixels": how many of the plot's pixels are its colour,
#                   "first", "last": its height above the plot's bottom (px) in the
#                   first and last columns it is drawn in (the column's highest
#                   pixel of its colour), "want_first", "want_last": the heights of
#                   its first and last points as the HTML draws them,
#                   "height": the plot's height}
import json
import re
import sys

from PIL import Image

STATUS_PLOT_TOP = 34  # status.h: the plot's top in the chart's SVG


def rgb(hex_colour):
    return tuple(int(hex_colour[i:i + 2], 16) for i in (1, 3, 5))


def main():
    html_path, png_path, kind = sys.argv[1:4]
    names = sys.argv[4:]
    html = open(html_path, encoding="utf-8").read()
    start = html.index('<figure class="chart %s">' % kind)
    figure = html[start:html.index("</figure>", start)]
    plot = re.search(r'<rect class="plot" x="(\d+)" y="(\d+)" width="(\d+)" height="(\d+)" '
                     r'fill="(#[0-9a-f]{6})"', figure)
    width, height, fill = int(plot.group(3)), int(plot.group(4)), rgb(plot.group(5))
    threshold = re.search(r'<line class="threshold" [^>]*y1="([\d.]+)"', figure)
    colours = dict(re.findall(r'<li data-name="([^"]+)" data-colour="(#[0-9a-f]{6})"', figure))

    img = Image.open(png_path).convert("RGB")
    px = img.load()
    W, H = img.size
    origin = next(((x, y) for y in range(H) for x in range(W) if px[x, y] == fill), None)
    if origin is None:
        print(json.dumps({"error": "no pixel of the %s plot's background %s" % (kind, plot.group(5))}))
        return 1
    x0, y0 = origin
    x1, y1 = x0 + width, y0 + height
    out = {"box": [x0, y0, x1, y1]}

    red = rgb("#d62728")
    rows = [y for y in range(max(0, y0 - 2), min(H, y1 + 3))
            if sum(px[x, y] == red for x in range(x0, min(W, x1))) >= 0.4 * width]
    out["threshold"] = {"want_row": y0 + int(float(threshold.group(1))) - STATUS_PLOT_TOP
                        if threshold else None, "rows": rows}

    out["series"] = {}
    for name in names:
        if name not in colours:
            out["series"][name] = {"colour": None, "pixels": 0}
            continue
        c = rgb(colours[name])
        tops = {}
        count = 0
        # The line is 2 px wide: at 0 half of it lies below the plot.
        for y in range(max(0, y0 - 2), min(H, y1 + 3)):
            for x in range(x0, min(W, x1 + 1)):
                if px[x, y] == c:
                    count += 1
                    tops.setdefault(x, y)
        cols = sorted(tops)
        # Where the page puts its first and last points: heights above the plot's bottom.
        runs = re.findall(r'<polyline class="series" data-name="%s" [^>]*points="([^"]*)"'
                          % re.escape(name), figure)
        points = [tuple(map(float, p.split(","))) for run in runs for p in run.split()]
        bottom = STATUS_PLOT_TOP + height
        out["series"][name] = {
            "colour": colours[name], "pixels": count, "height": height,
            "first": y1 - tops[cols[0]] if cols else None,
            "last": y1 - tops[cols[-1]] if cols else None,
            "want_first": round(bottom - points[0][1]) if points else None,
            "want_last": round(bottom - points[-1][1]) if points else None}
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
