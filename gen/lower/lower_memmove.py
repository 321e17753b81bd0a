"""Lowering of memmove in assembly (memmove's `form asm`): -> ir.Function.

memmove in assembly lives in memcpy.S, after memcpy, so that the common
call (disjoint buffers) is two subtractions, two branches and a branch
back into __memcpy: no call, so no frame where the kernel keeps frame
pointers, and a backward branch the core predicts taken.  Buffers that
overlap are copied here, in the file itself: kexec's purgatory builds
memcpy.S alone, so nothing in it may name a symbol from another file.

The copies of overlapping buffers are those of string.c's memmove:
src inside dst (dst below src): forwards, bytes until dst is aligned,
then whole words when src is aligned too, each word loaded before it is
stored, then bytes.  dst inside src: backwards from the ends, bytes until
the end of dst is aligned, then whole words when the source end is
aligned too (`backward words`), then bytes.  Neither direction ever
stores over a source byte it has not read yet.

Role: write memmove's Function (under the target's register rules).  May import
gen.emission.ir, gen.front.strategy and gen.lower.registers.
"""
from __future__ import annotations

from copygen.gen.emission.ir import Function, Insn, Label, Phase
from copygen.gen.front.strategy import StringLib
from copygen.gen.lower.registers import honour

PFX = ".Lmemmove"
ROLES = (("a3", "dst cursor"), ("a1", "src cursor"), ("a4", "end of dst"),
         ("a5", "where the words stop"), ("t2", "SZREG"), ("t3", "byte or word in flight"))


def _entry() -> Phase:
    return Phase(None, "Overlap test",
                 ("dst - src < n: dst starts inside the source, so the copy must go",
                  "backwards; src - dst < n: the source starts inside dst.  Buffers",
                  "that do neither are disjoint: memcpy copies them and returns dst",
                  "to the caller (a branch, not a call: no frame)."),
                 ("if (dst - src < n) goto backward;",
                  "if (src - dst >= n) goto memcpy;"),
                 (("t0", "dst - src"), ("t1", "src - dst")),
                 (Insn("sub", ("t0", "a0", "a1")),
                  Insn("sub", ("t1", "a1", "a0")),
                  Insn("bltu", ("t0", "a2", f"{PFX}_backward"), note="dst inside the source"),
                  Insn("bgeu", ("t1", "a2", "__memcpy"),
                       note="disjoint (backward: predicted taken)")))


def _forward() -> Phase:
    """With words wherever src is co-aligned, as string.c's forward copy of
    overlapping buffers (`backward` chooses for the backward copy only)."""
    body: list = [Insn("mv", ("a3", "a0")), Insn("add", ("a4", "a0", "a2")),
                  Insn("li", ("t2", "SZREG")),
                  Insn("bltu", ("a2", "t2", f"{PFX}_fwd_bytes"), note="shorter than a word"),
                  Insn("andi", ("t3", "a0", "SZREG-1")),
                  Insn("beqz", ("t3", f"{PFX}_fwd_words_test")),
                  Label(f"{PFX}_fwd_head"),
                  Insn("lbu", ("t3", "0(a1)")),
                  Insn("sb", ("t3", "0(a3)")),
                  Insn("addi", ("a3", "a3", "1")),
                  Insn("addi", ("a1", "a1", "1")),
                  Insn("andi", ("t3", "a3", "SZREG-1")),
                  Insn("bnez", ("t3", f"{PFX}_fwd_head")),
                  Label(f"{PFX}_fwd_words_test"),
                  Insn("andi", ("t3", "a1", "SZREG-1")),
                  Insn("bnez", ("t3", f"{PFX}_fwd_bytes"), note="src misaligned: bytes"),
                  Insn("addi", ("a5", "a4", "-(SZREG-1)")),
                  Insn("bgeu", ("a3", "a5", f"{PFX}_fwd_bytes")),
                  Label(f"{PFX}_fwd_words"),
                  Insn("REG_L", ("t3", "0(a1)")),
                  Insn("addi", ("a1", "a1", "SZREG")),
                  Insn("addi", ("a3", "a3", "SZREG")),
                  Insn("REG_S", ("t3", "-SZREG(a3)")),
                  Insn("bltu", ("a3", "a5", f"{PFX}_fwd_words")),
                  Label(f"{PFX}_fwd_bytes"),
                  Insn("beq", ("a3", "a4", f"{PFX}_done")),
                  Label(f"{PFX}_fwd_byte"),
                  Insn("lbu", ("t3", "0(a1)")),
                  Insn("addi", ("a1", "a1", "1")),
                  Insn("addi", ("a3", "a3", "1")),
                  Insn("sb", ("t3", "-1(a3)")),
                  Insn("bne", ("a3", "a4", f"{PFX}_fwd_byte")),
                  Insn("ret")]
    pseudo = ("d = dst; s = src; end = dst + n;",
              "if (n >= SZREG) {",
              "\twhile (d & (SZREG - 1)) *d++ = *s++;",
              "\tif (!(s & (SZREG - 1)))",
              "\t\tfor (; end - d >= SZREG; d += SZREG, s += SZREG)",
              "\t\t\t*(long *)d = *(const long *)s;",
              "}",
              "while (d != end) *d++ = *s++;",
              "return dst;")
    return Phase(None, "Forwards: the source starts inside dst",
                 ("dst lies below src, so copying upwards reads every source byte",
                  "before a store can reach it: a word is loaded before it is stored."),
                 pseudo, ROLES, tuple(body))


