"""`.text` bytes per routine of the checked-in strategies.

    python -m bench.tune.text_size [FILE.copy ...] [--out bench/tune/results/text_size.json]
    python -m bench.tune.text_size --front docs/tuning/u74/results.json [--max-text 1024]

Builds each file as `copygen build` does (default: the two kernel
baselines and the two tuned winners) and reads every routine's size from
the linked ELF with measure.size: its symbol's st_size (the code from
SYM_FUNC_START to SYM_FUNC_END, fault exits included, as `nm -S` prints
it) and, apart, its share of `__ex_table`.  Prints a markdown table
(docs/tuning.md, Code size) and writes the figures as JSON.

With --front, reads the rows a tuning report recorded (its results.json)
instead, prints the Pareto front of expected cycles against .text bytes
of the points nowhere slower than the run's guards, and the best such
point within --max-text, and draws pareto.png beside the file again.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent

from bench.exits import exit_status  # noqa: E402
from copygen.gen.build import build_file  # noqa: E402
from copygen.measure.size import routine_sizes  # noqa: E402
from copygen.tune.figures import pareto, pareto_front  # noqa: E402

FILES = ("kernel2021", "pre2021", "u74tuned", "c910tuned")
# the table's columns: copy_from_user is an alias of copy_to_user's code
COLUMNS = ("__asm_copy_to_user", "__clear_user", "memcpy", "memmove", "memset")


def measure(paths: list[Path]) -> dict[str, dict[str, dict]]:
    """file stem -> symbol -> {kind, text_bytes, extable_bytes}."""
    out = {}
    with tempfile.TemporaryDirectory(prefix="copygen-text-") as d:
        for path in paths:
            elf = build_file(path, Path(d)).elf
            out[path.stem] = {s: {k: v for k, v in z.as_dict().items() if k != "routine"}
                              for s, z in routine_sizes(elf).items()}
    return out


def table(sizes: dict[str, dict[str, dict]]) -> list[str]:
    """Markdown: a row per file, .text bytes per routine and their sum, and
    the file's __ex_table bytes (every routine's share)."""
    rows = ["| strategy | " + " | ".join(COLUMNS) + " | .text total | __ex_table |",
            "|---" * (len(COLUMNS) + 3) + "|"]
    for stem, routines in sizes.items():
        cells = [routines[c]["text_bytes"] if c in routines else None for c in COLUMNS]
        total = sum(c for c in cells if c is not None)
        extable = sum(routines[c]["extable_bytes"] for c in COLUMNS if c in routines)
        rows.append(f"| {stem} | " + " | ".join("-" if c is None else f"{c:,}" for c in cells)
                    + f" | {total:,} | {extable:,} |")
    return rows


def front(results: Path, max_text: int | None) -> int:
    """The front of a recorded run, its best point within `max_text`, the plot redrawn."""
    rec = json.loads(results.read_text())
    rows = [{**r, "text_bytes": r.get("text_bytes", r.get("code_bytes"))} for r in rec["rows"]
            if r.get("expected") is not None]
    clean = [r for r in rows if not any((r.get("guard") or {}).values())]
    print(f"{len(rows)} points, {len(clean)} nowhere slower than the guards; their front:")
    print("| .text bytes | expected cycles | proof | point |\n|---|---|---|---|")
    for r in pareto_front(clean):
        print(f"| {r['text_bytes']:,} | {r['expected']:.1f} | {r.get('verdict') or '-'} | {r['label']} |")
    fits = [r for r in clean if max_text is None or r["text_bytes"] <= max_text]
    best = min(fits, key=lambda r: r["expected"]) if fits else None
    print(f"best within {max_text} B: " + (f"{best['text_bytes']} B, {best['expected']:.1f} cycles, "
                                          f"{best['label']}" if best else "none"))
    run = rec["run"]
    base = {b: {**e, "text_bytes": e.get("text_bytes", e.get("code_bytes"))}
            for b, e in rec["baselines"].items()}
    for r in rows:
        r["pruned"] = max_text is not None and r["text_bytes"] > max_text
    win = next((r for r in rows if r.get("verdict") == "proved" and not r["pruned"]
                and not any((r.get("guard") or {}).values())), None)
    labels = {"title": f"sweep {run['sweep']}: expected cycles against code size",
              "xlabel": f".text bytes of the tuned {run['kind']} routine",
              "ylabel": f"expected cycles per call ({run['workload']}, {run['profile']})"}
    pareto(rows, base, results.with_name("pareto.png"), labels, max_text, win)
    print(f"wrote {results.with_name('pareto.png')}")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="*", type=Path,
                    default=[ROOT / "examples" / f"{f}.copy" for f in FILES])
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "tune" / "results" / "text_size.json")
    ap.add_argument("--front", type=Path, help="a tuning report's results.json")
    ap.add_argument("--max-text", type=int, default=None, help="with --front: a .text limit")
    args = ap.parse_args()
    if args.front:
        return front(args.front, args.max_text)
    sizes = measure(args.files)
    print("\n".join(table(sizes)))
    result = {"command": "python -m bench.tune.text_size", "counted": "st_size of each symbol "
              "(fault exits included); extable_bytes: its __ex_table entries, not .text",
              "files": {stem: str(p.relative_to(ROOT)) if p.is_relative_to(ROOT) else str(p)
                        for stem, p in zip(sizes, args.files)}, "sizes": sizes}
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(exit_status(main))
