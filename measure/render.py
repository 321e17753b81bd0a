"""Presenting bench and rank results: rich tables (ASCII ones that never wrap
a row, for a pipe), CSV, JSON-ready rows, PNG plots.

Role: everything `copygen bench`/`rank` print or write, kept out of the
command glue.  Plots use matplotlib's Agg backend (no display needed), imported
only when a plot is asked for.
Imports: rich, matplotlib (lazily), measure.bench, measure.measured, measure.rank, measure.size, the standard library.
"""

from __future__ import annotations

import csv
import io
from collections import defaultdict
from pathlib import Path

from rich import box
from rich.table import Table

from copygen.measure.bench import KINDS, Sample
from copygen.measure.measured import Measured
from copygen.measure.rank import Expected
from copygen.measure.size import RoutineSize

CSV_FIELDS = ["routine", "kind", "size", "src_align", "dst_align", "align_class", "cycles",
              "bytes_per_cycle", "instret", "cache_misses", "misaligned"]


def _table(title: str, plain: bool) -> Table:
    """A table as rich draws it for a terminal, or `plain` (for a pipe or a
    file): ASCII rules, and its columns never wrap a cell, so that each row
    is one line for grep and awk (the caller prints it at its natural width)."""
    if plain:
        return Table(title=title, box=box.ASCII)
    return Table(title=title)


def bench_tables(samples: list[Sample], profile: str, plain: bool = False,
                 measured=lambda s: None) -> list[Table]:
    """One table per routine: a row per size, a column per (src:dst) pair,
    cells 'cycles (bytes/cycle)'; `plain`: see _table.  A cell `measured`
    (a Sample -> Measured or None) gives shows the board's figure, marked
    `m`; the others stay the profile's."""
    tables = []
    what = "; m: measured" if any(measured(s) for s in samples) else ""
    for routine in dict.fromkeys(s.routine for s in samples):
        mine = [s for s in samples if s.routine == routine]
        pairs = list(dict.fromkeys((s.src_align, s.dst_align) for s in mine))
        t = _table(f"{routine} ({mine[0].kind}) on {profile}: cycles (bytes/cycle){what}", plain)
        t.add_column("size", justify="right", no_wrap=plain)
        copy = KINDS[routine].form == "copy"
        for src, dst in pairs:
            t.add_column(f"src+{src} dst+{dst}" if copy else f"dst+{dst}", justify="right", no_wrap=plain)
        cell = {(s.size, s.src_align, s.dst_align): s for s in mine}
        for size in sorted({s.size for s in mine}):
            row = [str(size)]
            for src, dst in pairs:
                s = cell.get((size, src, dst))
                row.append(_cell(s, measured(s)) if s else "-")
            t.add_row(*row)
        tables.append(t)
    return tables


def _cell(s: Sample, m: Measured | None) -> str:
    if m is None:
        return f"{s.cycles} ({s.bytes_per_cycle:.2f})"
    return f"m {m.cycles:.0f} ({s.size / m.cycles:.2f})"


def measured_fields(s: Sample, m: Measured | None) -> dict:
    """The JSON/CSV fields that say where a sample's figure comes from:
    `cycles` stays the profile's; a measured cell adds the board's."""
    if m is None:
        return {"source": "modelled", "measured_cycles": None}
    return {"source": "measured", "measured_cycles": round(m.cycles, 2), "measured_method": m.method,
            "measured_spread": m.spread, "measured_board": m.board}


def size_table(sizes: list[RoutineSize], plain: bool = False) -> Table:
    """A row per routine: its .text bytes and its share of __ex_table
    (measure.size says what is counted); `plain`: see _table."""
    t = _table("code size: .text bytes per routine (st_size, fault exits included)", plain)
    for name, justify in (("routine", "left"), ("kind", "left"), (".text bytes", "right"),
                          ("__ex_table bytes", "right")):
        t.add_column(name, justify=justify, no_wrap=plain)
    for z in sizes:
        t.add_row(z.routine, z.kind, str(z.text_bytes), str(z.extable_bytes))
    return t


def bench_csv(samples: list[Sample], measured=lambda s: None) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=CSV_FIELDS + ["source", "measured_cycles"], extrasaction="ignore",
                       lineterminator="\n")
    w.writeheader()
    for s in samples:
        w.writerow(s.as_dict() | measured_fields(s, measured(s)))
    return buf.getvalue()


