"""Lowering of an assembly memset (`tail jump`): Phases -> ir.Function.

A C memset cannot store the words left after its last whole block without
branches that the static predictor of an in-order core gets wrong (GCC
makes a switch a table load and a jump, bench/tune/memset_forms.py measures
it).  This memset enters its run of `words unroll` stores at the store
that leaves exactly the words to store (Duff's device): the first pass
stores the words beyond whole runs, every later pass a whole run, and
neither the remainder nor the loop's exit costs a mispredicted branch.

Layout (forward branches not taken on the path of an aligned call):

  entry      t0 = dst (a0 is returned as it came); n below the
             threshold -> the byte loop (three instructions: one
             retire group of a three-wide core before the loop)
  replicate  end = dst + n; the byte into every byte of a1
  alignment  a misaligned dst -> the head, out of line
  run entry  word end = end & -SZREG; skip = (t0 - word end) mod run
             bytes; none -> the run's top (whole runs need no computed
             jump); else t0 -= skip; jump skip/2 bytes into the run
             (4 bytes of code per 8-byte store: the run is `norvc`)
  run        `unroll` stores, t0 += run, while t0 < word end
  done       dst == end -> return, else the tail
  tail       a byte, a halfword and a word, aligned, that end at end
  bytes      small sizes: none, or end = dst + n and one byte at a
             time up to it, return
  head       a byte, a halfword and a word, aligned, from dst up to the
             next word boundary, and the word after it; then back to
             the run entry, or to done if no whole word is left

Head and tail store their bytes without a loop or a branch: the stores
overlap (memset stores one value, so a byte stored twice is harmless) and
stay inside [dst, end) since the threshold leaves at least 2 * SZREG - 1
bytes.  The head's pieces may run past the word boundary into the next
word, which it therefore stores too: what is stored before the run is
then exactly [dst, cursor), the form of the verifier's loop invariant.

On the aligned path the threshold leaves a whole word, so the entry
never tests for "no words": a skip of 0 stores a whole run, of which
every word is below the word end.

Registers: a0 dst (returned), a1 the byte then the replicated word, a2 n,
t0 cursor, a6 end, a3 word end, a4 skip, a5 the jump target.

Role: decisions only; the file around it is templates/string_function.S.j2's.
May import gen.emission.ir, gen.front.strategy, gen.lower.registers, gen.phases.pieces.
"""
from __future__ import annotations

from copygen.gen.emission.ir import Function, Insn, Label, Phase
from copygen.gen.front.strategy import SZREG, Phases, Target
from copygen.gen.lower.registers import honour
from copygen.gen.phases.pieces import head_stores

CUR, END, WEND, SKIP, TARGET = "t0", "a6", "a3", "a4", "a5"
PFX = "memset"


def _entry(p: Phases) -> Phase:
    return Phase(None, "Entry",
                 (f"Sizes below {p.threshold} take the byte loop; a0 stays the return value.",),
                 (f"if (n < {p.threshold}) goto bytes;",),
                 ((CUR, "the cursor"),),
                 (Insn("mv", (CUR, "a0")),
                  Insn("sltiu", (SKIP, "a2", str(p.threshold))),
                  Insn("bnez", (SKIP, f".L{PFX}_bytes"))))


def _replicate() -> Phase:
    body = [Insn("add", (END, "a0", "a2")), Insn("andi", ("a1", "a1", "0xff"))]
    for shift in (8, 16, 32):
        body += [Insn("slli", (SKIP, "a1", str(shift))), Insn("or", ("a1", "a1", SKIP))]
    return Phase(None, "Replicate", ("The end, and the byte into every byte of a word.",),
                 ("end = dst + n;", "c = (u8)c; c |= c << 8; c |= c << 16; c |= c << 32;"),
                 ((END, "dst + n"),), tuple(body))


def _alignment() -> Phase:
    return Phase(None, "Alignment check", ("A misaligned dst takes the head, out of line.",),
                 ("if (dst & (SZREG - 1)) goto head;",), (),
                 (Insn("andi", (SKIP, CUR, "SZREG-1")),
                  Insn("bnez", (SKIP, f".L{PFX}_head")),
                  Label(f".L{PFX}_aligned")))


def _run_entry(k: int) -> Phase:
    run = k * SZREG
    return Phase(None, "Run entry",
                 (f"The words beyond whole runs of {k} are stored by the first pass: it",
                  "enters the run that many stores before its end, with the cursor moved",
                  "back so that each store lands where it belongs.  Whole runs alone",
                  "start at the top, without the computed jump."),
                 (f"skip = (dst - wend) & {run - SZREG};",
                  "if (skip) { dst -= skip; goto run + skip / SZREG * 4; }"),
                 ((WEND, "end rounded down to a word"), (SKIP, "bytes the first pass skips"),
                  (TARGET, "where the first pass enters the run")),
                 (Insn("andi", (WEND, END, "-SZREG")),
                  Label(f".L{PFX}_wend"),
                  Insn("sub", (SKIP, CUR, WEND)),
                  Insn("andi", (SKIP, SKIP, str(run - SZREG)), note=f"bytes mod {run}"),
                  Insn("beqz", (SKIP, f".L{PFX}_run"), note="whole runs: no jump"),
                  Insn("sub", (CUR, CUR, SKIP)),
                  Insn("srli", (SKIP, SKIP, "1"), note="4 bytes of code per 8-byte store"),
                  Insn(".option", ("push",)),
                  Insn(".option", ("norvc",), note="every store of the run 4 bytes long"),
                  Insn(".option", ("norelax",), note="and the lla an auipc + addi pair"),
                  Insn("lla", (TARGET, f".L{PFX}_run")),
                  Insn("add", (TARGET, TARGET, SKIP)),
                  Insn("jr", (TARGET,))))


