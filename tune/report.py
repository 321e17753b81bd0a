"""What a tuning run shows: the ranked rows, the same as JSON/CSV, and a
report directory (report.md, a speed-up heat map per baseline, the Pareto
front of expected cycles against the tuned routine's `.text` bytes, the
winner as a .copy file).

Every function here reads rows from the store (tune.store.Store.results)
and baselines ({label: eval row}); nothing is recomputed.
Role: rendering.  May import rich, tune.figures, emu.timing.profile (where a
profile's figures come from), the standard library.
"""
from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from copygen.emu.timing.profile import provenance_of
from copygen.tune import figures

SHOWN_CLAUSES = 3
PROVED_NOTE = ("A point is proved when every entry point of its routine is, each for every n: "
               "both directions of a user copy (their faults are on different sides), "
               "memcpy, memmove and memset of a string block, a vector routine.  The benched "
               "entry point is proved for each of the best points; the others down the "
               "ranking until a point has them all (\"partly proved\": not needed, a better "
               "point is proved throughout).")


def vector_state(run: dict) -> str:
    """The vector state a run was evaluated under (measure.dispatch's name:
    clean, dirty or the share of dirty calls); clean when its args name
    none, the default."""
    args = run.get("args") or {}
    args = json.loads(args) if isinstance(args, str) else args
    return args.get("vector_state", "clean")


def vector_note(run: dict) -> str:
    """", vector state S" for titles, where the state can matter: a
    copy_user sweep (the one kind with a vector phase), or any other state
    than clean."""
    state = vector_state(run)
    return f", vector state {state}" if run.get("kind") == "copy_user" or state != "clean" else ""


def shown_names(labels) -> dict[str, str]:
    """Each baseline's label (the path it was given by) -> the name tables,
    titles and legends show: its strategy's name, the file's stem
    (kernel2021 for examples/kernel2021.copy); the path when two baselines
    share a stem."""
    stems = [Path(label).stem for label in labels]
    return {label: s if stems.count(s) == 1 else label for label, s in zip(labels, stems)}


def status_text(row: dict) -> str:
    """The proof column: pruned by the size limit, with its reason; proved,
    disqualified with the clause, or not proved; then any guard the point
    fails."""
    names = shown_names(row.get("guard", {}))
    slower = [f"{n} {'cell' if n == 1 else 'cells'} slower than {names[g]}"
              for g, n in row.get("guard", {}).items() if n]
    text = _proof_text(row)
    if row.get("pruned"):
        text = f"pruned: {row['pruned']}" + ("" if row.get("verdict") is None else f"; {text}")
    return f"{text}; {', '.join(slower)}" if slower else text


def short_name(symbol: str) -> str:
    """An entry point as reports name it: copy_to_user, clear_user, memcpy
    (tune.run.short_name)."""
    return symbol.removeprefix("__asm_").lstrip("_")


def entry_verdicts(row: dict) -> dict[str, str]:
    """Each entry point of the row's code -> its verdict, "not tried" for
    one not proved yet; {} before its entry points are known (not proved,
    or a record from before tune proved every entry point)."""
    entries = row.get("entries") or {}
    return {s: entries[s]["verdict"] if s in entries else "not tried"
            for s in (row.get("entry_points") or list(entries))}


def _proof_text(row: dict) -> str:
    v = row.get("verdict")
    if v is None:
        if row.get("stale"):
            return "not proved (an earlier prover's unknown)"
        return "not proved (below the top K)" if row.get("expected") is not None else "not evaluated"
    each = entry_verdicts(row)
    proved = [short_name(s) for s, e in each.items() if e == "proved"]
    if v == "proved":
        return f"proved ({', '.join(proved)})" if proved else "proved"
    if v == "partial":
        if row.get("legacy"):
            return ("not proved: only its benched entry point proved, by a tune from before "
                    "every entry point was proved (tune again proves the rest)")
        rest = [short_name(s) for s, e in each.items() if e != "proved"]
        return f"partly proved: {', '.join(proved)} proved, {', '.join(rest)} not tried"
    status = row.get("status") or {}
    # the violated ones first: after one, the proof leaves the rest not checked
    bad = sorted((c for c, s in status.items() if s != "proved" and c != "B2s"),
                 key=lambda c: status[c] != "violated")
    where = f"{short_name(row['decided_by'])} " if row.get("decided_by") and len(each) > 1 else ""
    also = f" ({', '.join(proved)} proved)" if proved else ""
    return f"DISQUALIFIED: {where}{', '.join(bad[:SHOWN_CLAUSES])} {v}{also}"


