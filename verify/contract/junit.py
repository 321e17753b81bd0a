"""JUnit XML of verification reports, so a CI system shows a kernel tree's
proofs like its other tests: one test suite per input file, one test case
per routine and clause.  A violated required clause is a failure, an unknown
one an error, one not checked (verify.counterexamples.early: a violation decided first)
skipped; a property not required (verify.contract.clauses.PROPERTIES) always
passes and says what it found in its output.

A clause holding below a bound is an error too unless the run asked for a
bound it covers (`asked`, as verify.contract.verdict.verdict takes it).

Role: rendering only.  May import verify.contract.clauses, verify.contract.verdict,
the standard library.
"""
from __future__ import annotations

import xml.etree.ElementTree as ET

from copygen.verify.contract.clauses import CLAUSES, NOT_CHECKED, required
from copygen.verify.contract.verdict import counts


def junit_xml(reports: dict, require: tuple[str, ...] = (), asked: int | None = None) -> str:
    """`reports`: {file: [RoutineReport]}; `asked`: the run's --bounded N."""
    root = ET.Element("testsuites", name="copygen verify")
    for f, reps in reports.items():
        cases = [(r, c) for r in reps for c in r.status]
        suite = ET.SubElement(root, "testsuite", name=str(f), tests=str(len(cases)),
                              time=f"{sum(r.seconds for r in reps):.2f}")
        fails = errors = skipped = 0
        for r, c in cases:
            st, detail = r.status[c], r.detail.get(c, "")
            tc = ET.SubElement(suite, "testcase", classname=f"{f}.{r.symbol}", name=f"{c}: {CLAUSES[c]}")
            if c not in required(r.kind, require, "R1" in r.status):
                ET.SubElement(tc, "system-out").text = f"property {c}: {st}: {detail}"
            elif st == "violated":
                fails += 1
                ET.SubElement(tc, "failure", message=f"{c} violated", type="violated").text = detail
            elif st == NOT_CHECKED:
                skipped += 1
                ET.SubElement(tc, "skipped", message=f"{c} {st}").text = detail
            elif st != "proved" and not counts(st, asked):
                errors += 1
                ET.SubElement(tc, "error", message=f"{c} {st}", type="unknown").text = detail
            else:
                ET.SubElement(tc, "system-out").text = f"{st}: {detail}"
        suite.set("failures", str(fails))
        suite.set("errors", str(errors))
        suite.set("skipped", str(skipped))
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"