def _backward(words: bool) -> Phase:
    body: list = [Insn("add", ("a3", "a0", "a2")), Insn("add", ("a1", "a1", "a2"))]
    if words:
        body += [Insn("li", ("t2", "SZREG")),
                 Insn("bltu", ("a2", "t2", f"{PFX}_back_bytes"), note="shorter than a word"),
                 Insn("andi", ("t3", "a3", "SZREG-1")),
                 Insn("beqz", ("t3", f"{PFX}_back_words_test")),
                 Label(f"{PFX}_back_head"),
                 Insn("addi", ("a3", "a3", "-1")),
                 Insn("addi", ("a1", "a1", "-1")),
                 Insn("lbu", ("t3", "0(a1)")),
                 Insn("sb", ("t3", "0(a3)")),
                 Insn("andi", ("t3", "a3", "SZREG-1")),
                 Insn("bnez", ("t3", f"{PFX}_back_head")),
                 Label(f"{PFX}_back_words_test"),
                 Insn("andi", ("t3", "a1", "SZREG-1")),
                 Insn("bnez", ("t3", f"{PFX}_back_bytes"), note="source end misaligned: bytes"),
                 Insn("addi", ("a5", "a0", "SZREG-1")),
                 Insn("bgeu", ("a5", "a3", f"{PFX}_back_bytes")),
                 Label(f"{PFX}_back_words"),
                 Insn("addi", ("a1", "a1", "-SZREG")),
                 Insn("REG_L", ("t3", "0(a1)")),
                 Insn("addi", ("a3", "a3", "-SZREG")),
                 Insn("REG_S", ("t3", "0(a3)")),
                 Insn("bltu", ("a5", "a3", f"{PFX}_back_words"))]
    body += [Label(f"{PFX}_back_bytes"),
             Insn("beq", ("a3", "a0", f"{PFX}_done")),
             Label(f"{PFX}_back_byte"),
             Insn("addi", ("a1", "a1", "-1")),
             Insn("lbu", ("t3", "0(a1)")),
             Insn("addi", ("a3", "a3", "-1")),
             Insn("sb", ("t3", "0(a3)")),
             Insn("bne", ("a3", "a0", f"{PFX}_back_byte")),
             Label(f"{PFX}_done"),
             Insn("ret")]
    pseudo = ("d = dst + n; s = src + n;",
              *(("if (n >= SZREG) {",
                 "\twhile (d & (SZREG - 1)) *--d = *--s;",
                 "\tif (!(s & (SZREG - 1)))",
                 "\t\tfor (; d - dst >= SZREG; d -= SZREG, s -= SZREG)",
                 "\t\t\t*(long *)(d - SZREG) = *(const long *)(s - SZREG);",
                 "}") if words else ()),
              "while (d != dst) *--d = *--s;",
              "return dst;")
    return Phase(f"{PFX}_backward", "Backwards: dst starts inside the source",
                 ("dst lies above src, so copying downwards from the ends reads every",
                  "source byte before a store can reach it."),
                 pseudo, tuple(r for r in ROLES if words and r[0] != "a4"
                               or r[0] in ("a3", "a1", "t3")), tuple(body))


def memmove_function(lib: StringLib) -> Function:
    """__memmove (weak alias memmove), to follow __memcpy in memcpy.S."""
    assert lib.memmove_asm and lib.memcpy_asm
    fn = Function(
        "__memmove", (), ("Copy n bytes from src to dst; the buffers may overlap.",),
        (("a0", "dst"), ("a1", "src"), ("a2", "n")), "a0: dst",
        (_entry(), _forward(), _backward(lib.memmove.backward == "words")))
    return honour(fn, lib.target.reserve, lib.target.jump, (), lib.target.loc)