def rank_table(ranked: dict[str, list[tuple[Expected, float]]], workload: str, profile: str,
               plain: bool = False) -> Table:
    """A row per routine, best first within each kind; `plain`: see _table."""
    t = _table(f"expected cycles per call, workload {workload}, profile {profile}", plain)
    for name, justify in (("kind", "left"), ("#", "right"), ("routine", "left"), ("source", "left"),
                          ("cycles", "right"), ("bytes/cycle", "right"), ("vs best", "right"),
                          (".text bytes", "right")):
        t.add_column(name, justify=justify, overflow="fold", no_wrap=plain)
    for kind, entries in ranked.items():
        for i, (r, rel) in enumerate(entries, 1):
            t.add_row(kind if i == 1 else "", str(i), r.routine, r.source, f"{r.expected_cycles:.1f}",
                      f"{r.bytes_per_cycle:.3f}", "best" if i == 1 else f"+{100 * (rel - 1):.1f} %",
                      "-" if r.text_bytes is None else str(r.text_bytes))
    return t


def rank_csv(ranked: dict[str, list[tuple[Expected, float]]]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["kind", "rank", "routine", "source", "expected_cycles", "bytes_per_cycle", "relative",
                "text_bytes"])
    for kind, entries in ranked.items():
        for i, (r, rel) in enumerate(entries, 1):
            w.writerow([kind, i, r.routine, r.source, round(r.expected_cycles, 2),
                        round(r.bytes_per_cycle, 4), round(rel, 4), r.text_bytes])
    return buf.getvalue()


# one colour per routine kind, one line style per alignment class: sixteen
# curves stay told apart without matplotlib's ten-colour cycle repeating
STYLE = {"aligned": "-", "misaligned": "--", "co-aligned": ":"}


def _curves(samples: list[Sample]) -> dict[str, tuple[str, list[int], list[float]]]:
    """label -> (alignment class, sizes, mean bytes/cycle) per routine kind
    and alignment class.  Curves equal at every size are drawn once, under
    one label naming them all ("copy_to_user = copy_from_user (aligned)"):
    drawn apart, the later one hides the earlier."""
    points: dict[tuple[str, str], dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for s in samples:
        if s.size > 0:
            points[s.kind, s.align_class][s.size].append(s.bytes_per_cycle)
    merged: dict[tuple, list[str]] = {}
    for (kind, cls), by_size in points.items():
        xs = sorted(by_size)
        ys = tuple(round(sum(by_size[x]) / len(by_size[x]), 9) for x in xs)
        merged.setdefault((cls, tuple(xs), ys), []).append(kind)
    return {f"{' = '.join(kinds)} ({cls})": (cls, list(xs), list(ys))
            for (cls, xs, ys), kinds in merged.items()}


def bench_figure(samples: list[Sample], title: str, limit: float | None):
    """The figure plot_bench saves: bytes/cycle against size (log scale), a
    line per routine kind and alignment class (the mean over the pairs of
    that class); `limit` draws the memory-pipe bound, its label inside the
    frame.  The legend sits beside the axes, where it hides no curve.

    A line is labelled with its routine's kind (copy_to_user, clear_user, ...),
    not its symbol: matplotlib leaves out of the legend every label starting
    with `_`, which every uaccess symbol does."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    curves = _curves(samples)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    kinds = list(dict.fromkeys(label.rsplit(" (", 1)[0] for label in curves))
    fig, ax = plt.subplots(figsize=(11, 5.5))
    for label, (cls, xs, ys) in curves.items():
        colour = colours[kinds.index(label.rsplit(" (", 1)[0]) % len(colours)]
        ax.plot(xs, ys, STYLE.get(cls, "-"), color=colour, marker="o", markersize=3, label=label)
    if limit:
        ax.axhline(limit, linestyle="--", color="grey", linewidth=1)
        top = max([limit, *(y for _, _, ys in curves.values() for y in ys)])
        ax.set_ylim(top=top * 1.12)            # room above the line for its label
        ax.annotate(f"copy limit of the memory pipes: {limit:g} B/cycle", (0.99, limit),
                    xycoords=("axes fraction", "data"), xytext=(0, 3), textcoords="offset points",
                    ha="right", va="bottom", fontsize=8, color="dimgrey")
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda x, _: f"{x:g}"))
    ax.set_xlabel("size (bytes)")
    ax.set_ylabel("bytes per cycle")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    # no legend when every size was 0 (nothing plotted): matplotlib would warn
    if curves:
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1), borderaxespad=0)
    fig.tight_layout()
    return fig


def plot_bench(samples: list[Sample], path: Path, title: str, limit: float | None) -> list[str]:
    """bench_figure() written to PATH as a PNG; returns the legend's labels."""
    import matplotlib.pyplot as plt
    fig = bench_figure(samples, title, limit)
    legend = fig.axes[0].get_legend()
    labels = [t.get_text() for t in legend.get_texts()] if legend else []
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return labels
