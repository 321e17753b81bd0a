"""Fault-return bookkeeping: attach a fault exit to every user access.

When a user access faults, the routine must return N, the number of bytes
not copied (docs/contract.md, C2-C6).  Every phase keeps `a0` = first destination byte
not yet known to be stored, possibly displaced by a constant: a block that has
advanced `a0` early, or has stored some of its words, is `c` bytes away from
the truth.

Policies
  exact  c = (bytes stored so far in this block) - (advance of a0 so far).
         In a copy, a faulting *word* access does not end the routine: its
         exit moves a0 to the first byte not stored, a1 to the matching
         source byte, and resumes in the byte loop, which copies every byte
         still reachable and faults exactly at the first one that is not.
         So N is exactly the bytes not stored, and N == n only when the
         very first byte faults (a load fault on the second word of a block
         would otherwise return n although bytes were readable: the 2021
         corner of docs/contract.md, C5).  Byte accesses (head, byte loop) and
         fills return directly: N = end - (a0 + c).
  restart  (copies) c = -(advance of a0 so far): a faulting word access
         resumes the byte loop at the first byte of its block, which stores
         again the bytes the block stored (the same values) and faults
         exactly where the block did, or later (a load fault: at the first
         unreadable source byte).  N is as exact as under `exact`; every
         access of a block whose cursors have not moved shares one exit, so
         a block costs one or two exits instead of a ladder rung per store.
  block  c = -(advance of a0 so far): stores done inside the faulting block
         are reported as not copied (what the 2021 routine did)

The matching source byte.  Within a phase the "lead" L = (advance of a1) -
(advance of a0) since the phase began is known statically for every step, so
the source byte matching a0 + c is a1 - L + c; in the shift copy a1 is
rounded down and the byte offset 8 * off sits in a4, so off is added back.

Role: turn scheduled Steps into Insns with fault exits, and emit the exits.
May import gen.emission.ir, gen.phases.schedule, gen.front.strategy.
"""
from __future__ import annotations

from copygen.gen.emission.ir import Insn, Label
from copygen.gen.phases.schedule import Step
from copygen.gen.front.strategy import SZREG

SHIFT_OFF = "a4"     # the shift copy keeps 8 * (src & 7) here (gen.lower.lower_uaccess)


class FaultExits:
    """The fault exits one function needs.

    `label(c)` returns N = end - (a0 + c), `at(reg, c)` N = end - (reg + c);
    `retry(c, d, shift)` resumes the byte loop at `bytes_label` from a0 + c
    and the source byte a1 + d (+ off in the shift copy).  Each exit is
    named by where the first byte not stored is: `.L<prefix>_fault_a0_plus_8`
    (a0 + 8), `.L<prefix>_fault_a2_minus_16`, `.L<prefix>_retry_a0_a1_minus_8`
    (a0 - 8 and its source byte a1 - 8); within a ladder the rung's own add
    is its share of that, the rungs below add the rest.  `done` says what
    the routine does to a byte ("copied", "zeroed") in the exits' comments.
    """

    def __init__(self, prefix: str, bytes_label: str | None = None, done: str = "copied"):
        self.prefix = prefix
        self.bytes_label = bytes_label
        self.done = done
        self.offsets: set[int] = set()
        self.retries: set[tuple[int, int, bool]] = set()
        self.bytes_used = False   # some access resumes the byte loop as it is
        self.based: set[tuple[str, int]] = set()   # (reg, c) of `at` exits

    def at(self, reg: str, c: int) -> str:
        """N = end - (reg + c): for a store addressed from `reg`, not a0."""
        self.based.add((reg, c))
        return f".L{self.prefix}_fault_{reg}_{_signed(c)}"

    def label(self, c: int) -> str:
        self.offsets.add(c)
        if c == 0:
            return f".L{self.prefix}_fault"
        return f".L{self.prefix}_fault_a0_{_signed(c)}"

    def retry(self, c: int, d: int, shift: bool = False) -> str:
        assert self.bytes_label, "retry exits need the byte loop"
        if (c, d, shift) == (0, 0, False):
            self.bytes_used = True
            return self.bytes_label      # a0 and a1 already name the first byte
        self.retries.add((c, d, shift))
        name = f".L{self.prefix}_retry"
        if shift:
            name += "_shift"
        if (c, d) == (0, 0):
            return name                          # the shift copy's resync block
        if c == d:
            return name + f"_a0_a1_{_signed(c)}"    # both cursors move alike
        if c:
            name += f"_a0_{_signed(c)}"
        if d:
            name += f"_a1_{_signed(d)}"
        return name


def _signed(c: int) -> str:
    return f"{'plus' if c > 0 else 'minus'}_{abs(c)}"


def lead(steps) -> int:
    """How far a1 moves ahead of a0 over `steps`."""
    return sum(s.offset if s.kind == "adv_src" else -s.offset if s.kind == "adv_dst" else 0
               for s in steps)


