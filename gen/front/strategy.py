"""The validated strategy: what a `.copy` file says, as frozen data.

Role: the data model shared by parsing, validation and lowering.  Values here
are already checked (gen.front.validate makes them); lowering may rely on them.
May import only copygen.errors and the standard library.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from copygen.errors import Loc, Warning_

SZREG = 8            # bytes per register on RV64 (xlen 64 is all we emit)
MAX_UNROLL = 32
SCHEDULES = ("loads_first", "interleave", "pipelined", "paired")


@dataclass(frozen=True)
class Target:
    """A core the code is tuned for (docs/strategies.md: misaligned slow or fast),
    and the register rules of the kernel it goes into (gen.front.registers):
    `reserve`, registers no generated instruction may name; `jump`, the one
    register a computed jump may go through (None: any)."""

    name: str
    xlen: int
    misaligned: str          # "slow" | "fast"
    profile: str             # cost profile name (emu/profiles/<profile>.toml)
    loc: Loc
    reserve: tuple[str, ...] = ()    # ABI names, e.g. ("t6",)
    jump: str | None = None          # ABI name, e.g. "t2"

    @property
    def fast_misaligned(self) -> bool:
        return self.misaligned == "fast"


@dataclass(frozen=True, kw_only=True)
class Phases:
    """The phases of one copy or fill routine (docs/strategies.md, "The phases").
    Built by keyword only: the fields are many and several share a type.

    threshold:   sizes below it take the pure byte loop.
    align:       "dst": byte head until dst is aligned; "none": no head;
                 "overlap" (string functions, fast cores): one word at dst,
                 then dst rounded up.  "src" parses but is refused.
    word_unroll: words per block of the co-aligned word loop.
    shift_unroll: words per block of the shift copy; 0 = no shift copy.
    then_unroll: words per block of the second word class (`then words`), a
                 loop for what the first leaves; 0 = no second class.  With
                 one, every loop tests its entry (`tested`), so `threshold`
                 need only cover the alignment head.
    then_shift_unroll: the same for the shift copy (`then shift`).
    ends:        "bytes" | "pieces" | "overlap": how a size-class routine
                 copies its sub-word head and last bytes (one byte at a time,
                 or from the aligned words that hold them, stored in 4-, 2-
                 and 1-byte pieces; `overlap`, clear_user only: one piece of
                 each size at each end, stored whatever the alignment, some
                 over bytes zeroed already, so that no test branches).
    inline:      "none" | "words" | "shift" | "both": which first-class loops
                 of a size-class routine lie on the straight path (a call
                 with a whole first block left falls through into them);
                 the others sit out of line, behind a forward branch.  In
                 a copy with `tail overlap`, `words` and `both` put the
                 overlapping last word out of line too.
    expect:      "none" | "aligned" (string functions): likely()/unlikely()
                 on the alignment tests, so that GCC lays out the path of
                 word-aligned pointers as the fall-through one.
    tail:        "bytes" | "words" | "steps" | "overlap" | "jump" | "ladder".  `words`: a one-word
                 loop after the last word loop; `steps` (size classes): one
                 straight-line block each of half, a quarter, ... one word of
                 the last loop's block, taken as the bits of what is left say.
                 `jump` (memset, in assembly): the words beyond whole blocks
                 by a computed jump into the block's run of stores.
                 `ladder` (clear_user, size classes, `ends overlap`): whole
                 words stored as aligned words from both ends of the span,
                 overlapping (gen.phases.clear_ladder).
    form:        "c" | "asm" (memcpy): in string.c, or in memcpy.S through
                 the lowering of copy_user (whose phases it then takes).
    bytes_below, bytes_unroll: (an assembly memcpy with size classes) a
                 call shorter than `bytes_below` whose dst is misaligned
                 copies bytes, `bytes_unroll` loaded before they are stored,
                 instead of taking the alignment head; 0: no such path.
    keep:        registers the code around the routine keeps live across it
                 (read from a kernel tree by copygen patch, never written in
                 the language), and the target's reserved ones, which the
                 lowering adds: the register pools leave them out.
    fault:       "exact" (return exactly the bytes not stored; a copy's word
                 fault resumes the byte loop, so every reachable byte is
                 copied) | "restart" (copy_user: exact too, but a word fault
                 resumes the byte loop at the start of its block, storing
                 again what the block stored: one exit per block instead of
                 one per store) | "block" (count whole blocks, as the 2021
                 routine did).
    """

    threshold: int
    align: str = "dst"
    word_unroll: int = 1
    word_schedule: str = "loads_first"
    shift_unroll: int = 0
    shift_schedule: str = "loads_first"
    tail: str = "bytes"
    fault: str = "exact"
    then_unroll: int = 0
    then_schedule: str = "loads_first"
    then_shift_unroll: int = 0
    then_shift_schedule: str = "loads_first"
    ends: str = "bytes"
    inline: str = "none"
    expect: str = "none"
    keep: tuple[str, ...] = ()
    form: str = "c"
    bytes_below: int = 0
    bytes_unroll: int = 0

    @property
    def word_block(self) -> int:
        return self.word_unroll * SZREG

    @property
    def tested(self) -> bool:
        """Size classes: loops test their entry instead of relying on the threshold."""
        return self.then_unroll > 0

    @property
    def word_tail(self) -> bool:
        """The loops leave less than a word (a word tail or one-word loops)."""
        return self.tail in ("words", "steps")

    @property
    def last_shift_unroll(self) -> int:
        """Words per block of the shift copy's last loop (0: no shift copy)."""
        return self.then_shift_unroll or self.shift_unroll

    @property
    def shift_block(self) -> int:
        return self.shift_unroll * SZREG


