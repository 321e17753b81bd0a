"""Where a copy routine's cycles go above issue 36's bounds, phase by phase.

    python -m bench.calibration.bound_gap examples/u74tuned.copy --profile u74 \
        [--routine memcpy] [--case SIZE:SRC:DST ...] [--trace] [--out FILE]

Runs `__asm_copy_to_user` of the strategy (or --routine: a kind the bench
calls, e.g. memcpy) for each case (size, src and dst offsets mod 64) warm,
as `copygen bench` does, with an observer beside the cost model that
charges every cycle to the instruction that took it, and splits each
instruction's cycles by cause:

* issue: the cycle it opened (0 when it paired with the one before);
* stall: cycles it waited for an operand, by producer: load_to_use (a
  load's result read by an ALU op, a branch or an address), load_to_store
  (a load's result as store data: the full load latency, no bypass),
  alu (any other producer), drain (an sstatus access waiting for every
  result in flight);
* bubble: mispredict (static prediction: backward taken, forward not) or
  serial (the cycles an sstatus access keeps the pipeline empty);
* dynamic: cache misses and misaligned accesses;
* ooo: on an out-of-order profile (c910, p550) the cycles by which an
  instruction moves the retire time of the engine (emu.timing.ooo), not split.

Instructions are grouped by the routine's own labels (assembled again with
`-Wa,-L` and linked with `--discard-none`: the same code, with its `.L`
labels in the symbol table) and by role: sum (the two sstatus accesses and
their `li`), return, loop (memory operations in a loop, i.e. between a
numeric label and the backward branch to it), loop_alu (other ALU work in
a loop: the shift copy's shifts and ors), loop_overhead (a loop's branch
and pointer increments), then entry, head, tail by label.  Each case is
compared with its bound (bench/tune/tune_goals.py): B(n) for aligned and
co-aligned, S(n) for mutually misaligned.

Writes bench/calibration/results/bound_gap_<profile>.json (or --out).
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent

from bench.exits import exit_status  # noqa: E402
from bench.tune.tune_goals import bounds  # noqa: E402
from copygen.emu.timing.cost import EMPTY_STATE, CostModel, _control_bubble, uop  # noqa: E402
from copygen.emu.insn.decode import disassemble  # noqa: E402
from copygen.emu.elf import read_elf  # noqa: E402
from copygen.emu.timing.profile import load_profile  # noqa: E402
from copygen.gen import toolchain  # noqa: E402
from copygen.gen.build import build_cached  # noqa: E402
from copygen.measure.bench import Bench, Case, align_class  # noqa: E402

ROUTINE = "__asm_copy_to_user"
CASES = ((128, 0, 0), (1024, 0, 0), (8192, 0, 0), (512, 3, 3), (64, 3, 3),
         (512, 1, 0), (1024, 1, 0), (1024, 3, 5))
CAUSES = ("issue", "load_to_use", "load_to_store", "alu", "drain", "mispredict",
          "serial", "dynamic", "ooo")
POINTERS = {10, 11}   # a0, a1: the loops' pointer increments
BRANCHES = frozenset("beq bne blt bge bltu bgeu".split())


def labelled_elf(strategy: Path, work: Path) -> Path:
    """The strategy's ELF linked again from a uaccess.o that keeps its .L labels."""
    res = build_cached(strategy, work / "cache")
    uaccess = res.outdir / "uaccess.S"
    obj = work / "uaccess-labels.o"
    toolchain.run("gcc", ["-c", *toolchain.ASFLAGS, "-Wa,-L", "-I", res.outdir / "include",
                          uaccess, "-o", obj])
    others = [o for o in res.objects if o.name != "uaccess.o"]
    elf = work / "labels.elf"
    toolchain.run("ld", ["--discard-none", "-T", res.outdir / "copygen.ld", obj, *others,
                         "-o", elf])
    return elf


def code_labels(elf: Path, routine: str) -> tuple[list[tuple[int, str]], list[int]]:
    """(sorted (address, name) of the routine's named labels, addresses of its
    numeric labels: the loop heads)."""
    image = read_elf(elf)
    start = image.address_of(routine)
    end = start + image.sizes[routine]
    named, loops = [], []
    for name, addr in image.symbols.items():
        if not start <= addr < end or name.startswith(".Luser_access"):
            continue
        if "\x02" in name:
            loops.append(addr)
        elif name.startswith(".L"):
            named.append((addr, name[2:]))
    return sorted(named), sorted(loops)


