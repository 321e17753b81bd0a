"""Counterexamples of the vector routines' contracts (verify.vector.vprove),
replayed in the emulator at the proof's VLEN.  A clear (world "clear") is
called with dst and n, and its expected bytes are zeros.

A failed check's query is solved again with n as small as it goes; the
model gives the call (n, dst's and src's page offsets, the first
inaccessible byte of the user buffer), which is rebuilt concretely as every
concrete run of the verifier is (verify.invariants.concrete): the user
buffer on pages of its own, every page from the fault on unmapped, the
kernel buffer elsewhere, sstatus.VS on as inside the kernel's vector
section.  The routine runs to its return in emu.Machine at that VLEN, and
the run is read for the clause: the return value (C1-C6, V5), sstatus.SUM
(S1), the callee-saved registers (A1), dst's bytes (C1, C3, C4), vstart
(V0).  A clause is reported violated only when the run shows it; a query
on a path from the loop head can name a state no call reaches, and is then
left unknown.  When no model's run shows the clause, a few small calls
(faults at, inside and just past the first chunk) are tried.

Role: failed vector checks -> verdicts with replayed counterexamples.
May import z3, emu, verify.invariants.concrete, verify.solver.budget, verify.contract.world,
verify.symbolic.z3ops.
"""
from __future__ import annotations

import random
from dataclasses import dataclass

import z3

from copygen import emu
from copygen.verify.invariants import concrete
from copygen.verify.solver.budget import budget
from copygen.verify.contract.world import PAGE
from copygen.verify.symbolic.z3ops import bv

# n's limits, smallest first: the first that still has a model is replayed
SHRINK = (64, 256, 1024, 4096)
USER, KERNEL = 0x1000_0000, 0x7000_0000
STEPS = 1_000_000
# the clauses a run can show
SHOWN_BY_RUN = ("C1", "C2", "C3", "C4", "C5", "C6", "V5", "S1", "A1", "V0")


@dataclass(frozen=True)
class VecCall:
    """One concrete call of the vector routine."""
    kind: str              # "to" or "clear": dst is user memory; "from": src is
    vlen: int
    n: int
    dst: int
    src: int
    fault: int | None      # offset in the user buffer of its first inaccessible byte
    sum_held: bool

    @property
    def user(self) -> int:
        return self.src if self.kind == "from" else self.dst


@dataclass(frozen=True)
class VecRun:
    """What the call left: a0, vstart, sstatus.SUM, whether the callee-saved
    registers were kept, dst's n bytes and the source's; `error` when the
    run stopped otherwise than by returning."""
    ret: int = 0
    vstart: int = 0
    sum_at_exit: bool = False
    callee_ok: bool = True
    dst: bytes = b""
    src: bytes = b""
    error: str | None = None


def _buffers(n: int, dst_off: int, src_off: int, kind: str) -> tuple[int, int]:
    if kind == "from":
        return KERNEL + dst_off, USER + src_off
    return USER + dst_off, KERNEL + src_off


def call_from(world, m, vlen: int) -> VecCall:
    """The call a model describes, with its page offsets and fault offset."""
    def val(e) -> int:
        return m.eval(e, model_completion=True).as_long()
    n = val(world.N)
    dst, src = _buffers(n, val(world.D) % PAGE, val(world.S) % PAGE, world.kind)
    nf = z3.is_true(m.eval(world.NF, model_completion=True))
    return VecCall(world.kind, vlen, n, dst, src, None if nf else val(world.FO), world.sum_held)


def run(image, symbol: str, call: VecCall, seed: int = 7) -> VecRun:
    """The call in the emulator, laid out as every concrete run of the
    verifier is (verify.invariants.concrete): random source bytes, the user
    buffer's pages from the fault on unmapped, sstatus.VS on, SUM as the
    symbol says (what call.sum_held records)."""
    data = random.Random(seed).randbytes(call.n)
    sc = concrete.Scenario(call.kind, call.dst, call.src, call.n, data, b"\xee" * call.n,
                           F=None if call.fault is None else call.user + call.fault)
    want = sc.expected()          # the source's bytes, or a clear's zeros
    try:
        out = concrete.run(image, symbol, sc, max_steps=STEPS, record_loads=False,
                           vlen=call.vlen, vector_at_entry=True)
    except emu.EmuError as err:
        return VecRun(error=str(err), src=want)
    if out.error is not None:
        return VecRun(error=out.error, src=want)
    return VecRun(out.ret, out.vstart, out.sum_at_exit, out.callee_ok, out.dst, want)


