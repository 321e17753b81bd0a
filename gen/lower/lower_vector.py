"""Lowering of a copy_user or clear_user routine's vector path:
strategy.Vector -> ir.Function (vector_function, clear_function).

Layout of __asm_vector_usercopy (uaccess_vector.S; docs/vector.md):

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
t6 SR_SUM; v0 the first register of the chunk's group.

With elements wider than a byte (e16, e32, e64: SEW/8 = B bytes, only on a
core with fast misaligned access, gen.front.validate_vector) the copy counts
bytes as before and derives the elements each chunk:

  whole elements  while n >= B: vl = vsetvli(n / B elements); load and
               store vl elements; the chunk is vl * B bytes (t0)
  tail bytes   the n mod B (< B) bytes left, one e8 chunk at LMUL 1 (VLMAX
               is at least 16 bytes there, so vl = n); an e8 pass rather
               than a scalar byte loop: one access each way with the same
               fixups and fault arithmetic as the e8 routine, and no second
               loop for the proof
  fault exits  a wide element that straddles the first inaccessible byte
               faults as a whole, so vstart * B stops short of the fault
               by up to B - 1 bytes.  The wide store fault stores the rest
               of the chunk again as bytes from vstart * B (csrw vstart,
               then vse8), which faults at the exact byte; its e8 fault
               exit is the e8 routine's (n + vl - vstart).  With `loads ff`
               a wide load faults only at its element 0, and the load fault
               exit loads (vle8ff, which trims at the exact byte) and
               stores the bytes before the fault.  A plain load fault
               still counts its whole chunk (the glue's scalar copy finds
               the byte).  So the counts are exact to the byte, as e8's.

Registers of the wide form: t0 the chunk in bytes, t1 elements (vl) and
vstart at a fault, t2 B; the others as above.  Nothing callee-saved
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

Role: ir.Functions from a Vector.  May import gen.emission.ir, gen.front.strategy.
"""
from __future__ import annotations

from copygen.gen.emission.ir import Function, Insn, Label, Phase
from copygen.gen.front.strategy import Vector

LOAD_FAULT, STORE_FAULT, DONE = ".Lvec_load_fault", ".Lvec_store_fault", ".Lvec_done"


def _registers(lmul: int) -> str:
    return "register" if lmul == 1 else "registers"


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
           f"{_registers(v.lmul)} holds at this core's VLEN ({v.lmul} * VLEN / 8), or n if less.")
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


WIDE_STORE_FAULT, BYTE_STORE_FAULT = ".Lvec_wide_store_fault", ".Lvec_byte_store_fault"
VEC_TAIL = ".Lvec_tail"