def speedup(base: dict | None, row: dict) -> float | None:
    if not base or not row.get("expected"):
        return None
    return base["expected"] / row["expected"]


def table_rows(rows: list[dict], baselines: dict[str, dict], top: int) -> list[dict]:
    names = shown_names(baselines)
    out = []
    for rank, r in enumerate([r for r in rows if r["expected"] is not None][:top], 1):
        out.append({"rank": rank, "point": r["label"], "expected_cycles": round(r["expected"], 1),
                    "bytes_per_cycle": round(r["mean_size"] / r["expected"], 3) if r["expected"] else None,
                    "text_bytes": r["text_bytes"], "extable_bytes": r.get("extable_bytes"),
                    **{f"vs {names[b]}": round(speedup(e, r), 3) for b, e in baselines.items()},
                    "proof": status_text(r), "entry_points": entry_verdicts(r)})
    return out


def rich_table(title: str, rows: list[dict], baselines: dict[str, dict], plain: bool):
    from rich import box
    from rich.table import Table
    t = Table(title=title, box=box.ASCII if plain else box.HEAVY_HEAD)
    names = shown_names(baselines)
    cols = ["rank", "point", "expected_cycles", "bytes_per_cycle", "text_bytes",
            *[f"vs {names[b]}" for b in baselines], "proof"]
    for c in cols:
        t.add_column(c.replace("_", " "), justify="left" if c in ("point", "proof") else "right",
                     no_wrap=plain)
    for r in rows:
        t.add_row(*[_fmt(r.get(c)) for c in cols])
    for b, e in baselines.items():
        t.add_row("base", names[b], _fmt(round(e["expected"], 1)),
                  _fmt(round(e["mean_size"] / e["expected"], 3)), _fmt(e["text_bytes"]),
                  *["1.000" if o == b else "" for o in baselines], "")
    return t


def _fmt(v) -> str:
    if v is None:
        return "-"
    return f"{v:.3f}" if isinstance(v, float) and v < 100 else str(v)


