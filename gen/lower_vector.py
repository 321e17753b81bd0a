"""Lowering of a copy_user or clear_user routine's vector path:
strategy.Vector -> ir.Function (vector_function, clear_function).

Layout of __asm_vector_usercopy (uaccess_vector.S; DOMAIN.md §8):

  entry        SUM on (not with sum_held: the caller holds it)
  chunk loop   vl = vsetvli(n); load vl bytes; n -= vl; src += vl;
               store vl bytes; dst += vl; loop while n
  return       SUM off, return n (0 when the loop ran out)
  fault exits  store fault: the elements below vstart were stored, so
               n + vl - vstart remain; load fault: n still counts the
               chunk, so it is the return value as it is.  Both set vstart
               (the faulting element) back to 0, as the calling convention
               wants it at every return, and take the return above.

With `loads ff` the chunk's load is fault-only-first: a fault past its
first element trims vl (read back with csrr), the loop stores what was
loaded, and the next chunk's first element takes the fault, which the load
fault exit then counts exactly.

Registers: a0 dst, a1 src, a2 bytes left, t0 vl, t1 vstart at a store fault,
t6 SR_SUM; v0 the first register of the chunk's group.  Nothing callee-saved
is touched, and the vector registers are the caller's to save (the kernel
opens a vector section around the call).

Layout of __asm_vector_clear_user (dst a0, n a1; the same file):

  entry        SUM on
  splat        vl = VLMAX; the whole register group v0.. = 0, once
  chunk loop   vl = vsetvli(n); store vl zero bytes; n -= vl; dst += vl;
               loop while n
  return       SUM off, return n
  fault exit   a store fault: n still counts the chunk (it is lowered
               after the store) and the elements below vstart were
               stored, so n - vstart remain; vstart set back to 0.

Registers of the clear: a0 dst, a1 bytes left, t0 vl, t1 vstart at a
fault, t6 SR_SUM; v0 the group of zeros.

Role: ir.Functions from a Vector.  May import gen.ir, gen.strategy.
"""
from __future__ import annotations

from copygen.gen.ir import Function, Insn, Label, Phase
from copygen.gen.strategy import Vector

LOAD_FAULT, STORE_FAULT, DONE = ".Lvec_load_fault", ".Lvec_store_fault", ".Lvec_done"


def _entry(what: str = "copy") -> Phase:
    return Phase(None, "Entry",
                 (f"Enable user memory access (sstatus.SUM) for the whole {what}.",), (),
                 (("t6", "SR_SUM"),),
                 (Insn("li", ("t6", "SR_SUM")),
                  Insn("csrs", ("CSR_STATUS", "t6"), note="let S-mode touch user pages")))


def _chunk_loop(v: Vector) -> Phase:
    sew, ff = f"e{v.sew}", v.loads == "ff"
    load = f"vle{v.sew}ff.v" if ff else f"vle{v.sew}.v"
    body = [Label(".Lvec_loop"),
            Insn("vsetvli", ("t0", "a2", sew, f"m{v.lmul}", "ta", "ma"),
                 note=f"vl = min(n, {v.lmul} * VLEN / {v.sew})"),
            Insn(load, ("v0", "(a1)"), fixup=LOAD_FAULT)]
    if ff:
        body.append(Insn("csrr", ("t0", "vl"), note="vl as the load left it"))
    body += [Insn("sub", ("a2", "a2", "t0")),
             Insn("add", ("a1", "a1", "t0")),
             Insn(f"vse{v.sew}.v", ("v0", "(a0)"), fixup=STORE_FAULT),
             Insn("add", ("a0", "a0", "t0")),
             Insn("bnez", ("a2", ".Lvec_loop"))]
    why = (f"Strip-mined: each chunk is as many bytes as a group of {v.lmul} vector",
           f"register(s) holds at this core's VLEN ({v.lmul} * VLEN / 8), or n if less.")
    if ff:
        why += ("The load is fault-only-first: a fault past its first byte shortens",
                "the chunk, and the next chunk's first byte takes the fault.")
    pseudo = ("do {", "\tvl = min(n, VLMAX);",
              "\tload vl bytes from src" + (" (vl shortened at a fault)" if ff else "") + ";",
              "\tn -= vl; src += vl;", "\tstore vl bytes at dst; dst += vl;", "} while (n);")
    regs = (("a0", "dst"), ("a1", "src"), ("a2", "n: bytes left"), ("t0", "vl: bytes this chunk"),
            (f"v0-v{v.lmul - 1}" if v.lmul > 1 else "v0", "the chunk in flight"))
    return Phase(None, "Chunk loop", why, pseudo, regs, tuple(body))


def _return(sum_held: bool) -> Phase:
    off = () if sum_held else (Insn("csrc", ("CSR_STATUS", "t6"), note="user memory off again"),)
    return Phase(None, "Return",
                 ("The loop ran out (n is 0), or a fault exit below counted what is left.",),
                 ("return n;",), (("a2", "bytes not copied"),),
                 (Label(DONE), *off,
                  Insn("mv", ("a0", "a2")),
                  Insn("ret")))


def _fault_exits() -> Phase:
    return Phase(None, "Fault exits",
                 ("A store fault: n was lowered by the whole chunk before its store,",
                  "and the elements below vstart were stored, so n + vl - vstart",
                  "bytes remain.  A load fault: n still counts the chunk whose load",
                  "faulted, as it stands.  Either fault left vstart at the faulting",
                  "element; it is set back to 0, as the calling convention wants."),
                 ("store fault: n += vl - vstart;", "vstart = 0; return n;"),
                 (("t1", "vstart: bytes of the chunk stored"),),
                 (Label(STORE_FAULT),
                  Insn("add", ("a2", "a2", "t0"), note="the chunk again"),
                  Insn("csrr", ("t1", "CSR_VSTART")),
                  Insn("sub", ("a2", "a2", "t1"), note="less what it stored"),
                  Label(LOAD_FAULT),
                  Insn("csrw", ("CSR_VSTART", "zero")),
                  Insn("j", (DONE,))))