def _log_bytes(v: Vector) -> int:
    """log2 of an element's bytes (SEW / 8)."""
    return (v.sew // 8).bit_length() - 1


def _wide_loop(v: Vector) -> Phase:
    sew, b, lg, ff = f"e{v.sew}", v.sew // 8, _log_bytes(v), v.loads == "ff"
    load = f"vle{v.sew}ff.v" if ff else f"vle{v.sew}.v"
    body = [Insn("li", ("t2", str(b)), note=f"bytes per e{v.sew} element"),
            Insn("bltu", ("a2", "t2", VEC_TAIL), note="no whole element"),
            Label(".Lvec_loop"),
            Insn("srli", ("t1", "a2", str(lg)), note="whole elements left"),
            Insn("vsetvli", ("t1", "t1", sew, f"m{v.lmul}", "ta", "ma"),
                 note=f"vl = min(n / {b}, {v.lmul} * VLEN / {v.sew})"),
            Insn(load, ("v0", "(a1)"), fixup=LOAD_FAULT)]
    if ff:
        body.append(Insn("csrr", ("t1", "vl"), note="vl as the load left it"))
    body += [Insn("slli", ("t0", "t1", str(lg)), note=f"the chunk in bytes: vl * {b}"),
             Insn("sub", ("a2", "a2", "t0")),
             Insn("add", ("a1", "a1", "t0")),
             Insn(f"vse{v.sew}.v", ("v0", "(a0)"), fixup=WIDE_STORE_FAULT),
             Insn("add", ("a0", "a0", "t0")),
             Insn("bgeu", ("a2", "t2", ".Lvec_loop"))]
    why = (f"Strip-mined in e{v.sew} elements: each chunk is as many whole elements as a",
           f"group of {v.lmul} vector {_registers(v.lmul)} holds ({v.lmul} * VLEN / {v.sew}), or n / {b}"
           " if fewer;",
           f"n counts bytes, so a chunk lowers it by vl * {b}.")
    if ff:
        why += ("The load is fault-only-first: a fault past its first element shortens",
                "the chunk, and the next chunk's first element takes the fault.")
    pseudo = (f"while (n >= {b}) {{", f"\tvl = min(n / {b}, VLMAX);",
              f"\tload vl elements from src" + (" (vl shortened at a fault)" if ff else "") + ";",
              f"\tn -= vl * {b}; src += vl * {b};", f"\tstore vl elements at dst; dst += vl * {b};",
              "}")
    regs = (("a0", "dst"), ("a1", "src"), ("a2", "n: bytes left"), ("t1", "vl: elements this chunk"),
            ("t0", "bytes this chunk"), ("t2", f"{b}: bytes per element"),
            (f"v0-v{v.lmul - 1}" if v.lmul > 1 else "v0", "the chunk in flight"))
    return Phase(None, "Chunk loop", why, pseudo, regs, tuple(body))


def _tail_bytes(v: Vector) -> Phase:
    ff = v.loads == "ff"
    body = [Label(VEC_TAIL),
            Insn("beqz", ("a2", DONE)),
            Insn("vsetvli", ("t0", "a2", "e8", "m1", "ta", "ma"),
                 note=f"vl = n: fewer than {v.sew // 8} bytes, VLMAX >= 16"),
            Insn("vle8ff.v" if ff else "vle8.v", ("v0", "(a1)"), fixup=LOAD_FAULT)]
    if ff:
        body.append(Insn("csrr", ("t0", "vl"), note="vl as the load left it"))
    body += [Insn("sub", ("a2", "a2", "t0")),
             Insn("vse8.v", ("v0", "(a0)"), fixup=BYTE_STORE_FAULT)]
    return Phase(None, "Tail bytes",
                 (f"The n mod {v.sew // 8} bytes no whole element holds, as one chunk of bytes.",),
                 ("if (n) {", "\tload n bytes from src;", "\tn -= vl; store vl bytes at dst;", "}"),
                 (("t0", "vl: bytes"),), tuple(body))


def _wide_fault_exits(v: Vector) -> Phase:
    b, lg, ff = v.sew // 8, _log_bytes(v), v.loads == "ff"
    body = [Label(WIDE_STORE_FAULT),
            Insn("csrr", ("t1", "CSR_VSTART"), note="the element that faulted"),
            Insn("slli", ("t1", "t1", str(lg)), note=f"its first byte: vstart * {b}"),
            Insn("vsetvli", ("zero", "t0", "e8", f"m{v.lmul}", "ta", "ma"),
                 note="the chunk as bytes (this clears vstart)"),
            Insn("csrw", ("CSR_VSTART", "t1"), note="resume at that byte"),
            Insn("vse8.v", ("v0", "(a0)"), fixup=BYTE_STORE_FAULT),
            Insn("j", (DONE,), note="stored after all: n already counts the chunk as copied")]
    if ff:
        body += [Label(LOAD_FAULT),
                 Insn("vsetvli", ("t0", "a2", "e8", "m1", "ta", "ma")),
                 Insn("vle8ff.v", ("v0", "(a1)"), fixup=".Lvec_exit",
                      note="trims vl at the first inaccessible byte"),
                 Insn("csrr", ("t0", "vl")),
                 Insn("sub", ("a2", "a2", "t0")),
                 Insn("vse8.v", ("v0", "(a0)"), fixup=BYTE_STORE_FAULT),
                 Insn("j", (DONE,))]
    body += [Label(BYTE_STORE_FAULT),
             Insn("add", ("a2", "a2", "t0"), note="the byte chunk again"),
             Insn("csrr", ("t1", "CSR_VSTART")),
             Insn("sub", ("a2", "a2", "t1"), note="less the bytes it stored"),
             Label(".Lvec_exit" if ff else LOAD_FAULT),
             Insn("csrw", ("CSR_VSTART", "zero")),
             Insn("j", (DONE,))]
    why = (f"An e{v.sew} element that straddles the first inaccessible byte faults whole,",
           f"so vstart * {b} may stop up to {b - 1} bytes short of the fault.  A wide",
           "store fault stores the chunk again as bytes from there (a vstart set",
           "by csrw), which faults at the exact byte; n was lowered by the chunk",
           "before either store, so a byte store fault leaves n + vl - vstart.")
    if ff:
        why += ("A load fault (element 0 of a fault-only-first load) loads bytes",
                "fault-only-first, which stops at the exact byte, and stores them.")
    else:
        why += ("A plain load fault: n still counts the chunk whose load faulted.",)
    why += ("Every exit sets vstart back to 0, as the calling convention wants.",)
    pseudo = (f"wide store fault: store the chunk's bytes from vstart * {b};",
              "byte store fault: n += vl - vstart;", "vstart = 0; return n;")
    return Phase(None, "Fault exits", why, pseudo, (("t1", "vstart"),), tuple(body))


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
                    _copy_phases(v, entry, sum_held), _copy_exits(v),
                    ("__asm_vector_usercopy",))