def attach(steps: tuple[Step, ...] | list[Step], exits: FaultExits, policy: str,
           user: bool = True, retry: bool = False, lead0: int = 0,
           shift: bool = False) -> list[Insn]:
    """Insns for `steps`, each user access carrying its fault exit.

    With `retry` (copies under the exact policy) the exit resumes the byte
    loop; `lead0` is a1's lead over a0 when `steps` begin.
    """
    out: list[Insn] = []
    stored = 0       # bytes of this block stored so far
    advanced = 0     # how far a0 has moved since the block began
    ahead = lead0    # how far a1 is ahead of the source byte matching a0
    for st in steps:
        fix = None
        if st.kind == "store":
            start = advanced + st.offset
            assert start == stored, f"stores out of order at {st}: {start} != {stored}"
        if user and st.kind in ("load", "store"):
            exact = policy == "exact" or (policy == "restart" and not retry)
            c = stored - advanced if exact else -advanced
            fix = exits.retry(c, c - ahead, shift) if retry else exits.label(c)
        out.append(Insn(st.op, st.operands, fix))
        if st.kind == "store":
            stored += SZREG
        elif st.kind == "adv_dst":
            advanced += st.offset
            ahead -= st.offset
        elif st.kind == "adv_src":
            ahead += st.offset
    return out


def _chains(retries) -> list[list[tuple[int, int]]]:
    """Group retry exits into ladders: exits with the same c - d differ only
    by how far both cursors step, so one falls through into the next.

    Each ladder is ordered so that its last exit (the one that jumps on)
    moves the fewest cursors the shortest way.
    """
    def last_cost(chain) -> tuple[int, int]:
        c, d = chain[-1]
        return (c != 0) + (d != 0), abs(c) + abs(d)
    groups: dict[int, list[tuple[int, int]]] = {}
    for c, d in retries:
        groups.setdefault(c - d, []).append((c, d))
    out = []
    for key in sorted(groups):
        up = sorted(groups[key])
        down = up[::-1]
        out.append(up if last_cost(up) <= last_cost(down) else down)
    return out


def _step(reg: str, delta: int, note: str) -> list:
    return [Insn("addi", (reg, reg, str(delta)), note=note)] if delta else []


def _plus(reg: str, c: int) -> str:
    """reg + c as a comment writes it: a0 + 8, a1 - 3, a0."""
    return f"{reg} {'+' if c > 0 else '-'} {abs(c)}" if c else reg


def _share(delta: int, reg: str, total: int) -> str:
    """The note of a rung that adds `delta` of a ladder's `total`."""
    return f"{delta:+d}; with the exits below, {_plus(reg, total)}"


def _ladder(exits: FaultExits, chain, shift: bool, target: str | None) -> list:
    """One ladder: each exit moves a0 and a1 by its difference to the next
    exit and falls through; the last moves them by its own offsets and jumps
    to `target` (or falls through when None)."""
    body: list = []
    for i, (c, d) in enumerate(chain):
        body.append(Label(exits.retry(c, d, shift)))
        if i + 1 < len(chain):
            nc, nd = chain[i + 1]
            body += _step("a0", c - nc, _share(c - nc, "a0", c))
            body += _step("a1", d - nd, _share(d - nd, "a1", d))
            continue
        body += _step("a0", c, f"the first byte not stored is {abs(c)} "
                               f"{'past' if c > 0 else 'before'} a0")
        body += _step("a1", d, "and its source byte" if c else
                      f"a0 is right; its source byte is {abs(d)} "
                      f"{'past' if d > 0 else 'before'} a1")
        if target:
            body.append(Insn("j", (target,)))
    return body


def _retry_code(exits: FaultExits) -> list:
    """Retry exits: move a0/a1 to the first byte not stored, then the byte loop.

    Exits are laddered (`_chains`).  Shift-copy exits end in one shared
    block that adds off back to a1; the exit named by offsets (0, 0) is that
    block's own label.
    """
    body: list = []
    plain = [r[:2] for r in exits.retries if not r[2]]
    shifted = [r[:2] for r in exits.retries if r[2] and r[:2] != (0, 0)]
    for chain in _chains(plain):
        body += _ladder(exits, chain, False, exits.bytes_label)
    resync = f".L{exits.prefix}_retry_shift"
    ladders = _chains(shifted)
    for k, chain in enumerate(ladders):
        body += _ladder(exits, chain, True, resync if k + 1 < len(ladders) else None)
    if any(r[2] for r in exits.retries):
        body += [Label(resync),
                 Insn("srli", ("t0", SHIFT_OFF, "3"), note="off = src & (SZREG - 1)"),
                 Insn("add", ("a1", "a1", "t0"), note="a1 was rounded down: add off back"),
                 Insn("j", (exits.bytes_label,))]
    return body


def exit_code(exits: FaultExits, end_reg: str, disable: list[Insn]) -> list:
    """The fault exits: retries first, then adjust a0 by c, N = end - a0, SUM off, return.

    The adjusting exits form one ladder, largest c first: each adds the
    difference to the exit below and falls into it, the last adds its own
    c and falls into the return."""
    body: list = _retry_code(exits)
    main = f".L{exits.prefix}_fault"
    for reg, c in sorted(exits.based):
        body += [Label(exits.at(reg, c)),
                 Insn("addi", ("a0", reg, str(c)), note=f"the store at {reg}{c:+d} faulted"),
                 Insn("j", (main,))]
    others = sorted(exits.offsets - {0}, reverse=True)
    for k, c in enumerate(others):
        below = others[k + 1] if k + 1 < len(others) else 0
        note = (_share(c - below, "a0", c) if k + 1 < len(others) else
                f"{_plus('a0', c)}: the first byte not stored")
        body += [Label(exits.label(c)), Insn("addi", ("a0", "a0", str(c - below)), note=note)]
    exits.offsets.add(0)
    body += [Label(main), Insn("sub", ("a0", end_reg, "a0"), note=f"bytes not {exits.done}")]
    body += disable
    body.append(Insn("ret"))
    return body
