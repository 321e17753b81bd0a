"""The figures of a tuning report: a speed-up heat map per baseline, and the
Pareto front of expected cycles against the tuned routine's `.text` bytes.

pareto_front() is the computation, free of matplotlib; heatmap() and
pareto() draw PNGs with matplotlib's Agg backend, imported only when a
figure is drawn.
Role: rendering.  May import matplotlib (lazily) and the standard library.
"""
from __future__ import annotations

from pathlib import Path

# hollow marker shapes of the baselines, in the order they are given
BASELINE_MARKERS = ("s", "D", "^", "v", "p", "h")


def pareto_front(rows: list[dict], x: str = "text_bytes", y: str = "expected") -> list[dict]:
    """The rows no other row beats on both `x` and `y` (smaller is better on
    each), by increasing `x`.  Of rows equal on both, the first stands for
    them; rows lacking either value are left out."""
    pts = [r for r in rows if r.get(x) is not None and r.get(y) is not None]
    front: list[dict] = []
    for r in sorted(pts, key=lambda r: (r[x], r[y])):
        if not front or r[y] < front[-1][y]:
            front.append(r)
    return front


def _pyplot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def heatmap(grid: dict, base: dict, path: Path, title: str) -> None:
    plt = _pyplot()
    fig = heatmap_figure(grid, base, title)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def heatmap_figure(grid: dict, base: dict, title: str):
    """Speed-up per size (columns) and alignment class (rows).  Colours
    diverge at 1.0 (red: slower, green: faster) and the colour bar spans
    every cell's value; each number is black or white, whichever reads on
    its cell's colour."""
    plt = _pyplot()
    from matplotlib.colors import TwoSlopeNorm
    classes = [c for c in grid if c in base]
    sizes = sorted(grid[classes[0]], key=int)
    data = [[base[c][s] / grid[c][s] if grid[c][s] else 0.0 for s in sizes] for c in classes]
    values = [v for row in data for v in row]
    # the centre must lie strictly inside the range, whatever the data
    norm = TwoSlopeNorm(vcenter=1.0, vmin=min(min(values), 0.99), vmax=max(max(values), 1.01))
    cmap = plt.get_cmap("RdYlGn")
    fig, ax = plt.subplots(figsize=(1.5 + 0.7 * len(sizes), 1.5 + 0.5 * len(classes)))
    im = ax.imshow(data, cmap=cmap, norm=norm, aspect="auto")
    ax.set_xticks(range(len(sizes)), sizes)
    ax.set_yticks(range(len(classes)), classes)
    for i, row in enumerate(data):
        for j, v in enumerate(row):
            ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=7,
                    color=text_colour(cmap(norm(v))))
    ax.set_xlabel("size (bytes)")
    ax.set_title(title, fontsize=9)
    fig.colorbar(im, ax=ax, label="speed-up")
    fig.tight_layout()
    return fig


def text_colour(rgba) -> str:
    """Black on a light background, white on a dark one (relative luminance,
    ITU-R BT.709 weights)."""
    r, g, b = rgba[:3]
    return "black" if 0.2126 * r + 0.7152 * g + 0.0722 * b > 0.5 else "white"


def pareto(rows: list[dict], baselines: dict[str, dict], path: Path, labels: dict[str, str],
           max_text: int | None = None, win: dict | None = None) -> list[dict]:
    """pareto_figure() written to `path`; returns the front."""
    plt = _pyplot()
    fig, front = pareto_figure(rows, baselines, labels, max_text, win)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return front


