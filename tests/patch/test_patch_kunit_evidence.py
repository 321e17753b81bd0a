"""The fault suite's failure on the unpatched tree, quoted in the patch
message as evidence when `--test kunit` ran it (patch.message.fault_evidence).

The boots are kernel.kunit.Run records made here, with the suite's
results and first failing call as a real 6.12 run gives them
(bench/kernel/results/fault_suite.json); the message is the one
patch.message.commit_message writes for them.
"""
from __future__ import annotations

from copygen.kernel.kunit import Run, Suite
from copygen.patch import message
from copygen.patch.evidence import Proof, Row

FIRST = ("copy_to_user n=71 dst%8=0 src%8=0 k=8 (user page at +8 inaccessible): returned 71, "
         "8 bytes stored: returned the size although a byte could be copied")
# the 16 classes where both buffers share an alignment: 6.12's word loop
FAILING = tuple(f"copy_to_user_test.user+{i} kernel+{i}" for i in range(8)) + \
    tuple(f"copy_from_user_test.user+{i} kernel+0" for i in range(8))


def _runs(label: str, failing: tuple[str, ...], vectors=(False, True)) -> list[Run]:
    fault = {name: {"ok": False, "calls": 2600, "digest": "", "failed": 3,
                    "first": FIRST if i == 0 else f"another call {i}"}
             for i, name in enumerate(failing)}
    return [Run(label, "c0ffee", v, [Suite("usercopy", 4, 4),
                                     Suite("usercopy_fault", 136 - len(failing), 136, failing)],
                fault=fault) for v in vectors]


def _proof(symbol: str, verdict: str) -> Proof:
    status = dict.fromkeys(("C1", "C2", "C3", "C4", "C5", "C6"), "proved")
    if verdict == "violated":
        status["C5"] = "violated"
    return Proof(symbol, "copy_user", verdict, status, {"C5": ""}, 1.0)


def _message(kunit_lines) -> str:
    ch = message.Change(("copy_user",), "6.8", {"copy_user": [_proof("__asm_copy_to_user", "violated")]},
                        {"copy_user": [_proof("__asm_copy_to_user", "proved")]},
                        [Row("u74", "copy_to_user", 8, "aligned", 80, 75)], {"u74": "fitted"},
                        kunit=kunit_lines)
    return message.commit_message(ch, "0.1.0", "copygen patch x.copy --kernel-tree LINUX",
                                  "target u74 { xlen 64 }\n", "x.copy", "Ada <ada@example.org>")


def test_the_first_failing_call_before_and_the_result_after_are_quoted():
    lines = message.kunit_lines(_runs("base", FAILING), _runs("patched", ()))
    suites, evidence = message.kunit_parts(lines)
    assert suites == ["  usercopy  no V 4/4 -> 4/4, with V 4/4 -> 4/4",
                      "  usercopy_fault no V 120/136 -> 136/136, with V 120/136 -> 136/136"]
    text = " ".join(evidence)
    assert text.startswith("Before this patch copygen's fault suite (usercopy_fault, KUnit in "
                           "QEMU) fails 16 of its 136 cases without and with V; the first "
                           "failing call: copy_to_user n=71 dst%8=0 src%8=0 k=8")
    assert "returned 71, 8 bytes stored: returned the size although a byte could be copied." in text
    assert text.endswith("With the patch: 136/136 without and with V.")
    assert all(len(ln) <= message.WIDTH for ln in evidence)


def test_the_message_quotes_it_beside_the_verifiers_evidence_and_keeps_the_suite_lines():
    msg = _message(message.kunit_lines(_runs("base", FAILING), _runs("patched", ())))
    why, rest = msg.split("After it, every clause", 1)
    # in the why: after the verifier's verdict on the old code, before the new code's
    assert "Before this patch the old code has C5 violated" in why
    assert why.index("Before this patch the old code") < why.index("Before this patch copygen's "
                                                                    "fault suite")
    assert "n=71 dst%8=0 src%8=0" in " ".join(why.split())
    kunit = rest.split("tests passed before -> after:\n", 1)[1].split("\n\n", 1)[0]
    assert kunit.splitlines() == ["  usercopy  no V 4/4 -> 4/4, with V 4/4 -> 4/4",
                                  "  usercopy_fault no V 120/136 -> 136/136, with V 120/136 -> 136/136"]
    assert msg.count("n=71") == 1                  # quoted once, not again under KUnit
    assert all(len(ln) <= 75 for ln in msg.splitlines())


def test_failures_the_patch_does_not_fix_are_said_to_stay():
    lines = message.kunit_lines(_runs("base", FAILING), _runs("patched", FAILING))
    text = " ".join(message.kunit_parts(lines)[1])
    assert text.startswith("Before and after this patch copygen's fault suite")
    assert "fails 16 of its 136 cases without and with V, the same cases" in text
    assert text.endswith("This patch does not fix them.")
    # some fixed, some not
    lines = message.kunit_lines(_runs("base", FAILING), _runs("patched", FAILING[:2]))
    text = " ".join(message.kunit_parts(lines)[1])
    assert "With the patch: 134/136 without and with V (2 of the 16 still fail)." in text


def test_boots_that_differ_are_named_each_and_a_passing_suite_says_nothing():
    base = _runs("base", FAILING[:1], (False,)) + _runs("base", FAILING, (True,))
    text = " ".join(message.kunit_parts(message.kunit_lines(base, _runs("patched", ())))[1])
    assert "fails 1 of its 136 cases without V, 16 of its 136 cases with V" in text
    # nothing failed before: no paragraph, and the suite lines alone
    lines = message.kunit_lines(_runs("base", ()), _runs("patched", ()))
    assert "" not in lines and message.kunit_parts(lines)[1] == []
    assert "fault suite" not in _message(lines)
    # a tree booted without the fault suite
    stock = [Run("base", "c", False, [Suite("usercopy", 4, 4)])]
    assert message.fault_evidence(stock, stock) == []
