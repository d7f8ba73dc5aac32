"""Draw docs/diagrams/engine-paths.svg: the chunk engine's read and write paths.

    python docs/diagrams/engine_paths.py

(matplotlib only; the SVG is committed, so building the docs does not run this.)
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import FancyBboxPatch  # noqa: E402

#: the left edge of each column
C = [0.2 + 3.5 * i for i in range(6)]
BOXES = {
    # read path (top)
    "sel": (C[0], 7.2, "selection", "#eeeeee"),
    "idx": (C[1], 7.2, "Indexer\nchunk projections", "#eeeeee"),
    "route": (C[2], 7.2, "route each chunk\n(capabilities looked\nat once per read)", "#fff2cc"),
    "fetch": (C[3], 8.3, "whole values: get_many;\niter_many (streaming);\nread_into (in_place_reads)", "#dae8fc"),
    "decode": (C[4], 8.3, "decode on the pool:\ndecode_into out or scratch;\ndecode_span (blosc)", "#dae8fc"),
    "steps": (C[3], 6.1, "PartialDecode.partial_steps:\nshard index, inner chunks;\nspan of elements", "#d5e8d4"),
    "batch": (C[4], 6.1, "lockstep batches through\nstore.reader(key)\n(RangeReader)", "#d5e8d4"),
    "out": (C[5], 7.2, "out\n(missing: fill value)", "#eeeeee"),
    # write path (bottom)
    "val": (C[0], 2.6, "value", "#eeeeee"),
    "conv": (C[1], 2.6, "convert, broadcast\nIndexer", "#eeeeee"),
    "whole": (C[2], 3.8, "chunks covered whole:\nencode (no read)", "#fff2cc"),
    "groups": (C[3], 4.2, "groups: encode, then\nset_many (+ delete fill)", "#dae8fc"),
    "up": (C[3], 3.0, "background_uploads:\neach chunk handed over\nas it is encoded", "#dae8fc"),
    "rmw": (C[2], 1.2, "some covered in part:\nread-modify-write per batch", "#fff2cc"),
    "locked": (C[3], 1.2, "locked(keys) · get_many\ndecode, update, encode\n(encode_partial: shards)", "#f8cecc"),
    "store": (C[4], 2.6, "store\nset_many / delete_many", "#eeeeee"),
}
ARROWS = [
    ("sel", "idx"), ("idx", "route"), ("route", "fetch", "whole chunks"), ("route", "steps", "partial reads"),
    ("fetch", "decode"), ("steps", "batch"), ("decode", "out"), ("batch", "out"),
    ("val", "conv"), ("conv", "whole"), ("conv", "rmw"), ("whole", "groups"), ("whole", "up"),
    ("rmw", "locked"), ("groups", "store"), ("up", "store"), ("locked", "store"),
]
W, H = 3.0, 1.0


def main() -> None:
    plt.rcParams["svg.fonttype"] = "none"  # text stays text: small, searchable
    plt.rcParams["svg.hashsalt"] = "zarrdask"  # the same file every run
    fig, ax = plt.subplots(figsize=(16.0, 7.5))
    ax.set_xlim(0, 20.9)
    ax.set_ylim(0.4, 9.7)
    ax.axis("off")
    ax.text(0.2, 9.45, "read path", fontsize=13, weight="bold")
    ax.text(0.2, 4.95, "write path", fontsize=13, weight="bold")
    for x, y, text, color in BOXES.values():
        ax.add_patch(FancyBboxPatch((x, y), W, H, boxstyle="round,pad=0.05", fc=color, ec="#555555"))
        ax.text(x + W / 2, y + H / 2, text, ha="center", va="center", fontsize=8.5, linespacing=1.3)
    for a, b, *label in ARROWS:
        xa, ya = BOXES[a][0] + W, BOXES[a][1] + H / 2
        xb, yb = BOXES[b][0], BOXES[b][1] + H / 2
        ax.annotate("", xy=(xb - 0.05, yb), xytext=(xa + 0.05, ya),
                    arrowprops=dict(arrowstyle="->", color="#333333", lw=1.1))
        if label:
            ax.text((xa + xb) / 2 - 0.55, (ya + yb) / 2 + (0.25 if yb > ya else -0.4), label[0],
                    fontsize=8.5, style="italic", ha="center")
    fig.savefig(Path(__file__).with_name("engine-paths.svg"), bbox_inches="tight", metadata={"Date": None})


if __name__ == "__main__":
    main()
