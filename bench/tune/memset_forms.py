"""Which C memset can match a kernel's hand-written memset.S, cell by cell.

    python -m bench.tune.memset_forms --kernel-tree ~/.cache/copygen/linux-source-6.12

Issue 36 asks that the generated string.c be slower than Linux 6.12's
arch/riscv/lib/memset.S in no cell (sizes 8 B-8 KiB, each dst offset).
That memset.S stores one word a cycle from 16 bytes up: after the byte
head it jumps into a run of 32 stores at the entry that leaves exactly
the remaining words (Duff's device), so neither the remainder nor the
loop exit costs a mispredicted branch.  This script writes the C forms
a lowering could emit, compiles each with the toolchain and flags the
generated string.c gets (gen.toolchain.compile_c), runs every cell in the
emulator under the profile and counts the cells slower than the kernel's:

  tuned    the checked-in strategy's memset as generated (--strategy):
           C in string.c, or assembly in memset.S (`tail jump`)
  classes  loops of 32, 4 and 1 words
  steps    a loop of 32 words, then one block each of 16, 8, 4, 2, 1
           words as the bits of what is left say (unlikely())
  duff     C's own Duff's device: a switch into a run of 32 stores that a
           do-while loops over (GCC makes it a jump table: a load of the
           table entry, then jr), byte head unlikely()
  duff-head  the same with the byte head laid in line, written as the
           kernel's (one compare a byte)

Each C form replaces `__memset` in the strategy's string.c (or is added
to it, when the strategy's memset is in memset.S) and starts as a C
memset with the kernel's threshold of 16 does (the threshold test and the
replicated word); the rest of the file is unchanged.  Writes
bench/tune/results/memset_forms_<profile>.json.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent

from bench.exits import exit_status  # noqa: E402
from copygen.gen import toolchain  # noqa: E402
from copygen.gen.build import build_assembly, build_cached  # noqa: E402
from copygen.measure.bench import Bench, Case  # noqa: E402
from copygen.tune.evaluate import GRID_SIZES  # noqa: E402

HEAD = """		while (unlikely((uintptr_t)d & WORD_MASK)) {
			*d++ = c;
			count--;
		}
"""
KERNEL_HEAD = """		if ((uintptr_t)d & WORD_MASK) {
			u8 *a = (u8 *)(((uintptr_t)d + WORD_MASK) & ~WORD_MASK);

			count -= a - d;
			do
				*d++ = c;
			while (d != a);
		}
