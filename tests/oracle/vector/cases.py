"""Cases of the vector differential oracle: small assembly bodies and the
register values each runs with.

Role: `bodies()` lists the case functions (assembly text, assembled by the
real toolchain with -march=rv64gcv into one cases.S shared by every VLEN);
`cases(vlen, seed, fast)` lists (body index, a0..a4, fill seed) per VLEN.
Registers of a body: a0 destination, a1 source, a2 AVL, a3 stride, a4 a
vtype value for vsetvl; a `clear` body (the strip-mined loop of
__asm_vector_clear_user, CLEAR_LOOP, without its SUM and fixup) takes n
in a1, as the routine does.  The `wcopy` and `wclear` bodies are the
e16..e64 routines' element loop and e8 tail (WIDE_COPY, WIDE_CLEAR; a
wcopy takes dst, src, n in a0..a2, a wclear dst, n in a0, a1), placed so
that an element straddles the PROT_NONE page; a `restart` body is their
wide fault exit's store again as bytes from a vstart set by csrw (a2
bytes, vstart a3).  Data lives in the arena driver.c maps at DATA (two
pages, then a PROT_NONE page that the emulator leaves unmapped), so bases
near DATA + 2 pages exercise precise faults.
Imports: the standard library.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

DATA, PAGE = 0x1000_0000, 4096
ARENA = 2 * PAGE
LMULS = {"mf8": -3, "mf4": -2, "mf2": -1, "m1": 0, "m2": 1, "m4": 2, "m8": 3}
EEWS = (8, 16, 32, 64)


@dataclass(frozen=True)
class Body:
    group: str        # vset | unit | strided | ff | whole | fill | clear | wcopy | wclear | restart
    lines: tuple[str, ...]
    eew: int = 8      # element width of its accesses
    span: int = 1     # LMUL-like factor: elements = span * VLEN / eew at most


def _supported(sew: int, lmul: str) -> bool:
    return LMULS[lmul] >= 0 or sew <= 64 >> -LMULS[lmul]


def _vset_bodies() -> list[Body]:
    out = []
    tail = ("csrr a0, vl", "csrr a1, vtype")
    for sew in EEWS:
        for lmul in LMULS:
            pol = "ta, ma" if (sew + LMULS[lmul]) % 2 else "tu, mu"
            out.append(Body("vset", (f"vsetvli t0, a2, e{sew}, {lmul}, {pol}",) + tail))
            out.append(Body("vset", (f"vsetvli t0, zero, e{sew}, {lmul}, ta, ma",) + tail))
            out.append(Body("vset", (f"vsetvli zero, zero, e{sew}, {lmul}, ta, ma",) + tail))
            out.append(Body("vset", (f"vsetivli t0, {(sew * 7 + LMULS[lmul]) % 32}, e{sew}, {lmul}, ta, ma",) + tail))
    out.append(Body("vset", ("vsetvl t0, a2, a4",) + tail))
    return out


def _emul(eew: int, sew: int, lmul: str) -> int | None:
    e = eew.bit_length() - sew.bit_length() + LMULS[lmul]
    return e if -3 <= e <= 3 else None


def _access_bodies() -> list[Body]:
    out = []
    for eew in EEWS:
        for sew, lmul in ((8, "m1"), (eew, "m1"), (eew, "m2"), (eew, "m8"), (16, "mf2"), (64, "m4")):
            emul = _emul(eew, sew, lmul)
            if emul is None or not _supported(sew, lmul):
                continue
            span = 1 << max(emul, 0)
            head = f"vsetvli t0, a2, e{sew}, {lmul}, ta, mu"
            for mask in ("", ", v0.t"):
                out.append(Body("unit", (head, f"vle{eew}.v v8, (a1){mask}", f"vse{eew}.v v8, (a0){mask}"),
                                eew, span))
                out.append(Body("strided", (head, f"vlse{eew}.v v8, (a1), a3{mask}",
                                            f"vsse{eew}.v v8, (a0), a3{mask}"), eew, span))
                out.append(Body("ff", (head, f"vle{eew}ff.v v8, (a1){mask}", "csrr a0, vl"), eew, span))
        for n in (1, 2, 4, 8):
            out.append(Body("whole", (f"vl{n}re{eew}.v v8, (a1)", f"vmv{n}r.v v16, v8", f"vs{n}r.v v16, (a0)"),
                            eew, n))
    return out


def _fill_bodies() -> list[Body]:
    """vmv.v.i at several SEW/LMUL and immediates, stored to see it."""
    out = []
    for k, (sew, lmul) in enumerate(((8, "m1"), (8, "m8"), (16, "m2"), (32, "mf2"), (64, "m4"), (64, "m1"))):
        span = 1 << max(LMULS[lmul], 0)
        out.append(Body("fill", (f"vsetvli t0, a2, e{sew}, {lmul}, ta, mu", f"vmv.v.i v8, {(7 * k) % 32 - 16}",
                                 f"vse{sew}.v v8, (a0)"), sew, span))
    return out


# the chunk loop of gen.lower.lower_vector.clear_function (label and fixup aside;
# tests/emu/test_emu_vector_vs_qemu.py checks that they agree)
CLEAR_LOOP = ("vsetvli t0, zero, e8, {lmul}, ta, ma", "vmv.v.i v0, 0", "1:",
              "vsetvli t0, a1, e8, {lmul}, ta, ma", "vse8.v v0, (a0)", "sub a1, a1, t0",
              "add a0, a0, t0", "bnez a1, 1b")


def _clear_bodies() -> list[Body]:
    return [Body("clear", tuple(ln.format(lmul=f"m{m}") for ln in CLEAR_LOOP), 8, m) for m in (1, 8)]


# gen.lower.lower_vector's e16..e64 forms (fixups and SUM aside; 1: the loop,
# 2: the tail, 3: the return; tests/emu/test_emu_vector_vs_qemu.py checks them)
WIDE_COPY = ("li t2, {b}", "bltu a2, t2, 2f", "1:", "srli t1, a2, {lg}",
             "vsetvli t1, t1, e{sew}, {lmul}, ta, ma", "{wload} v0, (a1)", "{wvl}",
             "slli t0, t1, {lg}", "sub a2, a2, t0", "add a1, a1, t0", "vse{sew}.v v0, (a0)",
             "add a0, a0, t0", "bgeu a2, t2, 1b", "2:", "beqz a2, 3f",
             "vsetvli t0, a2, e8, m1, ta, ma", "{bload} v0, (a1)", "{bvl}", "sub a2, a2, t0",
             "vse8.v v0, (a0)", "3:")
WIDE_CLEAR = ("vsetvli t0, zero, e{sew}, {lmul}, ta, ma", "vmv.v.i v0, 0", "li t2, {b}",
              "bltu a1, t2, 2f", "1:", "srli t1, a1, {lg}",
              "vsetvli t1, t1, e{sew}, {lmul}, ta, ma",
              "slli t0, t1, {lg}", "vse{sew}.v v0, (a0)", "sub a1, a1, t0", "add a0, a0, t0",
              "bgeu a1, t2, 1b", "2:", "beqz a1, 3f", "vsetvli t0, a1, e8, m1, ta, ma",
              "vse8.v v0, (a0)", "sub a1, a1, t0", "3:")
RESTART = ("vsetvli zero, a2, e8, {lmul}, ta, ma", "csrw vstart, a3", "vse8.v v0, (a0)")


def wide_lines(template: tuple, sew: int, lmul: int, ff: bool = False) -> tuple[str, ...]:
    """A WIDE_* template at one SEW, LMUL and load kind."""
    f = {"b": sew // 8, "lg": (sew // 8).bit_length() - 1, "sew": sew, "lmul": f"m{lmul}",
         "wload": f"vle{sew}ff.v" if ff else f"vle{sew}.v", "bload": "vle8ff.v" if ff else "vle8.v",
         "wvl": "csrr t1, vl" if ff else "", "bvl": "csrr t0, vl" if ff else ""}
    return tuple(ln.format(**f) for ln in template if ln.format(**f))


def _wide_bodies() -> list[Body]:
    out = []
    for sew in (16, 32, 64):
        for lmul in (1, 8):
            for ff in (False, True):
                out.append(Body("wcopy", wide_lines(WIDE_COPY, sew, lmul, ff), sew, lmul))
            out.append(Body("wclear", wide_lines(WIDE_CLEAR, sew, lmul), sew, lmul))
    for lmul in (1, 8):
        out.append(Body("restart", tuple(ln.format(lmul=f"m{lmul}") for ln in RESTART), 8, lmul))
    return out


def bodies() -> list[Body]:
    return _vset_bodies() + _access_bodies() + _fill_bodies() + _clear_bodies() + _wide_bodies()


def assembly(all_bodies: list[Body]) -> str:
    """cases.S: case_<k> functions and the case_table driver.c indexes."""
    out = ["\t.text"]
    for k, b in enumerate(all_bodies):
        out += [f"\t.globl case_{k}", f"case_{k}:", *(f"\t{line}" for line in b.lines), "\tret"]
    out += ["\t.section .rodata", "\t.globl case_table", "\t.balign 8", "case_table:"]
    out += [f"\t.dword case_{k}" for k in range(len(all_bodies))]
    return "\n".join(out) + "\n"


def _avls(rng: random.Random, top: int) -> list[int]:
    return [0, 1, top - 1, top, top + 1, 2 * top + 3, (1 << 64) - 1, rng.randrange(1, 3 * top)]


def _vset_args(rng: random.Random, vlen: int, b: Body) -> list[tuple]:
    if b.lines[0].startswith("vsetvl "):
        vtypes = [rng.randrange(256) for _ in range(12)] + [1 << 8, 1 << 63, 1 << 62 | 3]
        return [(0, 0, avl, 0, vt) for vt in vtypes for avl in _avls(rng, vlen // 8)[:4]]
    return [(0, 0, avl, 0, 0) for avl in _avls(rng, 8 * vlen // 8)]


def _access_args(rng: random.Random, vlen: int, b: Body, fast: bool) -> list[tuple]:
    size, top = b.eew // 8, b.span * vlen // b.eew
    out = []
    for avl in _avls(rng, top)[: 4 if fast else 8]:
        src = DATA + size * rng.randrange(PAGE // size)
        dst = DATA + PAGE + size * rng.randrange(PAGE // 2 // size)
        stride = size * rng.choice([0, 1, 2, 3, -1, -2, 5])
        out.append((dst, src, avl, stride, 0))
    for k in (0, 1, rng.randrange(2, max(3, top))):          # element k is the first in the bad page
        edge = DATA + ARENA - k * size
        out.append((DATA + PAGE, edge, top, size, 0))
        out.append((edge, DATA, top, size, 0))
    return out


def _clear_args(rng: random.Random, vlen: int, b: Body, fast: bool) -> list[tuple]:
    """n of up to eight chunks (and the arena): at a random offset without a
    fault, and with dst placed so that the byte `f` of the buffer is the
    first in the PROT_NONE page (element 0, 1 or a random one of a chunk)."""
    top = b.span * vlen // 8
    out = []
    for _ in range(3 if fast else 8):
        n = rng.randrange(0, min(8 * top, ARENA - 64) + 1)
        out.append((DATA + rng.randrange(ARENA - n + 1), n, 0, 0, 0))
    for _ in range(3 if fast else 8):
        n = rng.randrange(2, min(8 * top, ARENA) + 1)
        f = rng.choice([0, 1, top, top + 1, rng.randrange(n)]) % n
        out.append((DATA + ARENA - f, n, 0, 0, 0))
    return out


def _straddle(rng: random.Random, n: int, size: int, top: int) -> int:
    """The offset of the buffer's first byte in the PROT_NONE page: at an
    element's start or inside it, in the first or a later chunk."""
    f = rng.choice([0, 1, size - 1, size + 1, top - 1, top + size // 2 + 1, rng.randrange(n)])
    return f % n


def _wide_args(rng: random.Random, vlen: int, b: Body, fast: bool) -> list[tuple]:
    """A wcopy or wclear: n of up to three chunks, with no fault and with
    dst (and a copy's src) ending in the PROT_NONE page."""
    size, top = b.eew // 8, b.span * vlen // 8
    out = []
    for _ in range(2 if fast else 6):
        n = rng.randrange(0, min(3 * top, PAGE) + 1)
        dst, src = DATA + PAGE + rng.randrange(PAGE - n + 1), DATA + rng.randrange(PAGE - n + 1)
        out.append((dst, src, n, 0, 0) if b.group == "wcopy" else (dst, n, 0, 0, 0))
    for _ in range(3 if fast else 8):
        n = rng.randrange(2, min(3 * top, PAGE) + 1)
        edge = DATA + ARENA - _straddle(rng, n, size, top)
        near = DATA + rng.randrange(PAGE - n + 1)
        if b.group == "wclear":
            out.append((edge, n, 0, 0, 0))
        else:
            out.append((edge, near, n, 0, 0) if rng.randrange(2) else (near, edge, n, 0, 0))
    return out


def _restart_args(rng: random.Random, vlen: int, b: Body, fast: bool) -> list[tuple]:
    """a2 bytes stored from vstart a3, dst ending in the PROT_NONE page or not."""
    top = b.span * vlen // 8
    out = []
    for _ in range(4 if fast else 10):
        n = rng.randrange(2, top + 1)
        start = rng.randrange(n)
        dst = DATA + ARENA - rng.randrange(n) if rng.randrange(3) else DATA + PAGE
        out.append((dst, 0, n, start, 0))
    return out


def cases(vlen: int, seed: int, fast: bool) -> list[tuple]:
    """(body index, a0, a1, a2, a3, a4, fill seed) for every case at this VLEN."""
    rng = random.Random(seed * 7919 + vlen)
    out = []
    for k, b in enumerate(bodies()):
        if b.group == "clear":
            args = _clear_args(rng, vlen, b, fast)
        elif b.group in ("wcopy", "wclear"):
            args = _wide_args(rng, vlen, b, fast)
        elif b.group == "restart":
            args = _restart_args(rng, vlen, b, fast)
        else:
            args = _vset_args(rng, vlen, b) if b.group == "vset" else _access_args(rng, vlen, b, fast)
        if fast and b.group == "vset":
            args = rng.sample(args, min(len(args), 4))
        out += [(k, *a, rng.randrange(1 << 32)) for a in args]
    return out
