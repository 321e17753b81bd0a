"""Every example routine keeps the user-copy contract (docs/contract.md) under
qemu-user on random sizes 0..9000, all 64 alignment pairs, with and without
a fault at a random page boundary inside the user buffer."""
from __future__ import annotations

import pytest

from copygen.gen.front.validate import load_file
from tests.conftest import EXAMPLES
from copygen.mutate import oracle as qemu

FNS = {"copy_user": ["to", "from"], "clear_user": ["clear"],
       "string": ["memcpy", "memmove", "memset"]}


def _routines(path):
    st = load_file(path)
    out = []
    for kind, fns in FNS.items():
        if getattr(st, kind) is not None:
            out += fns
    return out


PAIRS = [(p, fn) for p in EXAMPLES for fn in _routines(p)]


@pytest.fixture(scope="module")
def harnesses(built_examples, tmp_path_factory):
    d = tmp_path_factory.mktemp("harness")
    return {stem: qemu.build_harness(res.objects, d / stem)
            for stem, res in built_examples.items()}


@pytest.mark.parametrize("path,fn", PAIRS, ids=[f"{p.stem}-{fn}" for p, fn in PAIRS])
def test_contract_under_qemu(path, fn, harnesses):
    st = load_file(path)
    exact = all(r.phases.fault == "exact" for r in (st.copy_user, st.clear_user) if r)
    cases = qemu.random_cases(fn, 1500, seed=hash((path.stem, fn)) & 0xffff)
    results = qemu.run_cases(harnesses[path.stem], cases)
    faulted = 0
    for case, r in zip(cases, results):
        assert not r.sum_at_exit, f"S1: SUM left set: {case}"
        assert 0 <= r.ret <= case.n, f"C2: {r.ret} out of range: {case}"
        assert r.prefix_ok, f"C3: copied prefix wrong: {case}"
        if case.fault_side == "none":
            assert r.ret == 0, f"C1: {case} returned {r.ret}"
        else:
            faulted += 1
            if exact:
                assert r.rest_untouched, f"C6: return not exact: {case} -> {r.ret}"
        # the byte before the faulting page can always be copied: a routine
        # that stores less than the bytes before the fault minus a block is lazy
        if case.fault_side != "none":
            base = case.dst_off if case.fault_side == "dst" else case.src_off
            avail = case.fault_at - base
            assert case.n - r.ret <= avail, f"stored past the fault?! {case}"
            if exact and fn in ("to", "from"):
                # a word fault resumes the byte loop: every reachable byte is copied
                assert case.n - r.ret == min(case.n, avail), f"C5: gave up early: {case} -> {r.ret}"
    if fn in ("to", "from", "clear"):
        assert faulted > 100, "too few fault cases to mean anything"