"""
EPILOGUE = """	}
	while (count--)
		*d++ = c;
	return s;
}
"""


def _stores(k: int, indent: str) -> str:
    return "".join(f"{indent}dw[{i}] = w;\n" for i in range(k))


def _loop(k: int) -> str:
    return (f"\t\twhile (count >= {k} * SZREG) {{\n\t\t\tword_t *dw = (word_t *)d;\n\n"
            + _stores(k, "\t\t\t") + f"\t\t\td += {k} * SZREG;\n\t\t\tcount -= {k} * SZREG;\n"
            "\t\t}\n")


PROLOGUE = """void *__memset(void *s, int c, size_t count)
{
	u8 *d = s;

	if (count >= 16) {
		word_t w = (u8)c;

		w |= w << 8;
		w |= w << 16;
		w |= w << 32;
"""
ALIAS = "void *memset(void *s, int c, size_t count) __weak __alias(__memset);\n"


def classes(pro: str) -> str:
    return pro + HEAD + _loop(32) + _loop(4) + _loop(1) + EPILOGUE


def steps(pro: str) -> str:
    body = pro + HEAD + _loop(32)
    for k in (16, 8, 4, 2, 1):
        body += (f"\t\tif (unlikely(count & ({k} * SZREG))) {{\n"
                 "\t\t\tword_t *dw = (word_t *)d;\n\n" + _stores(k, "\t\t\t")
                 + f"\t\t\td += {k} * SZREG;\n\t\t}}\n")
    return body + "\t\tcount &= WORD_MASK;\n" + EPILOGUE


def duff(pro: str, head: str) -> str:
    """A switch on the words left modulo 32 into a run of 32 stores; case r
    stores the last r words of a block whose base is r words below d."""
    body = (pro + head
            + "\t\tword_t *end = (word_t *)(d + (count & ~WORD_MASK));\n"
            "\t\tword_t *dw = (word_t *)d + ((count / SZREG) & 31) - 32;\n\n"
            "\t\tswitch ((count / SZREG) & 31) {\n\t\tcase 0:\n\t\t\tdw += 32;\n"
            "\t\t\tif (dw == end)\n\t\t\t\tbreak;\n\t\t\tdo {\n\t\t\t\tdw[0] = w;\n")
    for i in range(1, 32):
        body += "\t\t\t\t__attribute__((__fallthrough__));\n"
        body += f"\t\tcase {32 - i}:\n\t\t\t\tdw[{i}] = w;\n"
    body += ("\t\t\t\tdw += 32;\n\t\t\t} while (dw != end);\n\t\t}\n"
             "\t\td = (u8 *)end;\n\t\tcount &= WORD_MASK;\n")
    return body + EPILOGUE


FORMS = {"classes": classes, "steps": steps, "duff": lambda pro: duff(pro, HEAD),
         "duff-head": lambda pro: duff(pro, KERNEL_HEAD)}


def with_memset(string_c: str, memset: str) -> str:
    """string.c with `memset` as its __memset (added, with its weak alias,
    when memset is in memset.S)."""
    if "void *__memset(" not in string_c:
        return string_c + "\n" + memset + ALIAS
    start = string_c.index("void *__memset(")
    end = string_c.index("\n}\n", start) + 3
    return string_c[:start] + memset + string_c[end:]


# what a generated string.c has above its functions, for a strategy whose
# string functions are all in assembly (no string.c to put a form into)
PREAMBLE = """#include <linux/compiler.h>
#include <linux/export.h>
#include <linux/string.h>
#include <linux/types.h>

#define SZREG\t\tsizeof(unsigned long)
#define WORD_MASK\t(SZREG - 1)

typedef unsigned long __attribute__((__may_alias__)) word_t;
"""


def build_form(built, memset: str | None, work: Path, name: str) -> Path:
    """The strategy's string.c with a C form's memset, or (None) as it was
    built, with its memset.S when it has one."""
    if memset is None:
        return built.elf
    outdir = work / name
    outdir.mkdir(parents=True, exist_ok=True)
    src = outdir / "string.c"
    string_c = built.outdir / "string.c"
    src.write_text(with_memset(string_c.read_text() if string_c.exists() else PREAMBLE, memset))
    obj = outdir / "string.o"
    toolchain.compile_c(src, built.outdir / "include", obj)
    elf = outdir / f"{name}.elf"
    # the strategy's other string objects (an assembly memcpy, which
    # memmove calls), but not its memset
    others = [o for o in built.objects if o.name in ("memcpy.o",)]
    toolchain.link([obj, *others], built.outdir / "copygen.ld", elf)
    return elf


def cells(elf: Path, profile: str) -> dict[str, dict[int, int]]:
    """{dst+k: {size: cycles}}: memset at every dst offset, a machine per call."""
    return {f"dst+{dst}": {n: Bench(elf, profile, n).run(Case("memset", n, 0, dst)).cycles
                           for n in GRID_SIZES} for dst in range(8)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kernel-tree", required=True, type=Path,
                    help="a Linux tree whose arch/riscv/lib/memset.S is the baseline")
    ap.add_argument("--strategy", default=str(ROOT / "examples" / "u74tuned.copy"),
                    help="the .copy whose string.c the forms go into (and whose memset is `tuned`)")
    ap.add_argument("--profile", default="u74")
    ap.add_argument("--out", type=Path, default=None, help="JSON path (default: bench/results/)")
    args = ap.parse_args(argv)
    memset_s = args.kernel_tree / "arch" / "riscv" / "lib" / "memset.S"
    if not memset_s.is_file():
        raise SystemExit(f"{memset_s}: not found (give --kernel-tree the top of a Linux tree)")
    out = args.out or ROOT / "bench" / "tune" / "results" / f"memset_forms_{args.profile}.json"
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        built = build_cached(args.strategy, work / "cache")
        kernel = cells(build_assembly([memset_s], work / "kernel", "kernel"), args.profile)
        forms = {"tuned": None, **{k: f(PROLOGUE) for k, f in FORMS.items()}}
        report = {"command": "python -m bench.tune.memset_forms --kernel-tree DIR"
                             + ("" if args.profile == "u74" else f" --profile {args.profile}"),
                  "profile": args.profile, "strategy": Path(args.strategy).name,
                  "baseline": "memset.S", "kernel": kernel, "forms": {}}
        print(f"{'form':10} {'slower':>6}  cycles at dst+0 / dst+1 (kernel's): "
              + " ".join(f"{n}" for n in (16, 72, 256, 8192)))
        for name, memset in forms.items():
            mine = cells(build_form(built, memset, work, name), args.profile)
            slower = [{"class": c, "size": n, "cycles": v, "baseline": kernel[c][n]}
                      for c, row in mine.items() for n, v in row.items() if v > kernel[c][n]]
            report["forms"][name] = {"slower": len(slower), "of": 8 * len(GRID_SIZES),
                                     "cycles": mine, "slower_cells": slower}
            shown = " ".join(f"{mine[c][n]}/{kernel[c][n]}"
                             for c in ("dst+0", "dst+1") for n in (16, 72, 256, 8192))
            print(f"{name:10} {len(slower):>6}  {shown}")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(exit_status(main))