def _run(k: int) -> Phase:
    stores = tuple(Insn("sd", ("a1", f"{i * SZREG}({CUR})")) for i in range(k))
    return Phase(f".L{PFX}_run", "Run", (f"{k} words a pass.",),
                 (f"do {{ store {k} words; dst += {k * SZREG}; }} while (dst < wend);",), (),
                 (*stores,
                  Insn(".option", ("pop",)),
                  Insn("addi", (CUR, CUR, str(k * SZREG))),
                  Insn("bltu", (CUR, WEND, f".L{PFX}_run"))))


def _done() -> Phase:
    return Phase(f".L{PFX}_done", "Done",
                 ("Bytes past the last word take the tail, out of line.",),
                 ("if (dst != end) goto tail; return s;",), (),
                 (Insn("bne", (CUR, END, f".L{PFX}_tail"), note="a tail: predicted not"),
                  Insn("ret")))


def _bytes() -> Phase:
    return Phase(f".L{PFX}_bytes", "Bytes", ("Small sizes, one byte at a time.",),
                 ("end = dst + n; while (dst < end) *dst++ = c; return s;",),
                 ((END, "dst + n"),),
                 (Insn("add", (END, CUR, "a2")),
                  Insn("bgeu", (CUR, END, f".L{PFX}_return"), note="n == 0"),
                  Label(f".L{PFX}_byte"),
                  Insn("sb", ("a1", f"0({CUR})")),
                  Insn("addi", (CUR, CUR, "1")),
                  Insn("bltu", (CUR, END, f".L{PFX}_byte")),
                  Label(f".L{PFX}_return"),
                  Insn("ret")))


# Sub-word ends in three aligned stores and no branch.  Stores may overlap
# and store bytes again: every byte of [dst, end) gets the same value, and
# the threshold keeps all of them inside it.
def _head() -> Phase:
    return Phase(f".L{PFX}_head", "Head",
                 ("The bytes up to the next word boundary: a byte at dst, then a halfword",
                  "and a word at dst rounded up to 2 and to 4.  Those may run past the",
                  "boundary into the next word, so that word is stored too: what is",
                  "stored is then exactly [dst, boundary + SZREG).  The threshold leaves",
                  "room for it; when no whole word is left after it, the run is skipped."),
                 ("*(u8 *)dst = c; *(u16 *)round_up(dst, 2) = c;",
                  "*(u32 *)round_up(dst, 4) = c; dst = round_up(dst, SZREG);",
                  "*(unsigned long *)dst = c; dst += SZREG;",
                  "if (dst >= wend) goto done;"),
                 ((SKIP, "dst rounded up to 2, then to 4"),),
                 (*head_stores("a1", CUR, scratch=SKIP),
                  Insn("sd", ("a1", f"0({CUR})")),
                  Insn("addi", (CUR, CUR, "SZREG")),
                  Insn("andi", (WEND, END, "-SZREG")),
                  Insn("bgeu", (CUR, WEND, f".L{PFX}_done"), note="no whole word left"),
                  Insn("j", (f".L{PFX}_wend",))))


def _tail() -> Phase:
    return Phase(f".L{PFX}_tail", "Tail",
                 ("The bytes after the last word: the byte before end, and the halfword",
                  "and word that end at end rounded down to 2 and to 4."),
                 ("*(u8 *)(end - 1) = c; *(u16 *)(round_down(end, 2) - 2) = c;",
                  "*(u32 *)(round_down(end, 4) - 4) = c; return s;"),
                 ((SKIP, "end rounded down to 2, then to 4"),),
                 (Insn("sb", ("a1", f"-1({END})")),
                  Insn("andi", (SKIP, END, "-2")),
                  Insn("sh", ("a1", f"-2({SKIP})")),
                  Insn("andi", (SKIP, END, "-4")),
                  Insn("sw", ("a1", f"-4({SKIP})")),
                  Insn("ret")))


def memset_function(p: Phases, target: Target | None = None) -> Function:
    """__memset (weak alias memset) with its run of `p.word_unroll` stores,
    under `target`'s register rules (gen.lower.registers: with `jump t2`
    the computed jump goes through t2 instead of a5)."""
    fn = _memset(p)
    if target is None:
        return fn
    return honour(fn, target.reserve, target.jump, (), target.loc)


def _memset(p: Phases) -> Function:
    assert p.tail == "jump"
    k = p.word_unroll
    phases = [_entry(p), _replicate()]
    if p.align == "dst":
        phases.append(_alignment())
    phases += [_run_entry(k), _run(k), _done(), _tail(), _bytes()]
    if p.align == "dst":
        phases.append(_head())
    return Function(
        "__memset", (), ("Fill n bytes at dst with the byte c.",),
        (("a0", "dst"), ("a1", "c"), ("a2", "n")), "a0: dst",
        tuple(phases))