def csv_text(rows: list[dict]) -> str:
    buf = io.StringIO()
    # a dict (entry point -> verdict) as one cell: "copy_to_user proved; ..."
    rows = [{k: "; ".join(f"{short_name(s)} {v}" for s, v in x.items()) if isinstance(x, dict)
             else x for k, x in r.items()} for r in rows]
    if rows:
        w = csv.DictWriter(buf, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return buf.getvalue()


def write_report(outdir: Path, run: dict, rows: list[dict], baselines: dict[str, dict],
                 win: dict | None, top: int, max_text: int | None = None) -> list[Path]:
    """report.md and its figures, results.csv/json, winner.copy."""
    outdir.mkdir(parents=True, exist_ok=True)
    shown = table_rows(rows, baselines, top)
    made = [outdir / "results.csv", outdir / "results.json"]
    made[0].write_text(csv_text(table_rows(rows, baselines, len(rows))))
    made[1].write_text(json.dumps({"run": run, "max_text": max_text, "vector_state": vector_state(run),
                                   "rows": rows, "baselines": baselines}, indent=1))
    md = [f"# Tuning report: sweep `{run['sweep']}` of {run['source']}", "",
          f"Profile `{run['profile']}`, workload `{run['workload']}`{_vector_sentence(run)}; "
          f"{sum(r['expected'] is not None for r in rows)} points evaluated, "
          f"{len({r['code'] for r in rows})} distinct routines.  Cycles are modelled by "
          f"copygen's `{run['profile']}` cost profile ({provenance_of(run['profile'])}).", ""]
    guard_names = shown_names(json.loads(run.get("args") or "{}").get("guards", []))
    guards = list(guard_names.values())
    guarded = (f"; nowhere slower than {', '.join(guards)} on the size x alignment grid"
               if guards else "")
    if win:
        entries = ", ".join(short_name(s) for s in win.get("entry_points") or [])
        md += [f"**Winner** (best proved{guarded}): {win['label']}, {win['expected']:.1f} "
               "expected cycles per call; every contract clause proved for every n"
               + (f", of each of its entry points ({entries})" if entries else "")
               + ".  It is `winner.copy`.", ""]
        (outdir / "winner.copy").write_text(win["text"])
        made.append(outdir / "winner.copy")
    else:
        md += ["**No winner**: no evaluated point has every entry point proved" +
               (f" and nowhere slower than {', '.join(guards)}." if guards else "."), ""]
    # the proof column names the entry points; the JSON and CSV have them apart
    cells = [{k: v for k, v in r.items() if k != "entry_points"} for r in shown]
    md += ["| " + " | ".join(cells[0]) + " |", "|" + "---|" * len(cells[0])] if cells else []
    md += ["| " + " | ".join(_fmt(v) for v in r.values()) + " |" for r in cells]
    md += ["", PROVED_NOTE] if cells else []
    md.append("")
    names = shown_names(baselines)
    if win and win.get("grid"):
        for b, e in baselines.items():
            png = outdir / f"heatmap_vs_{_slug(b)}.png"
            figures.heatmap(win["grid"], e["grid"], png,
                            f"winner vs {names[b]}: speed-up per size and alignment")
            made.append(png)
            md += [f"Speed-up of the winner over {names[b]} ({b}; its cycles / the winner's; mean "
                   "over the alignment pairs of each class, warm L1):", "",
                   *grid_table(win["grid"], e["grid"]), "", f"![speed-up vs {names[b]}]({png.name})", ""]
    md += _pareto_section(outdir, run, rows, baselines, win, max_text)
    made.append(outdir / "pareto.png")
    (outdir / "report.md").write_text("\n".join(md))
    return [outdir / "report.md", *made]


def _vector_sentence(run: dict) -> str:
    """The report's words on the vector state, where it can matter."""
    if not vector_note(run):
        return ""
    state = vector_state(run)
    what = {"clean": "no vector call saves and restores the user's vector state",
            "dirty": "every vector call saves and restores the user's dirty vector state"}
    return (f", vector state `{state}` ("
            + what.get(state, f"a share of {state} of the vector calls save and restore the "
                              "user's dirty vector state") + ")")


def _pareto_section(outdir: Path, run: dict, rows: list[dict], baselines: dict[str, dict],
                    win: dict | None, max_text: int | None) -> list[str]:
    """pareto.png and the report's lines on it: the front as a table."""
    labels = {"title": f"sweep {run['sweep']} of {Path(run['source']).name}: "
                       "expected cycles against code size",
              "xlabel": f".text bytes of the tuned {run['kind']} routine",
              "ylabel": f"expected cycles per call ({run['workload']}, {run['profile']})"}
    front = figures.pareto(rows, baselines, outdir / "pareto.png", labels, max_text, win)
    limit = f"; points over --max-text {max_text} B are grey and cannot win" if max_text else ""
    md = [f"Pareto front of expected cycles against the routine's `.text` bytes (no point of "
          f"the sweep is both faster and smaller than a point on it){limit}:", "",
          "| text bytes | expected cycles | point |", "|---|---|---|"]
    md += [f"| {r['text_bytes']} | {r['expected']:.1f} | {r['label']} |" for r in front]
    return md + ["", "![expected cycles against .text bytes](pareto.png)", ""]


def grid_table(grid: dict, base: dict) -> list[str]:
    """Markdown rows: one per size, one column per alignment class."""
    classes = [c for c in grid if c in base]
    sizes = sorted(grid[classes[0]], key=int)
    out = ["| size | " + " | ".join(classes) + " |", "|---" * (len(classes) + 1) + "|"]
    for s in sizes:
        cells = [f"{base[c][s] / grid[c][s]:.2f}x" if grid[c][s] else "-" for c in classes]
        out.append(f"| {s} B | " + " | ".join(cells) + " |")
    return out


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in Path(text).stem)
