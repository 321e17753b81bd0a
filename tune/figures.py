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
    classes = [c for c in grid if c in base]
    sizes = sorted(grid[classes[0]], key=int)
    data = [[base[c][s] / grid[c][s] if grid[c][s] else 0.0 for s in sizes] for c in classes]
    fig, ax = plt.subplots(figsize=(1 + 0.7 * len(sizes), 1.5 + 0.5 * len(classes)))
    im = ax.imshow(data, cmap="RdYlGn", vmin=0.5, vmax=1.5, aspect="auto")
    ax.set_xticks(range(len(sizes)), sizes)
    ax.set_yticks(range(len(classes)), classes)
    for i, row in enumerate(data):
        for j, v in enumerate(row):
            ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=7)
    ax.set_xlabel("size (bytes)")
    ax.set_title(title, fontsize=9)
    fig.colorbar(im, ax=ax, label="speed-up")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def pareto(rows: list[dict], baselines: dict[str, dict], path: Path, labels: dict[str, str],
           max_text: int | None = None, win: dict | None = None) -> list[dict]:
    """Every evaluated point (those over `max_text` in grey), the front as
    a line, the winner as a star, each baseline as a hollow marker drawn
    above the points (a point under it shows through) and named by its
    strategy.  `labels`: title, xlabel, ylabel.  Returns the front."""
    plt = _pyplot()
    pts = [r for r in rows if r.get("expected") is not None and r.get("text_bytes") is not None]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    within = [r for r in pts if not r.get("pruned")]
    over = [r for r in pts if r.get("pruned")]
    ax.scatter([r["text_bytes"] for r in within], [r["expected"] for r in within], s=14,
               color="tab:blue", alpha=0.6, zorder=2, label=f"candidates ({len(within)})")
    if over:
        ax.scatter([r["text_bytes"] for r in over], [r["expected"] for r in over], s=14,
                   color="0.6", alpha=0.6, zorder=2, label=f"over --max-text ({len(over)})")
    front = pareto_front(pts)
    ax.plot([r["text_bytes"] for r in front], [r["expected"] for r in front], "-o", color="tab:red",
            markersize=5, markerfacecolor="none",
            linewidth=1.2, zorder=3, label=f"Pareto front ({len(front)})")
    if max_text is not None:
        ax.axvline(max_text, linestyle="--", color="0.4", linewidth=1, zorder=1,
                   label=f"--max-text {max_text} B")
    if win and win.get("text_bytes") is not None:
        ax.scatter([win["text_bytes"]], [win["expected"]], marker="*", s=160, color="gold",
                   edgecolors="black", linewidths=0.7, zorder=5, label="winner")
    _baselines(ax, baselines)
    _cycles_axis(ax, [r["expected"] for r in pts] +
                 [e["expected"] for e in baselines.values() if e.get("expected")])
    ax.set_title(labels["title"], fontsize=10)
    ax.set_xlabel(labels["xlabel"])
    ax.set_ylabel(labels["ylabel"])
    ax.grid(True, alpha=0.3)
    ax.margins(0.08)            # a marker at the edge keeps its label inside the axes
    ax.legend(fontsize=7, loc="best")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return front


def _cycles_axis(ax, cycles: list[float]) -> None:
    """A logarithmic cycles axis when the values span more than a factor of
    two (a byte-loop baseline is several times slower than every candidate
    and would flatten them on a linear one), with plain numbers as labels."""
    import matplotlib.ticker as ticker
    if not cycles or max(cycles) <= 2 * min(cycles):
        return
    ax.set_yscale("log")
    # within a decade a log locator labels one or two ticks: place them as on a linear axis
    within = max(cycles) <= 10 * min(cycles)
    ax.yaxis.set_major_locator(ticker.MaxNLocator(nbins=8) if within else ticker.LogLocator(subs=(1, 2, 5)))
    ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    ax.yaxis.set_minor_locator(ticker.NullLocator())


def _baselines(ax, baselines: dict[str, dict]) -> None:
    """Hollow markers above the candidates (zorder 4), each named beside it."""
    colors = ("tab:green", "tab:purple", "tab:orange", "tab:brown", "tab:pink", "tab:olive")
    for i, (b, e) in enumerate(baselines.items()):
        if e.get("text_bytes") is None or e.get("expected") is None:
            continue
        name = e.get("name") or Path(b).stem
        color = colors[i % len(colors)]
        ax.scatter([e["text_bytes"]], [e["expected"]], marker=BASELINE_MARKERS[i % len(BASELINE_MARKERS)],
                   s=90, facecolors="none", edgecolors=color, linewidths=1.6, zorder=4,
                   label=f"baseline {name}")
        ax.annotate(name, (e["text_bytes"], e["expected"]), xytext=(7, 5), textcoords="offset points",
                    fontsize=8, color=color, zorder=4)