class Tracer:
    """Observer after the cost model: one row per retired instruction."""

    def __init__(self, machine, entry: int) -> None:
        self.m, self.entry, self.p = machine, entry, machine.profile
        self.rows: list[dict] = []

    def access(self, addr, size, store) -> None:
        pass

    def on_fault(self) -> None:
        pass

    def on_insn(self, insn, taken: bool) -> None:
        pc, cost = self.m.hart.pc, self.m.cost
        if pc == self.entry:
            self.rows, self.prev, self.total = [], EMPTY_STATE, 0
        in_order = isinstance(cost, CostModel)
        # cycles() counts one more than it issues on the in-order model;
        # on the out-of-order one it is the retire time of the last insn
        total = cost.issue_cycles + cost.stall_cycles if in_order else cost.cycles - 1
        row = {"pc": pc, "insn": disassemble(insn, pc), "name": insn.name, "rd": insn.rd,
               "imm": insn.imm, "taken": taken, "branch": insn.name in BRANCHES,
               "cycles": total - self.total}
        if in_order:
            row.update(self.split(insn, taken, row["cycles"]))
        else:
            row.update(dict.fromkeys(CAUSES, 0), ooo=row["cycles"])
        self.rows.append(row)
        self.prev, self.total = cost.states[cost.state], total

    def split(self, insn, taken: bool, cycles: int) -> dict:
        """The instruction's cycles by cause, re-deriving the issue model's step
        (emu.timing.cost.schedule) from the state before it."""
        p, u = self.p, uop(insn, self.p)
        slots, mem, pend = self.prev
        ready = {reg: (c, by_load) for reg, c, by_load in pend}
        early, cause = 0, "alu"
        for reg, late, late_load in u.srcs:
            c, by_load = ready.get(reg, (0, False))
            need = c - (late_load if by_load else late)
            if need > early:
                early = need
                store_data = u.cls == "store" and late > 0
                cause = ("load_to_store" if store_data else "load_to_use") if by_load else "alu"
        if u.cls == "serial":
            drain = max((c for c, _ in ready.values()), default=0)
            if drain > early:
                early, cause = drain, "drain"
        need = early - p.alu_late if u.late_ok else early
        full = slots >= p.issue_width or mem + u.mem > p.mem_pipes
        adv = max(need, 1 if full else 0)
        issue = 1 if full and adv else 0
        bubble, _ = _control_bubble(u, taken, p)
        out = dict.fromkeys(CAUSES, 0)
        out["issue"], out[cause] = issue, out[cause] + adv - issue
        out["mispredict" if u.cls == "branch" else "serial"] += bubble
        out["dynamic"] = cycles - adv - bubble
        return out


MEM = frozenset("ld sd lw lwu sw lh lhu sh lb lbu sb".split())


def role(row: dict, phase: str, in_loop: bool) -> str:
    """The coarse group an instruction's cycles count in."""
    name = row["name"]
    if name in ("csrrs", "csrrc") or (name == "lui" and row["rd"] == 31):
        return "sum"
    if name == "jalr" or (phase.endswith("done") and row["rd"] == 10):
        return "return"
    if in_loop:
        if name in MEM:
            return "loop"
        if row["branch"] or (name == "addi" and row["rd"] in POINTERS):
            return "loop_overhead"
        return "loop_alu"
    if "tail" in phase or "pieces" in phase or "bytes" in phase:
        return "tail"
    return "head" if "head" in phase and "done" not in phase else "entry"


def attribute(rows: list[dict], labels, loops) -> None:
    """Give each row its phase (the last named label at or before it) and role;
    a loop spans a numeric label up to a backward branch to it (taken or,
    in a loop run once, not)."""
    spans = {(r["pc"] + r["imm"], r["pc"]) for r in rows
             if r["branch"] and r["imm"] < 0 and r["pc"] + r["imm"] in loops}
    for row in rows:
        pc = row["pc"]
        row["phase"] = next((n for a, n in reversed(labels) if a <= pc), "entry")
        row["role"] = role(row, row["phase"], any(a <= pc <= b for a, b in spans))


