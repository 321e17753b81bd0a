"""Every command's --json is the one envelope README describes, on good
input and on bad: one JSON object on stdout, {"schema": 1, "command": ...,
"ok": ...}; when not ok, "error": {message, file, line, col, hint} at the
top, the file naming the bad input.  (patch on good input needs a kernel
tree and proofs: tests/patch/test_patch.py checks its envelope.)"""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from copygen.cli import main
from tests.conftest import ROOT, SHARED_PROOFS

KERNEL2021 = ROOT / "examples" / "kernel2021.copy"
ERROR_KEYS = {"message", "file", "line", "col", "hint"}


def _files(tmp_path):
    good = tmp_path / "good.copy"
    good.write_text(KERNEL2021.read_text() + "sweep s for kernel2021 { small below [71, 96] }\n")
    bad = tmp_path / "bad.copy"
    bad.write_text("target u74 { xlen 64; misaligned slow }\ncopy_user k for u74 { small below x }\n")
    badasm = tmp_path / "bad.S"
    badasm.write_text("\t.text\n\tnot_an_insn a0\n")
    (tmp_path / "tree").mkdir(exist_ok=True)
    return good, bad, badasm


def _cases(tmp_path):
    """command -> (argv on good input or None, argv on bad input, the bad file)."""
    good, bad, badasm = _files(tmp_path)
    cache = ["--build-cache", str(tmp_path / "cache")]
    bench = ["--sizes", "8", "--align", "0:0", "--routine", "clear_user", *cache]
    tune = ["--db", str(tmp_path / "t.db"), "--top", "0", "--workload", "uniform:0-64", *cache]
    verify = ["--routine", "clear_user", "--proof-cache", str(SHARED_PROOFS),
              "--workdir", str(tmp_path / "w")]
    return {
        "check": (["check", good], ["check", bad], bad),
        "build": (["build", good, "-o", tmp_path / "out", "--no-link"],
                  ["build", bad, "-o", tmp_path / "out", "--no-link"], bad),
        "bench": (["bench", good, *bench], ["bench", bad, *bench], bad),
        "rank": (["rank", good, "--workload", "uniform:0-8", *cache], ["rank", bad, *cache], bad),
        "verify": (["verify", good, *verify], ["verify", bad, *verify], bad),
        "mutate": (["mutate", ROOT / "out" / "kernel2021" / "uaccess.S", "--kinds", "sum_never_set",
                    "--count", "8"], ["mutate", badasm], badasm),
        "tune": (["tune", good, *tune], ["tune", bad, *tune], bad),
        "tune show": (["tune", "show", tmp_path / "t.db"], ["tune", "show", tmp_path / "none.db"],
                      tmp_path / "none.db"),
        "patch": (None, ["patch", bad, "--kernel-tree", tmp_path / "tree", "-o", tmp_path / "p"], bad),
    }


def _envelope(argv, command):
    r = CliRunner().invoke(main, [str(a) for a in argv] + ["--json"])
    assert r.exception is None or isinstance(r.exception, SystemExit), r.exception
    out = json.loads(r.stdout)                 # exactly one object: json.loads refuses more
    assert out["schema"] == 1 and out["command"] == command.split()[0], out
    assert isinstance(out["ok"], bool)
    return r, out


# verify's good case is a proof (most of a minute): slow; test_verify.py's
# test_cli_verify_json_and_exit_status checks its envelope in the fast loop
@pytest.mark.parametrize("command", ["check", "build", "bench", "rank",
                                     pytest.param("verify", marks=pytest.mark.slow), "mutate", "tune",
                                     "tune show", "patch"])
def test_every_command_answers_in_the_envelope(command, tmp_path):
    good, bad, bad_file = _cases(tmp_path)[command]
    if command == "tune show":
        assert CliRunner().invoke(main, [str(a) for a in _cases(tmp_path)["tune"][0]]).exit_code == 0
    if good is not None:
        r, out = _envelope(good, command)
        assert r.exit_code == 0 and out["ok"] is True and "error" not in out, r.stderr
    r, out = _envelope(bad, command)
    assert r.exit_code == 2 and out["ok"] is False, r.stderr
    assert set(out["error"]) >= ERROR_KEYS and out["error"]["file"] == str(bad_file), out


def _strings(v):
    if isinstance(v, dict):
        return [s for x in v.values() for s in _strings(x)]
    if isinstance(v, list):
        return [s for x in v for s in _strings(x)]
    return [v] if isinstance(v, str) else []


def test_tune_show_json_holds_no_json_string(tmp_path):
    """It held the run's arguments as a JSON string."""
    good, _, _ = _cases(tmp_path)["tune"]
    assert CliRunner().invoke(main, [str(a) for a in good]).exit_code == 0
    r, out = _envelope(["tune", "show", tmp_path / "t.db"], "tune show")
    assert isinstance(out["run"]["args"], dict) and out["run"]["args"]["align_mix"] == "spec"
    for text in _strings(out):
        assert not (text.startswith(("{", "[")) and text.endswith(("}", "]"))), text