def pareto_figure(rows: list[dict], baselines: dict[str, dict], labels: dict[str, str],
                  max_text: int | None = None, win: dict | None = None):
    """Every evaluated point (those over `max_text` in grey), the front as
    a line, the winner as a star, each baseline as a hollow marker drawn
    above the points (a point under it shows through) and named by its
    strategy.  `labels`: title, xlabel, ylabel.  Returns (figure, front)."""
    plt = _pyplot()
    pts = [r for r in rows if r.get("expected") is not None and r.get("text_bytes") is not None]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for group, color, name in (([r for r in pts if not r.get("pruned")], "tab:blue", "candidates"),
                               ([r for r in pts if r.get("pruned")], "0.6", "over --max-text")):
        if group:
            ax.scatter([r["text_bytes"] for r in group], [r["expected"] for r in group], s=14,
                       color=color, alpha=0.6, zorder=2, label=f"{name} ({len(group)})")
    front = pareto_front(pts)
    ax.plot([r["text_bytes"] for r in front], [r["expected"] for r in front], "-o", color="tab:red",
            markersize=5, markerfacecolor="none", linewidth=1.2, zorder=3,
            label=f"Pareto front ({len(front)})")
    if max_text is not None:
        ax.axvline(max_text, linestyle="--", color="0.4", linewidth=1, zorder=1,
                   label=f"--max-text {max_text} B")
    if win and win.get("text_bytes") is not None:
        ax.scatter([win["text_bytes"]], [win["expected"]], marker="*", s=160, color="gold",
                   edgecolors="black", linewidths=0.7, zorder=5, label="winner")
    shown = [e for e in baselines.values() if e.get("text_bytes") is not None and e.get("expected")]
    ylim = cycles_range([r["expected"] for r in pts], [e["expected"] for e in shown])
    ax.set_ylim(*ylim)
    _baselines(ax, baselines, ylim)
    ax.set_title(labels["title"], fontsize=10)
    ax.set_xlabel(labels["xlabel"])
    ax.set_ylabel(labels["ylabel"])
    ax.grid(True, alpha=0.3)
    ax.margins(x=0.08)          # a marker at the edge keeps its label inside the axes
    ax.legend(fontsize=7, loc="best")
    fig.tight_layout()
    return fig, front


# a baseline within this factor of the candidates' cycles is drawn where it is
NEAR = 1.25


def cycles_range(candidates: list[float], baselines: list[float]) -> tuple[float, float]:
    """The cycles axis: the candidates and the baselines near them, padded.
    A baseline several times slower (a byte loop) would squeeze the
    candidates, and the front among them, into a line at the bottom."""
    if not candidates:
        candidates = baselines or [1.0]
    lo, hi = min(candidates), max(candidates)
    near = [b for b in baselines if lo / NEAR <= b <= hi * NEAR]
    lo, hi = min([lo, *near]), max([hi, *near])
    pad = (hi - lo) * 0.08 or lo * 0.05 or 1.0
    return lo - pad, hi + pad


def _baselines(ax, baselines: dict[str, dict], ylim: tuple[float, float]) -> None:
    """Hollow markers above the candidates (zorder 4), each named beside it;
    one off the cycles axis sits at its edge, a triangle pointing out,
    its cycles in its legend entry."""
    colors = ("tab:green", "tab:purple", "tab:orange", "tab:brown", "tab:pink", "tab:olive")
    off = 0         # baselines off the axis so far: their names are stacked, not overlaid
    for i, (b, e) in enumerate(baselines.items()):
        if e.get("text_bytes") is None or e.get("expected") is None:
            continue
        name = e.get("name") or Path(b).stem
        color, marker, y = colors[i % len(colors)], BASELINE_MARKERS[i % len(BASELINE_MARKERS)], e["expected"]
        label, offset = f"baseline {name}", (7, 5)
        if not ylim[0] <= y <= ylim[1]:
            above = y > ylim[1]
            marker, y = ("^", ylim[1]) if above else ("v", ylim[0])
            label = f"baseline {name} ({e['expected']:.0f} cycles, off the axis)"
            offset = (7, -12 - 11 * off if above else 5 + 11 * off)
            off += 1
        ax.scatter([e["text_bytes"]], [y], marker=marker, s=90, facecolors="none", edgecolors=color,
                   linewidths=1.6, zorder=4, clip_on=False, label=label)
        ax.annotate(name, (e["text_bytes"], y), xytext=offset, textcoords="offset points",
                    fontsize=8, color=color, zorder=4)