def _copy_phases(v: Vector, entry: tuple, sum_held: bool) -> tuple:
    if v.sew == 8:
        return (*entry, _chunk_loop(v), _return(sum_held))
    return (*entry, _wide_loop(v), _tail_bytes(v), _return(sum_held))


def _copy_exits(v: Vector) -> tuple:
    return (_fault_exits(),) if v.sew == 8 else (_wide_fault_exits(v),)


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
           f"{_registers(v.lmul)} holds at this core's VLEN ({v.lmul} * VLEN / 8), or n if less.",
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


CLEAR_WIDE_FAULT, CLEAR_TAIL = ".Lvclr_wide_fault", ".Lvclr_tail"


def _clear_wide_loop(v: Vector) -> Phase:
    b, lg = v.sew // 8, _log_bytes(v)
    body = (Insn("li", ("t2", str(b)), note=f"bytes per e{v.sew} element"),
            Insn("bltu", ("a1", "t2", CLEAR_TAIL), note="no whole element"),
            Label(".Lvclr_loop"),
            Insn("srli", ("t1", "a1", str(lg)), note="whole elements left"),
            Insn("vsetvli", ("t1", "t1", f"e{v.sew}", f"m{v.lmul}", "ta", "ma"),
                 note=f"vl = min(n / {b}, {v.lmul} * VLEN / {v.sew})"),
            Insn("slli", ("t0", "t1", str(lg)), note=f"the chunk in bytes: vl * {b}"),
            Insn(f"vse{v.sew}.v", ("v0", "(a0)"), fixup=CLEAR_WIDE_FAULT),
            Insn("sub", ("a1", "a1", "t0")),
            Insn("add", ("a0", "a0", "t0")),
            Insn("bgeu", ("a1", "t2", ".Lvclr_loop")))
    why = (f"Strip-mined in e{v.sew} elements: each chunk is as many whole elements as a",
           f"group of {v.lmul} vector {_registers(v.lmul)} holds, or n / {b} if fewer; n counts",
           "bytes and is lowered after the store, so a fault finds it counting the chunk.")
    pseudo = (f"while (n >= {b}) {{", f"\tvl = min(n / {b}, VLMAX);", "\tstore vl zero elements at dst;",
              f"\tn -= vl * {b}; dst += vl * {b};", "}")
    return Phase(None, "Chunk loop", why, pseudo,
                 (("a0", "dst"), ("a1", "n: bytes left"), ("t1", "vl: elements this chunk"),
                  ("t0", "bytes this chunk"), ("t2", f"{b}: bytes per element")), body)