@dataclass(frozen=True)
class Vector:
    """The vector path of a copy_user or clear_user routine (uaccess_vector.S).

    sew, lmul:  the vsetvli's element width (bits) and register group size.
    threshold:  calls of fewer bytes run the scalar phases; the others the
                vector routine (the kernel's riscv_v_usercopy_threshold).
    loads:      a copy's "plain" (vle: a load fault counts the whole chunk as
                not copied) | "ff" (vle<sew>ff: a fault past element 0 trims
                the chunk, so the next chunk's first element takes the
                fault); None for a clear, which only stores.
    vlen_min, vlen_max: the VLENs the code is for (powers of two).
    """

    sew: int
    lmul: int
    threshold: int
    loads: str | None = "plain"
    vlen_min: int = 128
    vlen_max: int = 1024
    loc: Loc | None = field(default=None, compare=False)

    def vlmax(self, vlen: int) -> int:
        """Elements per chunk at this VLEN: LMUL * VLEN / SEW."""
        return self.lmul * vlen // self.sew

    @property
    def vlens(self) -> tuple[int, ...]:
        """Every VLEN of the range."""
        out, v = [], self.vlen_min
        while v <= self.vlen_max:
            out.append(v)
            v *= 2
        return tuple(out)


@dataclass(frozen=True)
class UserRoutine:
    """A block of uaccess.S: its name, target, phases, where it was written,
    and its vector phase if any."""

    name: str
    target: Target
    phases: Phases
    loc: Loc
    vector: Vector | None = None


@dataclass(frozen=True)
class CopyUser(UserRoutine):
    """uaccess.S: __asm_copy_to_user and __asm_copy_from_user (one body);
    with `vector`, uaccess_vector.S too (__asm_vector_usercopy)."""


@dataclass(frozen=True)
class ClearUser(UserRoutine):
    """uaccess.S: __clear_user; with `vector`, uaccess_vector.S too
    (__asm_vector_clear_user)."""


@dataclass(frozen=True)
class MemmoveSpec:
    forward: str = "memcpy"      # "memcpy": reuse memcpy's strategy | "bytes"
    backward: str = "words"      # "bytes" | "words"
    form: str = "c"              # "asm": all of memmove in memcpy.S, after memcpy


@dataclass(frozen=True)
class StringLib:
    """string.c: memcpy, memmove, memset."""

    name: str
    target: Target
    memcpy: Phases
    memmove: MemmoveSpec
    memset: Phases
    loc: Loc

    @property
    def memcpy_asm(self) -> bool:
        """memcpy is emitted in assembly (memcpy.S, `form asm`), not in string.c."""
        return self.memcpy.form == "asm"

    @property
    def memmove_asm(self) -> bool:
        """memmove is in memcpy.S (`form asm`, gen.lower.lower_memmove): disjoint
        buffers branch into memcpy there, overlapping ones are copied in
        place."""
        return self.memmove.form == "asm"

    @property
    def memset_asm(self) -> bool:
        """memset is emitted in assembly (memset.S, `tail jump`), not in string.c."""
        return self.memset.tail == "jump"


@dataclass(frozen=True)
class Sweep:
    """A parameter space over one routine (walked by the autotuner)."""

    name: str
    routine: str
    axes: tuple[tuple[str, tuple], ...]
    loc: Loc


@dataclass(frozen=True)
class Strategy:
    """Everything one `.copy` file describes: one kernel library variant."""

    file: str
    targets: tuple[Target, ...]
    copy_user: CopyUser | None
    clear_user: ClearUser | None
    string: StringLib | None
    sweeps: tuple[Sweep, ...] = ()
    warnings: tuple[Warning_, ...] = field(default=(), compare=False)

    @property
    def stem(self) -> str:
        from pathlib import Path
        return Path(self.file).stem

    def routines(self) -> list[str]:
        """Names of the kernel symbols this variant defines."""
        out = []
        if self.copy_user:
            out += ["__asm_copy_to_user", "__asm_copy_from_user"]
            if self.copy_user.vector:
                out.append("__asm_vector_usercopy")
        if self.clear_user:
            out.append("__clear_user")
            if self.clear_user.vector:
                out.append("__asm_vector_clear_user")
        if self.string:
            out += ["memcpy", "memmove", "memset"]
        return out
