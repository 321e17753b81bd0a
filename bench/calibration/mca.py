"""Cross-check of the u74 issue model against llvm-mca, loop by loop.

Builds every example (gen.build, into build/mca/) and the calibration
reference (bench/calibration/reference/ref2021.S), disassembles each linked ELF with
objdump, and takes every steady-state loop: the instructions from a
backward conditional branch's target to that branch.  Each loop body goes
to `llvm-mca -mtriple=riscv64 -mcpu=sifive-u74` (the branch retargeted to a
local label) and through emu/timing/cost.py's `schedule` with the profile (back
branch taken, steady state).  Prints a Markdown table of cycles per
iteration side by side; writes bench/calibration/results/mca.json.

    python -m bench.calibration.mca [--profile u74] [--mcpu sifive-u74]

Imports: emu (decoder, cost model, ELF loading), gen (build, toolchain
driver), bench/calibration/calibrate.py (the reference build), the standard library.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent

from bench.exits import exit_status  # noqa: E402
from copygen import emu  # noqa: E402
from calibrate import build_reference  # noqa: E402
from copygen.emu.timing.cost import EMPTY_STATE, schedule, uop  # noqa: E402
from copygen.gen import toolchain  # noqa: E402
from copygen.gen.build import build_file  # noqa: E402

BUILD = ROOT / "build" / "mca"
RESULTS = ROOT / "bench" / "calibration" / "results" / "mca.json"
_FUNC = re.compile(r"^[0-9a-f]+ <(?P<name>[^>]+)>:$")
_INSN = re.compile(r"^\s*(?P<addr>[0-9a-f]+):\s+(?P<mn>\S+)\s*(?P<ops>.*)$")
_TARGET = re.compile(r"(?P<hex>[0-9a-f]+) <[^>]+>$")


@dataclass(frozen=True)
class Loop:
    source: str
    function: str
    start: int
    kind: str
    insns: int
    model: float          # cycles per iteration, emu/timing/cost.py
    mca: float | None     # cycles per iteration, llvm-mca
    asm: str


def parse_objdump(text: str) -> list[tuple[str, int, str, str]]:
    """(function, address, mnemonic, operands) of every instruction."""
    out, func = [], "?"
    for line in text.splitlines():
        if m := _FUNC.match(line.strip()):
            func = m["name"]
        elif m := _INSN.match(line):
            out.append((func, int(m["addr"], 16), m["mn"], m["ops"].split("#")[0].strip()))
    return out


def find_loops(insns: list[tuple[str, int, str, str]]) -> list[list[tuple[str, int, str, str]]]:
    """Bodies of innermost loops closed by a backward conditional branch."""
    loops = []
    for i, (func, addr, mn, ops) in enumerate(insns):
        t = _TARGET.search(ops)
        if not (mn.startswith("b") and t and int(t["hex"], 16) <= addr):
            continue
        start = int(t["hex"], 16)
        body = [x for x in insns[: i + 1] if start <= x[1] <= addr and x[0] == func]
        if any(_TARGET.search(x[3]) and x[2].startswith("b") and int(_TARGET.search(x[3])["hex"], 16) <= x[1]
               for x in body[:-1]):
            continue  # an outer loop: its inner loop is measured on its own
        loops.append(body)
    return loops


def classify(body: list[tuple[str, int, str, str]]) -> str:
    mns = [x[2] for x in body]
    stores_zero = any(m.startswith("s") and x[3].startswith("zero") for m, x in zip(mns, body))
    if "srl" in mns and "sll" in mns:
        return "shift copy"
    if "ld" in mns and "sd" in mns:
        return f"word copy x{mns.count('sd')}"
    if "sd" in mns:
        return f"word {'clear' if stores_zero else 'fill'} x{mns.count('sd')}"
    if "sb" in mns:
        if "lbu" in mns or "lb" in mns:
            return "byte copy"
        return "byte clear" if stores_zero else "byte fill"
    return "other"


def mca_asm(body: list[tuple[str, int, str, str]]) -> str:
    lines = [".Ltop:"]
    for _, addr, mn, ops in body:
        t = _TARGET.search(ops)
        if t:
            label = ".Ltop" if int(t["hex"], 16) == body[0][1] else ".Lout"
            ops = ops[: t.start()] + label
        lines.append(f"\t{mn}\t{ops}")
    return "\n".join(lines + [".Lout:"]) + "\n"


def run_mca(asm: str, mcpu: str, iterations: int = 200) -> float | None:
    proc = subprocess.run(["llvm-mca", "-mtriple=riscv64", f"-mcpu={mcpu}", f"-iterations={iterations}"],
                          input=asm, capture_output=True, text=True)
    m = re.search(r"Total Cycles:\s+(\d+)", proc.stdout)
    return int(m[1]) / iterations if proc.returncode == 0 and m else None


def model_cycles(machine: emu.Machine, body: list[tuple[str, int, str, str]], profile, n: int = 60) -> float:
    """Steady-state cycles per iteration: the back branch taken, others not."""
    insns = [emu.decode(int.from_bytes(machine.read(addr, 4), "little"), addr) for _, addr, _, _ in body]
    state, marks, t = EMPTY_STATE, [], 0
    for _ in range(n):
        for k, insn in enumerate(insns):
            adv, state = schedule(state, uop(insn, profile), k == len(insns) - 1, profile)
            t += adv
        marks.append(t)
    return (marks[-1] - marks[n // 2]) / (n - 1 - n // 2)


def loops_of(source: str, elf: Path, profile, mcpu: str) -> list[Loop]:
    machine = emu.Machine.from_elf(elf)
    out = []
    for body in find_loops(parse_objdump(toolchain.disassemble(elf))):
        asm = mca_asm(body)
        out.append(Loop(source, body[0][0], body[0][1], classify(body), len(body),
                        round(model_cycles(machine, body, profile), 2), run_mca(asm, mcpu), asm))
    return out


def markdown(loops: list[Loop], profile: str, mcpu: str, version: str) -> str:
    """One row per distinct loop of a function (head and tail byte loops are often twins)."""
    lines = [f"Cycles per iteration: emu/timing/cost.py `{profile}` vs `llvm-mca -mcpu={mcpu}` ({version}):", "",
             "| source | function | loop | insns | model | llvm-mca | mca / model |", "|---|---|---|---|---|---|---|"]
    rows: dict[tuple, int] = {}
    for lp in loops:
        func = "__asm_copy_{to,from}_user" if lp.function.startswith("__asm_copy_") else lp.function
        rows[(lp.source, func, lp.kind, lp.insns, lp.model, lp.mca)] = rows.get(
            (lp.source, func, lp.kind, lp.insns, lp.model, lp.mca), 0) + 1
    for (source, func, kind, n, model, mca), count in rows.items():
        twice = f" (x{count})" if count > 1 else ""
        m = f"{mca:.2f}" if mca is not None else "-"
        rel = f"{mca / model:.2f}" if mca else "-"
        lines.append(f"| {source} | {func} | {kind}{twice} | {n} | {model:.2f} | {m} | {rel} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--profile", default="u74_spec")
    ap.add_argument("--mcpu", default="sifive-u74")
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args(argv)
    if not shutil.which("llvm-mca"):
        print("llvm-mca not found: apt-get install llvm", file=sys.stderr)
        return 2
    version = subprocess.run(["llvm-mca", "--version"], capture_output=True, text=True).stdout
    version = re.search(r"LLVM version (\S+)", version)[0] if "LLVM version" in version else "unknown"
    profile = emu.load_profile(args.profile)
    loops = []
    for copy in sorted((ROOT / "examples").glob("*.copy")):
        loops += loops_of(f"examples/{copy.name}", build_file(copy, BUILD).elf, profile, args.mcpu)
    loops += loops_of("bench/calibration/reference/ref2021.S", build_reference(BUILD), profile, args.mcpu)
    print(markdown(loops, args.profile, args.mcpu, version))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"profile": args.profile, "mcpu": args.mcpu, "llvm_mca": version,
                                    "command": "python -m bench.calibration.mca",
                                    "loops": [asdict(lp) for lp in loops]}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(exit_status(main))