def vector_function(v: Vector, sum_held: bool = False) -> Function:
    """__asm_vector_usercopy; with `sum_held` the loop alone, for a caller
    that holds SUM (mainline's __asm_vector_usercopy_sum_enabled): no
    csrs/csrc of SUM, on any path."""
    summary = ("Copy n bytes between kernel and user memory with RVV loads and stores,",
               "in chunks of up to VLMAX bytes.  The caller has opened a kernel vector",
               "section (sstatus.VS on) and chose this path for copies of at least",
               f"{v.threshold} bytes; when bytes remain it lets the scalar copy finish.")
    if sum_held:
        summary += ("The caller holds sstatus.SUM, and it stays set.",)
    entry = () if sum_held else (_entry(),)
    return Function("__asm_vector_usercopy", (), summary,
                    (("a0", "dst"), ("a1", "src"), ("a2", "n")),
                    "a0: bytes not copied (0 on success" +
                    (")" if v.loads == "ff" else "; a load fault counts its whole chunk)"),
                    (*entry, _chunk_loop(v), _return(sum_held)), (_fault_exits(),),
                    ("__asm_vector_usercopy",))


CLEAR_SYMBOL = "__asm_vector_clear_user"
CLEAR_FAULT, CLEAR_DONE = ".Lvclr_store_fault", ".Lvclr_done"


def _splat(v: Vector) -> Phase:
    return Phase(None, "Zeros",
                 ("One register group of zeros serves every chunk: vl is VLMAX here, so",
                  "vmv.v.i writes every element of the group once."),
                 ("zeros[0 .. VLMAX) = 0;",),
                 (("t0", "VLMAX"), (f"v0-v{v.lmul - 1}" if v.lmul > 1 else "v0", "zeros")),
                 (Insn("vsetvli", ("t0", "zero", f"e{v.sew}", f"m{v.lmul}", "ta", "ma"),
                       note=f"vl = VLMAX = {v.lmul} * VLEN / {v.sew}"),
                  Insn("vmv.v.i", ("v0", "0"))))


def _clear_loop(v: Vector) -> Phase:
    body = (Label(".Lvclr_loop"),
            Insn("vsetvli", ("t0", "a1", f"e{v.sew}", f"m{v.lmul}", "ta", "ma"),
                 note=f"vl = min(n, {v.lmul} * VLEN / {v.sew})"),
            Insn(f"vse{v.sew}.v", ("v0", "(a0)"), fixup=CLEAR_FAULT),
            Insn("sub", ("a1", "a1", "t0")),
            Insn("add", ("a0", "a0", "t0")),
            Insn("bnez", ("a1", ".Lvclr_loop")))
    why = (f"Strip-mined: each chunk is as many bytes as a group of {v.lmul} vector",
           f"register(s) holds at this core's VLEN ({v.lmul} * VLEN / 8), or n if less.",
           "n is lowered after the store, so a fault finds it counting the chunk.")
    pseudo = ("do {", "\tvl = min(n, VLMAX);", "\tstore vl zero bytes at dst;",
              "\tn -= vl; dst += vl;", "} while (n);")
    return Phase(None, "Chunk loop", why, pseudo,
                 (("a0", "dst"), ("a1", "n: bytes left"), ("t0", "vl: bytes this chunk")), body)


def _clear_return() -> Phase:
    return Phase(None, "Return",
                 ("The loop ran out (n is 0), or the fault exit below counted what is left.",),
                 ("return n;",), (("a1", "bytes not cleared"),),
                 (Label(CLEAR_DONE),
                  Insn("csrc", ("CSR_STATUS", "t6"), note="user memory off again"),
                  Insn("mv", ("a0", "a1")),
                  Insn("ret")))


def _clear_fault_exit() -> Phase:
    return Phase(None, "Fault exit",
                 ("A store fault: n still counts the whole chunk, of which the elements",
                  "below vstart were stored, so n - vstart bytes remain.  The fault left",
                  "vstart at the faulting element; it is set back to 0, as the calling",
                  "convention wants."),
                 ("n -= vstart;", "vstart = 0; return n;"),
                 (("t1", "vstart: bytes of the chunk stored"),),
                 (Label(CLEAR_FAULT),
                  Insn("csrr", ("t1", "CSR_VSTART")),
                  Insn("sub", ("a1", "a1", "t1"), note="less what the chunk stored"),
                  Insn("csrw", ("CSR_VSTART", "zero")),
                  Insn("j", (CLEAR_DONE,))))


def clear_function(v: Vector) -> Function:
    """__asm_vector_clear_user(dst, n): the vector path of clear_user."""
    summary = ("Zero n bytes of user memory with RVV stores, in chunks of up to VLMAX",
               "bytes.  The caller has opened a kernel vector section (sstatus.VS on)",
               f"and chose this path for clears of at least {v.threshold} bytes.  Every",
               "access is a store, so a fault is counted to the byte: the return value",
               "is exact and no scalar fallback is needed after it.")
    return Function(CLEAR_SYMBOL, (), summary, (("a0", "dst"), ("a1", "n")),
                    "a0: bytes not cleared (0 on success)",
                    (_entry("clear"), _splat(v), _clear_loop(v), _clear_return()), (_clear_fault_exit(),),
                    (CLEAR_SYMBOL,))