def shows(clause: str, call: VecCall, out: VecRun) -> bool:
    """Whether the run breaks `clause`."""
    if out.error is not None:
        return clause in ("C1", "T1") if call.fault is None else False
    n, ret, faulted = call.n, out.ret, call.fault is not None
    copied = n - ret if ret <= n else 0
    checks = {
        "V0": out.vstart != 0,
        "S1": out.sum_at_exit != call.sum_held,
        "A1": not out.callee_ok,
        "C1": not faulted and (ret != 0 or out.dst != out.src),
        "C2": faulted and ret > n,
        "C3": faulted and ret <= n and out.dst[:copied] != out.src[:copied],
        "C4": faulted and ret <= n and out.dst[copied:] != b"\xee" * (n - copied),
        "C5": faulted and ret == n and call.fault > 0,
        "C6": faulted and ret != n - call.fault,
        "V5": faulted and not (n - ret <= call.fault < n - ret + call.vlen),
    }
    return checks.get(clause, False)


def describe(call: VecCall, out: VecRun, clause: str) -> str:
    """The call and what the run shows, in one line a kernel developer can
    rebuild the run from."""
    where = ("no fault" if call.fault is None else
             f"user page at {call.user + call.fault:#x} inaccessible (user buffer + {call.fault})")
    head = (f"VLEN {call.vlen}, clear_user n={call.n}, dst={call.dst:#x}, {where}"
            if call.kind == "clear" else
            f"VLEN {call.vlen}, copy_{call.kind}_user n={call.n}, dst={call.dst:#x} "
            f"src={call.src:#x}, {where}")
    if out.error is not None:
        return f"{head}: stopped: {out.error}"
    seen = {"V0": f"vstart={out.vstart} at return", "S1": f"SUM {'set' if out.sum_at_exit else 'clear'} at return",
            "A1": "a callee-saved register not kept"}
    return f"{head}: returned {out.ret}" + (f", {seen[clause]}" if clause in seen else "")


def example(call: VecCall, out: VecRun) -> dict:
    """The replayed counterexample as data (the JSON report's form)."""
    return {"world": call.kind, "n": call.n, "dst": hex(call.dst), "src": hex(call.src),
            "fault_offset": call.fault, "returned": out.ret, "vstart_at_return": out.vstart,
            "sum_at_exit": out.sum_at_exit, "error": out.error}


def _models(world, query: list):
    for limit in SHRINK:
        s = z3.Solver()
        budget(s, 20_000)
        s.add(*world.preconditions(), *query, z3.ULE(world.N, bv(limit)))
        if s.check() == z3.sat:
            yield s.model()


def _small_calls(world, vlen: int):
    """Calls that fault at, inside and past the first chunk of an LMUL 8
    loop (VLEN bytes at any element width)."""
    chunk = vlen
    for n, fault, off in ((2 * chunk + 5, chunk // 2 + 3, 0), (2 * chunk + 5, 1, 0),
                          (3 * chunk, chunk + 7, 5), (2 * chunk, None, 3)):
        user_dst = world.kind != "from"
        dst, src = _buffers(n, off if user_dst else 0, 0 if user_dst else off, world.kind)
        yield VecCall(world.kind, vlen, n, dst, src, fault, world.sum_held)


def _page_aligned(call: VecCall) -> VecCall:
    """The same call with the user buffer placed so that its first
    inaccessible byte starts a page (faults are page-granular)."""
    if not call.fault:       # none, or the first byte's page: any alignment
        return call
    shift = (-(call.user + call.fault)) % PAGE
    if call.kind != "from":
        return VecCall(call.kind, call.vlen, call.n, call.dst + shift, call.src, call.fault, call.sum_held)
    return VecCall(call.kind, call.vlen, call.n, call.dst, call.src + shift, call.fault, call.sum_held)


def confirm(image, symbol: str, vlen: int, proof, rep) -> None:
    """Replay each failed clause of one world's proof: violated, with the
    run in the detail and rep.examples, when a run shows it."""
    for clause, query in proof.queries.items():
        if clause not in SHOWN_BY_RUN or rep.status.get(clause) == "violated":
            continue
        calls = [call_from(proof.w, m, vlen) for m in _models(proof.w, query)]
        for call in [*calls, *_small_calls(proof.w, vlen)]:
            call = _page_aligned(call)
            out = run(image, symbol, call)
            if shows(clause, call, out):
                rep.status[clause] = "violated"
                what = proof.failures.get(clause, "").split(" (e.g.")[0]
                rep.detail[clause] = f"{what}; replayed: {describe(call, out, clause)}"
                rep.examples[clause] = example(call, out)
                break
