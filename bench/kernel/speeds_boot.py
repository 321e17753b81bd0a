"""Boot a `copygen patch --fast-body` kernel in QEMU and show which scalar
copy runs with the probe's key off and on (docs/speeds.md, "Booted").

Linux 6.12 has no boot parameter for the misaligned-access probe's
result, so a test-only commit on top of the patch adds a KUnit suite
(templates/uaccess_speeds_kunit.c.j2, `usercopy_speeds`, under a Kconfig
symbol of arch/riscv/kernel/tests/Kconfig.debug) that sets the key itself
with static_branch_disable/enable, copies to and from user memory at every
size up to 160 bytes and every offset pair mod 8, checks every byte, and
counts with kprobes which copy was entered.  The tree's own kunit.py builds
it with the usercopy, memcpy and string suites, jump labels and kprobes
(the kunitconfig below), and boots it under qemu-system-riscv64 without
and with the V extension; the boot log (raw KTAP) gives each suite's results,
the probe's own line (what it found on QEMU) and the suite's counts.

Usage: python -m bench.kernel.speeds_boot --tree CLONE --rev PATCHED [--build-dir DIR] [--worktree W]
(CLONE: a clone of the tree, which gets a worktree; PATCHED: the patch's
commit).  Writes bench/kernel/results/speeds_boot.json.
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
OUT = ROOT / "bench" / "kernel" / "results" / "speeds_boot.json"
KUNITCONFIG = """CONFIG_KUNIT=y
CONFIG_USERCOPY_KUNIT_TEST=y
CONFIG_MEMCPY_KUNIT_TEST=y
CONFIG_STRING_KUNIT_TEST=y
CONFIG_JUMP_LABEL=y
CONFIG_KPROBES=y
CONFIG_RISCV_UACCESS_SPEEDS_KUNIT=y
"""
KCONFIG = """config RISCV_UACCESS_SPEEDS_KUNIT
       bool "KUnit test of the user copy picked by misaligned access speed" if !KUNIT_ALL_TESTS
       depends on KUNIT && KPROBES && JUMP_LABEL && RISCV_PROBE_UNALIGNED_ACCESS && MMU
       default KUNIT_ALL_TESTS
       help
         Test only.  Sets fast_unaligned_access_speed_key off and on, copies
         to and from user memory at every size up to 160 bytes and every
         offset pair, and counts with kprobes which scalar copy of
         arch/riscv/lib/uaccess.S ran.  If unsure, say N.

"""
TESTS = "arch/riscv/kernel/tests"
COUNTS = re.compile(r"key (on|off): (\d+) copies checked; slow copy entered (\d+) times, fast copy (\d+)")
PROBE = re.compile(r"cpu(\d+): Ratio of byte access time to unaligned word access is ([\d.]+), "
                   r"unaligned accesses are (\w+)")
BOOT = re.compile(r"the boot probe left the key (on|off)")
SUBTEST = re.compile(r"^\s+# Subtest: (\w+)")
CASE = re.compile(r"^\s+(not )?ok \d+ \w+")


def suites(log: str) -> dict[str, dict[str, int]]:
    """Tests passed per suite, from the raw KTAP of the boot log."""
    out: dict[str, dict[str, int]] = {}
    name = None
    for line in log.splitlines():
        m = SUBTEST.match(line)
        if m:
            name = m.group(1)
            out[name] = {"passed": 0, "total": 0}
        elif name and (c := CASE.match(line)):
            out[name]["total"] += 1
            out[name]["passed"] += c.group(1) is None
    return out


def add_test(tree: Path, dispatcher: str, fast: str) -> None:
    """The test-only suite, its Kconfig symbol and its Makefile line."""
    from copygen.gen.emission.emit import env
    text = env().get_template("uaccess_speeds_kunit.c.j2").render(dispatcher=dispatcher, fast=fast,
                                                                   max_n=160)
    (tree / TESTS / "uaccess_speeds_kunit.c").write_text(text)
    kconfig = tree / TESTS / "Kconfig.debug"
    kconfig.write_text(kconfig.read_text().replace("endif # RUNTIME_TESTING_MENU",
                                                   KCONFIG + "endif # RUNTIME_TESTING_MENU", 1))
    with (tree / TESTS / "Makefile").open("a") as f:
        f.write("obj-$(CONFIG_RISCV_UACCESS_SPEEDS_KUNIT)\t+= uaccess_speeds_kunit.o\n")


def boot(tree: Path, bdir: Path, vector: bool) -> dict:
    config = bdir.parent / "speeds.kunitconfig"
    config.write_text(KUNITCONFIG)
    args = ["python3", "tools/testing/kunit/kunit.py", "exec" if vector else "run", "--arch=riscv",
            "--cross_compile=riscv64-linux-gnu-", f"--kunitconfig={config}", f"--build_dir={bdir}",
            "--timeout=1800", "--raw_output=all"]
    if vector:
        args.append("--qemu_args=-cpu rv64,v=true,vlen=128")
    else:
        args.append("--jobs=2")
    t0 = time.time()
    r = subprocess.run(args, cwd=tree, capture_output=True, text=True)
    log = r.stdout + r.stderr
    (bdir.parent / f"speeds{'.v' if vector else ''}.log").write_text(log)
    return {"vector": vector, "seconds": round(time.time() - t0), "suites": suites(log),
            "probe": [m.groups() for m in PROBE.finditer(log)],
            "key_at_boot": [m.group(1) for m in BOOT.finditer(log)],
            "copies": [dict(zip(("key", "checked", "slow_entered", "fast_entered"), m.groups()))
                       for m in COUNTS.finditer(log)]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", type=Path, required=True)
    ap.add_argument("--rev", required=True)
    ap.add_argument("--build-dir", type=Path, default=Path.home() / ".cache/copygen/speeds/build")
    ap.add_argument("--dispatcher", default="fallback_scalar_usercopy")
    ap.add_argument("--worktree", type=Path, default=None,
                    help="a checkout that has the patch and the test already (no worktree is made)")
    args = ap.parse_args(argv)
    work = args.worktree or args.build_dir.parent / "boot-tree"
    if not work.exists():
        subprocess.run(["git", "-C", str(args.tree), "worktree", "add", "-q", "--detach", str(work),
                        args.rev], check=True)
        add_test(work, args.dispatcher, args.dispatcher + "_fast")
    runs = [boot(work, args.build_dir, False), boot(work, args.build_dir, True)]
    record = {"command": "python -m bench.kernel.speeds_boot " + " ".join(argv or sys.argv[1:]),
              "rev": args.rev, "kunitconfig": KUNITCONFIG.splitlines(), "runs": runs}
    OUT.write_text(json.dumps(record, indent=1) + "\n")
    print(json.dumps(runs, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
