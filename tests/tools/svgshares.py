#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
#
# svgshares.py SVG PNG: the share of each backend's colour in each band of a
# ring picture, measured from the PNG Chromium rendered it to. The SVG gives
# only where to look (each band's centre and radii, from its data-
# attributes) and which colour is whose (the legend's swatches); the shares
# come from the pixels: every pixel between a band's radii (a pixel's width
# in from each edge) is counted under the colour it has exactly; a plan's
# moves band under "moves". Prints JSON:
# {"bands": {band: {name: share}}, "unknown": {band: share}}, "unknown" being
# pixels of no backend's colour (the background between a moves band's marks).
import json
import math
import sys
import xml.etree.ElementTree as ET

from PIL import Image

SVG = "{http://www.w3.org/2000/svg}"


def hex_rgb(text):
    text = text.lstrip("#")
    return tuple(int(text[i:i + 2], 16) for i in (0, 2, 4))


def main():
    root = ET.parse(sys.argv[1]).getroot()
    image = Image.open(sys.argv[2]).convert("RGB")
    width, height = image.size
    pixels = image.load()
    colours = {}
    for rect in root.iter(SVG + "rect"):
        if rect.get("class") == "swatch" and rect.get("fill", "none") != "none":
            colours[hex_rgb(rect.get("fill"))] = rect.get("data-name")
    # A plan's moves band has one colour of its own, which no legend row has.
    for path in root.iter(SVG + "path"):
        if path.get("data-name") == "moves":
            colours[hex_rgb(path.get("fill"))] = "moves"
    bands, unknown = {}, {}
    for g in root.iter(SVG + "g"):
        if g.get("class") != "band":
            continue
        cx, cy = float(g.get("data-cx")), float(g.get("data-cy"))
        r_in, r_out = float(g.get("data-r-in")) + 1.5, float(g.get("data-r-out")) - 1.5
        counts, total, other = {}, 0, 0
        for y in range(max(0, int(cy - r_out)), min(height, int(cy + r_out) + 2)):
            for x in range(max(0, int(cx - r_out)), min(width, int(cx + r_out) + 2)):
                r = math.hypot(x + 0.5 - cx, y + 0.5 - cy)
                if r < r_in or r > r_out:
                    continue
                total += 1
                name = colours.get(pixels[x, y])
                if name is None:
                    other += 1
                else:
                    counts[name] = counts.get(name, 0) + 1
        band = g.get("data-band")
        bands[band] = {name: n / total for name, n in sorted(counts.items())}
        unknown[band] = other / total if total else 1.0
    json.dump({"bands": bands, "unknown": unknown}, sys.stdout, indent=1, sort_keys=True)
    print()


if __name__ == "__main__":
    main()
