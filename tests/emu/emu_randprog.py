"""Random RV64IMC programs for differential tests (fast path vs reference step).

A program: register set-up, a counted loop whose body mixes ALU, M, W,
compressed, load/store (aligned and misaligned, kernel and user pages, some
to an unmapped page) and forward branches, then a tail and `ret`.  Every
memory instruction gets an `__ex_table` entry resuming at the next
instruction, so faults are exercised without oopses.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from copygen.emu.insn.encode import encode
from copygen.emu.insn.isa import IMM_LAYOUTS, REG_FIELDS

CODE = 0x8000_0000
KBUF = 0x7000_0000   # two kernel rw pages; x8 points between them
UBUF = 0x1000_0000   # user rw page then user read-only page; x9 between them
HOLE = 0x2000_0000   # unmapped; x19 points here
DATA = (5, 6, 7, 10, 11, 12, 13, 14, 15, 28, 29)
PRIME = (10, 11, 12, 13, 14, 15)
COUNTER = 18

R_OPS = ("add sub sll slt sltu xor srl sra or and mul mulh mulhu mulhsu div divu rem remu "
         "addw subw sllw srlw sraw mulw divw divuw remw remuw").split()
I_OPS = "addi slti sltiu xori ori andi addiw".split()
SH_OPS = {"slli": 64, "srli": 64, "srai": 64, "slliw": 32, "srliw": 32, "sraiw": 32}
LOADS = {"lb": 1, "lh": 2, "lw": 4, "ld": 8, "lbu": 1, "lhu": 2, "lwu": 4}
STORES = {"sb": 1, "sh": 2, "sw": 4, "sd": 8}
BRANCHES = "beq bne blt bge bltu bgeu".split()


@dataclass
class Item:
    asm: str
    fields: dict
    target: int | None = None   # index of the branch target item
    memory: bool = False

    @property
    def length(self) -> int:
        return 2 if self.asm.startswith("c.") else 4


def _li(rng: random.Random, rd: int) -> list[Item]:
    hi = rng.randrange(-(1 << 19), 1 << 19) << 12
    return [Item("lui", dict(rd=rd, imm=hi)), Item("addi", dict(rd=rd, rs1=rd, imm=rng.randrange(-2048, 2048)))]


def _alu(rng: random.Random) -> Item:
    d, a, b = rng.choice(DATA), rng.choice(DATA), rng.choice(DATA)
    kind = rng.random()
    if kind < 0.4:
        return Item(rng.choice(R_OPS), dict(rd=d, rs1=a, rs2=b))
    if kind < 0.65:
        return Item(rng.choice(I_OPS), dict(rd=d, rs1=a, imm=rng.randrange(-2048, 2048)))
    if kind < 0.8:
        op = rng.choice(list(SH_OPS))
        return Item(op, dict(rd=d, rs1=a, imm=rng.randrange(SH_OPS[op])))
    return _compressed_alu(rng)


def _compressed_alu(rng: random.Random) -> Item:
    d, s = rng.choice(PRIME), rng.choice(PRIME)
    nz = rng.choice([i for i in range(-32, 32) if i])
    return rng.choice([
        Item("c.addi", dict(rd=d, rs1=d, imm=nz)), Item("c.li", dict(rd=d, imm=nz)),
        Item("c.mv", dict(rd=d, rs2=s)), Item("c.add", dict(rd=d, rs1=d, rs2=s)),
        Item("c.sub", dict(rd=d, rs1=d, rs2=s)), Item("c.and", dict(rd=d, rs1=d, rs2=s)),
        Item("c.xor", dict(rd=d, rs1=d, rs2=s)), Item("c.or", dict(rd=d, rs1=d, rs2=s)),
        Item("c.addw", dict(rd=d, rs1=d, rs2=s)), Item("c.subw", dict(rd=d, rs1=d, rs2=s)),
        Item("c.addiw", dict(rd=d, rs1=d, imm=nz)), Item("c.slli", dict(rd=d, rs1=d, imm=rng.randrange(1, 64))),
        Item("c.srli", dict(rd=d, rs1=d, imm=rng.randrange(1, 64))),
        Item("c.srai", dict(rd=d, rs1=d, imm=rng.randrange(1, 64))),
        Item("c.andi", dict(rd=d, rs1=d, imm=nz)),
    ])


def _memory(rng: random.Random) -> Item:
    base = rng.choices((8, 9, 19), weights=(5, 4, 1))[0]
    if rng.random() < 0.5:
        op = rng.choice(list(LOADS))
        size = LOADS[op]
    else:
        op = rng.choice(list(STORES))
        size = STORES[op]
    off = rng.randrange(-2048, 2048 - 8)  # around the page boundary at base
    if rng.random() < 0.8:
        off &= ~(size - 1)  # mostly aligned
    if size > 1 and rng.random() < 0.05:
        off = -rng.randrange(1, size)  # straddles the two pages
    if base != 19 and rng.random() < 0.3 and op in ("lw", "ld", "sw", "sd"):
        scale = 4 if op in ("lw", "sw") else 8
        off = rng.randrange(0, 32) * scale
        f = dict(rd=rng.choice(PRIME)) if op[0] == "l" else dict(rs2=rng.choice(PRIME))
        return Item("c." + op, dict(rs1=base, imm=off, **f), memory=True)
    f = dict(rd=rng.choice(DATA)) if op in LOADS else dict(rs2=rng.choice(DATA))
    return Item(op, dict(rs1=base, imm=off, **f), memory=True)


def _run(rng: random.Random) -> list[Item]:
    """Consecutive same-kind accesses through one base at increasing offsets
    (what the translator checks as one group), near a page boundary, mostly
    aligned, sometimes straddling it or a cache line."""
    op = rng.choice(["ld", "sd", "lw", "sw", "lhu", "sh", "lb", "sb"])
    size = {"ld": 8, "sd": 8, "lw": 4, "sw": 4, "lhu": 2, "sh": 2, "lb": 1, "sb": 1}[op]
    base = rng.choice((8, 9))
    off = rng.randrange(-96, 64) & ~(size - 1)
    if rng.random() < 0.2:
        off += rng.randrange(1, size) if size > 1 else 0
    items = []
    for _ in range(rng.randrange(2, 9)):
        f = dict(rd=rng.choice(DATA)) if op[0] == "l" else dict(rs2=rng.choice(DATA))
        items.append(Item(op, dict(rs1=base, imm=off, **f), memory=True))
        off += size * rng.choice((1, 1, 1, 2))
    return items


def random_program(rng: random.Random, body: int = 24, iterations: int | None = None,
                   runs: bool = False) -> list[Item]:
    items: list[Item] = []
    for r in DATA:
        items += _li(rng, r)
    items += [Item("lui", dict(rd=8, imm=KBUF + 0x1000)), Item("lui", dict(rd=9, imm=UBUF + 0x1000)),
              Item("lui", dict(rd=19, imm=HOLE + 0x1000))]
    items.append(Item("addi", dict(rd=COUNTER, rs1=0, imm=iterations or rng.randrange(1, 20))))
    loop = len(items)
    for _ in range(body):
        if runs and rng.random() < 0.2:
            items += _run(rng)
            continue
        items.append(_memory(rng) if rng.random() < 0.35 else _alu(rng))
        if rng.random() < 0.12:
            items.append(Item(rng.choice(BRANCHES), dict(rs1=rng.choice(DATA), rs2=rng.choice(DATA))))
            items[-1].target = len(items) + rng.randrange(1, 4)
    decrement = len(items)  # forward branches may land here, never past it
    items.append(Item("addi", dict(rd=COUNTER, rs1=COUNTER, imm=-1)))
    for it in items[loop:]:
        if it.target is not None:
            it.target = min(it.target, decrement)
    items.append(Item("bne", dict(rs1=COUNTER, rs2=0), target=loop))
    items += [_alu(rng) for _ in range(3)]
    items.append(Item("jalr", dict(rd=0, rs1=1, imm=0)))
    return items


def assemble(items: list[Item], base: int = CODE) -> tuple[bytes, dict[int, int]]:
    """Bytes of the program and its exception table (memory insn -> next insn)."""
    addrs = [base]
    for it in items:
        addrs.append(addrs[-1] + it.length)
    code = bytearray()
    extable = {}
    for i, it in enumerate(items):
        fields = dict(it.fields)
        if it.target is not None:
            fields["imm"] = addrs[it.target] - addrs[i]
        raw = encode(it.asm, **fields)
        code += raw.to_bytes(it.length, "little")
        if it.memory:
            extable[addrs[i]] = addrs[i + 1]
    return bytes(code), extable


def random_fields(rng: random.Random, enc) -> dict:
    """Random operands for a table row (may be unencodable: encode() checks)."""
    out = {}
    for kind, source in enc.operands:
        if kind.startswith("_"):
            continue
        if isinstance(source, int):
            out[kind] = source
        elif kind == "imm":
            signed, parts = IMM_LAYOUTS[source]
            top = max(d + h - lo for h, lo, d in parts)
            v = rng.randrange(1 << (top + 1))
            low = min(d for _, _, d in parts)
            v &= ~((1 << low) - 1)
            out[kind] = v - (1 << (top + 1)) if signed and v >> top & 1 else v
        elif kind == "csr":
            out[kind] = rng.randrange(4096)
        else:
            hi, lo, add = REG_FIELDS[source]
            out[kind] = add + rng.randrange(1 << (hi - lo + 1))
    return out
