"""The vector path of clear_user: the `vector` line of a clear_user routine
(parsed, validated with located errors, written back), the emitted
__asm_vector_clear_user (its shape), and its runs in the emulator at VLEN
128 to 1024, with the user buffer's pages unmapped from a random point:
every byte, the exact return value, SUM clear and vstart 0 at return."""
from __future__ import annotations

import random
import re

import pytest

from copygen import emu
from copygen.emu.hart.machine import SR_SUM, SSTATUS
from copygen.errors import CopygenError
from copygen.gen.emission import emit
from copygen.gen.build import build_file
from copygen.gen.front.parse import parse_text
from copygen.gen.front.unparse import file_text
from copygen.gen.front.validate import load_text

SLOW = "target x60 {\n    xlen 64\n    misaligned slow\n}\n"
CLEAR = "    small below 16\n    align dst\n    words unroll 1\n    tail bytes\n    fault exact\n"
COPY = "    small below 71\n    words unroll 8\n    tail bytes\n    fault exact\n"
VLENS = (128, 256, 512, 1024)
USER, PAGE = 0x1000_0000, 4096
AREA = 6 * PAGE
SYMBOL = "__asm_vector_clear_user"


def _clear(line: str, kind: str = "clear_user") -> str:
    body = CLEAR if kind == "clear_user" else COPY
    return f"{SLOW}{kind} cl for x60 {{\n{body}    {line}\n}}\n"


def _error(text: str) -> CopygenError:
    with pytest.raises(CopygenError) as err:
        load_text(text, "c.copy")
    return err.value


# --- the language ---------------------------------------------------------------------

@pytest.mark.parametrize("lmul", [1, 2, 4, 8])
def test_a_clear_user_takes_a_vector_line_without_loads(lmul):
    st = load_text(_clear(f"vector e8 m{lmul} above 256 vlen 128..512"))
    v = st.clear_user.vector
    assert (v.sew, v.lmul, v.threshold, v.loads, v.vlens) == (8, lmul, 256, None, (128, 256, 512))
    assert SYMBOL in st.routines() and "__asm_vector_usercopy" not in st.routines()


BAD = [
    ("vector e8 m8 above 256 loads plain", "clear_user", "does not apply to clear_user",
     "vector e8 m8 above 256`"),
    ("vector e8 m8 above 768", "copy_user", "must say how it loads", "loads plain"),
    ("vector e8 m8 above 8", "clear_user", "below the scalar routine's 16", "above 768"),
    ("vector e16 m8 above 256", "clear_user", "misaligned slow", "e8"),
    ("vector e8 m8 above 256 vlen 128..2048", "clear_user", "above 1024", "128..1024"),
]


@pytest.mark.parametrize("line,kind,message,hint", BAD, ids=[b[2] for b in BAD])
def test_bad_vector_lines_are_refused_at_their_line(line, kind, message, hint):
    err = _error(_clear(line, kind))
    assert message in err.message and hint in (err.hint or "")
    assert (err.loc.file, err.loc.line) == ("c.copy", 11 if kind == "clear_user" else 10)


def test_vector_in_a_string_function_is_refused():
    fn = "{ small below 16; align dst; words unroll 1; tail bytes%s }"
    text = SLOW + f"string s for x60 {{\n    memcpy {fn % ''}\n    memset " \
                  f"{fn % '; vector e8 m8 above 256'}\n    memmove {{ forward memcpy }}\n}}\n"
    err = _error(text)
    assert "applies to copy_user and clear_user, not memset" in err.message and err.loc.line == 7


def test_a_loads_sweep_over_a_clear_is_refused():
    text = _clear("vector e8 m8 above 256") + "sweep s for cl {\n    vector loads [plain, ff]\n}\n"
    err = _error(text)
    assert "does not apply to clear_user" in err.message


@pytest.mark.parametrize("line", ["vector e8 m8 above 256", "vector e8 m2 above 1024 vlen 256..256"])
def test_unparse_round_trips(line):
    items = parse_text(_clear(line))
    again = parse_text(file_text(items))
    assert again[1].settings[-1].values == items[1].settings[-1].values
    a, b = load_text(file_text(items)).clear_user, load_text(_clear(line)).clear_user
    assert (a.vector, a.phases) == (b.vector, b.phases)


# --- the emitted routine --------------------------------------------------------------

def test_emitted_clear_has_one_splat_one_store_and_an_exact_fault_exit():
    st = load_text(_clear("vector e8 m4 above 256"), "examples/c.copy")
    text = emit.render_vector(st, "examples/c.copy")
    assert "vector e8 m4 above 256 vlen 128..1024" in text
    code = [ln.strip() for ln in text.split("SYM_FUNC_START")[1].splitlines()
            if ln.startswith("\t") and not ln.strip().startswith(("/*", "*"))]
    assert code[2].startswith("vsetvli\tt0, zero, e8, m4") and code[3] == "vmv.v.i\tv0, 0"
    assert [c.split(",")[0] for c in code if re.search(r"\bv(le|se)\d", c)] == ["fixup vse8.v"]
    assert sum(c.startswith("csrs") for c in code) == 1
    assert [c.split("\t")[0] for c in code].count("ret") == 1
    fault = code[code.index("ret") + 1:]
    assert [f.split("\t/*")[0].strip() for f in fault[:3]] == \
        ["csrr\tt1, CSR_VSTART", "sub\ta1, a1, t1", "csrw\tCSR_VSTART, zero"]