def summarise(rows: list[dict], key: str) -> dict:
    out: dict[str, dict] = defaultdict(lambda: dict.fromkeys(("insns", "cycles", "mem") + CAUSES, 0))
    for r in rows:
        s = out[r[key]]
        s["insns"] += 1
        s["mem"] += r["name"] in MEM
        for k in ("cycles",) + CAUSES:
            s[k] += r[k]
    return {k: {f: v for f, v in s.items() if v} for k, s in out.items()}


def run_case(bench: Bench, tracer: Tracer, case: tuple[int, int, int], labels, loops,
             B, S, routine: str = ROUTINE) -> dict:
    n, src, dst = case
    sample = bench.run(Case(routine, n, src, dst))
    rows = tracer.rows
    assert sum(r["cycles"] for r in rows) + 1 == sample.cycles, (case, sample.cycles)
    attribute(rows, labels, loops)
    cls = align_class(src, dst)
    bound = S(n) if cls == "misaligned" else B(n)
    return {"size": n, "src": src, "dst": dst, "class": cls, "cycles": sample.cycles,
            "insns": len(rows), "bound": bound, "bound_is": "S(n)" if cls == "misaligned" else "B(n)",
            "above_bound": sample.cycles - bound,
            "roles": summarise(rows, "role"), "phases": summarise(rows, "phase"), "rows": rows}


def show(r: dict, trace: bool) -> None:
    print(f"\n{r['class']} {r['size']} B, src+{r['src']} dst+{r['dst']}: {r['cycles']} cycles, "
          f"{r['insns']} instructions; {r['bound_is']} = {r['bound']:g}, "
          f"{r['above_bound']:+g} (the model counts one cycle more than it issues)")
    head = f"  {'group':24s}{'insns':>6s}{'cycles':>7s}{'mem':>5s}" + "".join(
        f"{c[:9]:>10s}" for c in CAUSES)
    for title, key in (("by role", "roles"), ("by label", "phases")):
        print(f"  {title}\n{head}")
        for g, s in r[key].items():
            print(f"  {g:24s}{s.get('insns', 0):6d}{s.get('cycles', 0):7d}{s.get('mem', 0):5d}"
                  + "".join(f"{s.get(c, 0):10d}" for c in CAUSES))
    if trace:
        for row in r["rows"]:
            why = " ".join(f"{c}={row[c]}" for c in CAUSES if row[c] and c != "issue")
            print(f"    {row['pc']:#x} {row['cycles']:3d} {row['role']:>13s} {row['phase']:>20s}"
                  f"  {row['insn']:32s} {why}")


def parse_case(text: str) -> tuple[int, int, int]:
    try:
        n, src, dst = (int(v, 0) for v in text.split(":"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: give SIZE:SRC:DST, e.g. 1024:3:5") from None
    return n, src, dst


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("strategy", type=Path)
    ap.add_argument("--profile", default="u74")
    ap.add_argument("--case", type=parse_case, action="append",
                    help="SIZE:SRC:DST (offsets 0..63); repeatable; default: a set of goal cells")
    ap.add_argument("--routine", default=ROUTINE,
                    help=f"the routine to run (default {ROUTINE}); e.g. memcpy")
    ap.add_argument("--trace", action="store_true", help="print every instruction of each case")
    ap.add_argument("--out", type=Path, help="the JSON to write (default: "
                    "bench/calibration/results/bound_gap_<profile>.json)")
    args = ap.parse_args()
    cases = args.case or CASES
    B, S = bounds(args.profile)
    load_profile(args.profile)
    with tempfile.TemporaryDirectory() as tmp:
        elf = labelled_elf(args.strategy, Path(tmp))
        labels, loops = code_labels(elf, args.routine)
        bench = Bench(elf, args.profile, max(n for n, _, _ in cases))
        tracer = Tracer(bench.machine, bench.machine.symbol(args.routine))
        bench.machine.attach(tracer)
        results = [run_case(bench, tracer, c, labels, loops, B, S, args.routine) for c in cases]
    for r in results:
        show(r, args.trace)
        if not args.trace:
            del r["rows"]
    out = args.out or ROOT / "bench" / "calibration" / "results" / f"bound_gap_{args.profile}.json"
    out.write_text(json.dumps({"strategy": str(args.strategy), "profile": args.profile,
                               "command": " ".join(["python", "bench/calibration/bound_gap.py"] + sys.argv[1:]),
                               "causes": CAUSES, "cases": results}, indent=1) + "\n")
    print(f"\nwrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(exit_status(main))