def _clear_tail(v: Vector) -> Phase:
    body = (Label(CLEAR_TAIL),
            Insn("beqz", ("a1", CLEAR_DONE)),
            Insn("vsetvli", ("t0", "a1", "e8", "m1", "ta", "ma"),
                 note=f"vl = n: fewer than {v.sew // 8} bytes, VLMAX >= 16"),
            Insn("vse8.v", ("v0", "(a0)"), fixup=CLEAR_FAULT),
            Insn("sub", ("a1", "a1", "t0")))
    return Phase(None, "Tail bytes",
                 (f"The n mod {v.sew // 8} bytes no whole element holds, as one chunk of bytes.",),
                 ("if (n) { store n zero bytes at dst; n = 0; }",), (("t0", "vl: bytes"),), body)


def _clear_wide_fault_exit(v: Vector) -> Phase:
    b, lg = v.sew // 8, _log_bytes(v)
    body = (Label(CLEAR_WIDE_FAULT),
            Insn("csrr", ("t1", "CSR_VSTART"), note="the element that faulted"),
            Insn("slli", ("t1", "t1", str(lg)), note=f"its first byte: vstart * {b}"),
            Insn("vsetvli", ("zero", "t0", "e8", f"m{v.lmul}", "ta", "ma"),
                 note="the chunk as bytes (this clears vstart)"),
            Insn("csrw", ("CSR_VSTART", "t1"), note="resume at that byte"),
            Insn("vse8.v", ("v0", "(a0)"), fixup=CLEAR_FAULT),
            Insn("sub", ("a1", "a1", "t0"), note="stored after all: the chunk is cleared"),
            Insn("j", (CLEAR_DONE,)))
    return Phase(None, "Wide fault exit",
                 (f"An e{v.sew} element that straddles the first inaccessible byte faults whole,",
                  f"so vstart * {b} may stop up to {b - 1} bytes short of the fault.  The chunk",
                  "is stored again as bytes from there (a vstart set by csrw), which faults",
                  "at the exact byte and takes the byte fault exit below."),
                 (f"store the chunk's zero bytes from vstart * {b};",), (("t1", "vstart"),), body)


def clear_function(v: Vector) -> Function:
    """__asm_vector_clear_user(dst, n): the vector path of clear_user."""
    summary = ("Zero n bytes of user memory with RVV stores, in chunks of up to VLMAX",
               "bytes.  The caller has opened a kernel vector section (sstatus.VS on)",
               f"and chose this path for clears of at least {v.threshold} bytes.  Every",
               "access is a store, so a fault is counted to the byte: the return value",
               "is exact and no scalar fallback is needed after it.")
    return Function(CLEAR_SYMBOL, (), summary, (("a0", "dst"), ("a1", "n")),
                    "a0: bytes not cleared (0 on success)",
                    _clear_phases(v), _clear_exits(v), (CLEAR_SYMBOL,))


def _clear_phases(v: Vector) -> tuple:
    if v.sew == 8:
        return (_entry("clear"), _splat(v), _clear_loop(v), _clear_return())
    return (_entry("clear"), _splat(v), _clear_wide_loop(v), _clear_tail(v), _clear_return())


def _clear_exits(v: Vector) -> tuple:
    if v.sew == 8:
        return (_clear_fault_exit(),)
    return (_clear_wide_fault_exit(v), _clear_fault_exit())