def test_copy_and_clear_share_one_file():
    text = _clear("vector e8 m8 above 256") + \
        f"copy_user cu for x60 {{\n{COPY}    vector e8 m8 above 768 loads plain\n}}\n"
    st = load_text(text)
    out = emit.render_vector(st, "c.copy")
    assert out.count("SYM_FUNC_START(") == 2 and "vector e8 m8 above 768 loads plain" in out
    assert {"__asm_vector_usercopy", SYMBOL} <= set(st.routines())


# --- runs in the emulator ---------------------------------------------------------------

VARIANTS = {"m8": "vector e8 m8 above 256", "m1": "vector e8 m1 above 256"}


@pytest.fixture(scope="module")
def elfs(tmp_path_factory):
    d = tmp_path_factory.mktemp("vclear")
    out = {}
    for name, line in VARIANTS.items():
        src = d / f"{name}.copy"
        src.write_text(_clear(line).replace("cl for", f"{name} for"))
        out[name] = build_file(src, d).elf
    return out


def run(elf, vlen: int, n: int, off: int, fault: int | None):
    """Clear n bytes at USER + off; the user pages from `fault` bytes into
    the buffer on unmapped (rounded up to a page).  (machine, result, the
    offset of the first inaccessible byte or None)."""
    m = emu.Machine.from_elf(elf, vlen=vlen)
    m.map(USER, AREA, user=True)
    m.write(USER, b"\xee" * AREA)
    dst = USER + off
    if fault is not None:
        page = (dst + fault + PAGE - 1) & ~(PAGE - 1)
        fault = page - dst if page < dst + n else None
        if fault is not None:
            m.unmap(page, USER + AREA - page)
    return m, m.call(SYMBOL, dst, n, vector_at_entry=True), fault


@pytest.mark.parametrize("vlen", VLENS)
@pytest.mark.parametrize("faults", [False, True], ids=["no-fault", "fault"])
@pytest.mark.parametrize("name", list(VARIANTS))
def test_bytes_and_exact_return_value(elfs, name, vlen, faults):
    chunk = int(VARIANTS[name].split()[2][1:]) * vlen // 8
    rnd = random.Random(vlen * 3 + faults)
    sizes = sorted({0, 1, chunk - 1, chunk, chunk + 1, 2 * chunk + 3, 3 * PAGE - 5,
                    *(rnd.randrange(1, 3 * PAGE) for _ in range(6))})
    for n in sizes:
        off = rnd.randrange(64)
        m, r, fault = run(elfs[name], vlen, n, off, rnd.randrange(1, n + PAGE) if faults else None)
        where = f"n={n} dst+{off} fault@{fault}"
        want = 0 if fault is None else n - fault
        assert r.ret == want, where
        cleared = n - want
        assert m.read(USER + off, cleared) == bytes(cleared), where
        assert m.read(USER, off) == b"\xee" * off, where
        if fault is None:
            assert m.read(USER + off + n, 64) == b"\xee" * 64, where
        assert not m.hart.csrs[SSTATUS] & SR_SUM, where
        assert m.hart.v.vstart == 0, where


def test_instructions_per_chunk(elfs):
    """Five instructions a chunk, plus four on entry and three on return."""
    for vlen in VLENS:
        _, r, _ = run(elfs["m8"], vlen, 4 * vlen, 0, None)
        assert r.ret == 0 and r.instret == 4 + 4 * 5 + 3


def test_the_vector_unit_must_be_on(elfs):
    m = emu.Machine.from_elf(elfs["m8"], vlen=128)
    m.map(USER, AREA, user=True)
    with pytest.raises(emu.IllegalInstruction):
        m.call(SYMBOL, USER, 100)


def test_bench_runs_it_at_the_profiles_vlen(elfs):
    from copygen.measure.bench import Bench, Case
    for prof, vlen in (("x60", 256), ("x280", 512)):
        s = Bench(elfs["m8"], prof, 4096).run(Case(SYMBOL, 4096, 0, 3))
        assert s.kind == "vector_clear_user" and s.instret == 4 + 5 * (4096 // vlen) + 3


def test_the_dispatch_sends_large_clears_to_the_vector_path(elfs):
    """measure.dispatch for clear_user: from the threshold on, the vector
    clear plus the section's cycles; below it, the scalar clear."""
    from copygen.measure.bench import Bench, Case
    from copygen.measure.dispatch import CLEAR, Dispatched
    bench = Bench(elfs["m8"], "x60", 4096)
    d = Dispatched(bench, 256, 12.0, CLEAR)
    big, small = Case(CLEAR, 1024, 0, 3), Case(CLEAR, 255, 0, 3)
    vec = bench.run(Case(SYMBOL, 1024, 0, 3)).cycles
    got = d.run(big)
    assert got.cycles == vec + 12.0 and got.routine == CLEAR and got.kind == "clear_user"
    assert d.run(small).cycles == bench.run(small).cycles
