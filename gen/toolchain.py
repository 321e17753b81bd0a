"""The toolchain driver: the only module that runs external programs.

Honours CROSS_COMPILE as the kernel build does (default riscv64-linux-gnu-),
and KCFLAGS for C as Kbuild does.
The qemu-user oracle runs through it too.
git (for `copygen patch`) and a kernel tree's scripts/checkpatch.pl (under
perl) run through it too.
A missing program is a ToolError naming it and the Debian package that
provides it; a failing one is a ToolError carrying its stderr (exit 1).
May import copygen.errors and the standard library.
"""
from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from copygen.errors import CopygenError, ToolError

DEFAULT_CROSS = "riscv64-linux-gnu-"
PACKAGES = {"gcc": "gcc-riscv64-linux-gnu", "ld": "binutils-riscv64-linux-gnu",
            "objdump": "binutils-riscv64-linux-gnu", "as": "binutils-riscv64-linux-gnu"}

ARCH = ["-march=rv64gc", "-mabi=lp64d"]
# as Kbuild assembles an RV64 kernel (KBUILD_AFLAGS, autoconf.h): not
# position-independent, so `la` is the pc-relative `lla` the kernel's own .S
# files expect (memset.S computes a jump into its store run from it), and
# CONFIG_64BIT set, which those files test
ASFLAGS = ["-D__ASSEMBLY__", "-fno-PIE", "-DCONFIG_64BIT=1"] + ARCH
# uaccess_vector.S: the same, with the V extension
ASFLAGS_VECTOR = ["-D__ASSEMBLY__", "-fno-PIE", "-DCONFIG_64BIT=1", "-march=rv64gcv",
                  "-mabi=lp64d"]
# string.c as Kbuild compiles arch/riscv/lib/string.o: the flags of its
# command line (.string.o.cmd of a 6.12 riscv build) that change the code.
# -mstrict-align: every portable kernel, i.e. one without
# CONFIG_RISCV_EFFICIENT_UNALIGNED_ACCESS; a word access through a pointer
# not known to be aligned becomes byte accesses (GCC 12's default tuning
# does that even without the flag).  Frame pointers: CONFIG_FRAME_POINTER,
# which riscv selects by default: every C function, leaves too, sets up a
# frame (s0).
# The ABI stays lp64d, as the assembly's, so that the objects link; no
# integer instruction differs.  Stack-protector flags are left out: they
# instrument functions with local arrays, which string.c has none of.
CFLAGS = ["-O2", "-Wall", "-Wextra", "-Werror", "-ffreestanding", "-fno-builtin",
          "-mcmodel=medany", "-fno-PIE", "-fno-common", "-funsigned-char",
          "-fno-strict-aliasing", "-fno-strict-overflow", "-fno-delete-null-pointer-checks",
          "-fno-allow-store-data-races", "-mno-save-restore", "-mstrict-align",
          "-fno-omit-frame-pointer", "-fno-optimize-sibling-calls",
          "-ftrivial-auto-var-init=zero", "-fconserve-stack"] + ARCH


def kcflags() -> list[str]:
    """KCFLAGS from the environment, split as a shell would: the flags a
    kernel build was given on top of its own (e.g. `-mno-strict-align
    -mtune=thead-c906` for a NONPORTABLE kernel for a fast-misaligned
    core), put after CFLAGS as Kbuild puts them."""
    text = os.environ.get("KCFLAGS", "")
    try:
        return shlex.split(text)
    except ValueError as err:
        raise CopygenError(f"KCFLAGS cannot be split into flags: {err} (KCFLAGS={text!r})",
                           hint="quote as a shell would, e.g. KCFLAGS='-DNAME=\"a b\"'") from None


def cross_prefix() -> str:
    return os.environ.get("CROSS_COMPILE", DEFAULT_CROSS)


def program(tool: str) -> str:
    """Full path of ${CROSS_COMPILE}tool, or a ToolError saying how to get it."""
    name = cross_prefix() + tool
    path = shutil.which(name)
    if path is None:
        pkg = PACKAGES.get(tool, "binutils-riscv64-linux-gnu")
        raise ToolError(f"`{name}` not found on PATH",
                        hint=f"install it: apt-get install {pkg}"
                             f" (or set CROSS_COMPILE to your toolchain's prefix)")
    return path


@dataclass(frozen=True)
class Ran:
    argv: tuple[str, ...]
    stdout: str
    stderr: str


def run(tool: str, args: list[str], cwd: Path | None = None) -> Ran:
    argv = [program(tool)] + [str(a) for a in args]
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, cwd=cwd, timeout=300)
    except OSError as err:
        raise ToolError(f"cannot run `{argv[0]}`: {err.strerror}") from None
    except subprocess.TimeoutExpired:
        raise ToolError(f"`{argv[0]}` took longer than 300 s") from None
    if proc.returncode != 0:
        shown = " ".join(Path(a).name if i == 0 else a for i, a in enumerate(argv))
        raise ToolError(f"`{shown}` failed (exit {proc.returncode})",
                        detail=proc.stderr or proc.stdout)
    return Ran(tuple(argv), proc.stdout, proc.stderr)


def assemble(src: Path, include: Path, obj: Path, vector: bool = False) -> Ran:
    flags = ASFLAGS_VECTOR if vector else ASFLAGS
    return run("gcc", ["-c", *flags, "-I", include, src, "-o", obj])


def fixed_flags(reserve) -> list[str]:
    """`-ffixed-REG` for each reserved register: GCC then leaves it alone in
    C, as a kernel whose Makefile says so has it (gen.front.registers)."""
    return [f"-ffixed-{r}" for r in reserve]


def compile_c(src: Path, include: Path, obj: Path, reserve=()) -> Ran:
    return run("gcc", ["-c", *CFLAGS, *fixed_flags(reserve), *kcflags(), "-I", include, src,
                       "-o", obj])


def link(objs: list[Path], script: Path, elf: Path) -> Ran:
    return run("ld", ["-T", script, *objs, "-o", elf])


@dataclass(frozen=True)
class Exited:
    """A program run under qemu-user: its exit status and output (a non-zero
    status is the caller's to judge: the harness reports through it)."""
    returncode: int | None         # None: killed by the timeout
    stdout: str
    stderr: str


def qemu_user() -> str:
    """Full path of qemu-riscv64, or a ToolError saying how to get it."""
    path = shutil.which("qemu-riscv64")
    if path is None:
        raise ToolError("`qemu-riscv64` not found on PATH", hint="install it: apt-get install qemu-user")
    return path


def run_user(exe: Path, args: list[str] = (), stdin: str = "", timeout: float = 1800) -> Exited:
    """Run a static RISC-V Linux executable under qemu-riscv64."""
    argv = [qemu_user(), str(exe), *map(str, args)]
    try:
        proc = subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as err:
        return Exited(None, err.stdout or "", err.stderr or "")
    except OSError as err:
        raise ToolError(f"cannot run `{argv[0]}`: {err.strerror}") from None
    return Exited(proc.returncode, proc.stdout, proc.stderr)


def disassemble(elf: Path) -> str:
    return run("objdump", ["-d", "--no-show-raw-insn", elf]).stdout


def host_program(name: str, package: str) -> str:
    """Full path of a host program, or a ToolError naming its package."""
    path = shutil.which(name)
    if path is None:
        raise ToolError(f"`{name}` not found on PATH", hint=f"install it: apt-get install {package}")
    return path


def run_git(args: list[str], cwd: Path, env: dict[str, str] | None = None,
            stdin: str | None = None, check: bool = True) -> Exited:
    """git ARGS in CWD (with `env` added to the environment).  With `check`
    a non-zero exit is a ToolError carrying git's stderr."""
    argv = [host_program("git", "git"), *map(str, args)]
    try:
        proc = subprocess.run(argv, cwd=cwd, input=stdin, capture_output=True, text=True,
                              env={**os.environ, **(env or {})}, timeout=300)
    except subprocess.TimeoutExpired:
        raise ToolError(f"`git {' '.join(argv[1:3])}` took longer than 300 s") from None
    except OSError as err:
        raise ToolError(f"cannot run git in {cwd}: {err.strerror}") from None
    if check and proc.returncode != 0:
        raise ToolError(f"`git {' '.join(argv[1:])}` failed (exit {proc.returncode})",
                        detail=proc.stderr or proc.stdout)
    return Exited(proc.returncode, proc.stdout, proc.stderr)


def run_checkpatch(script: Path, patch: Path, cwd: Path) -> Exited:
    """A kernel tree's scripts/checkpatch.pl --strict on PATCH; its exit
    status (non-zero when it has findings) is the caller's to judge."""
    argv = [host_program("perl", "perl"), str(script), "--strict", str(patch)]
    try:
        proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        raise ToolError(f"`{script.name}` took longer than 300 s") from None
    except OSError as err:
        raise ToolError(f"cannot run {script}: {err.strerror}") from None
    return Exited(proc.returncode, proc.stdout, proc.stderr)


def run_logged(name: str, args: list[str], package: str, cwd: Path | None = None,
               log: Path | None = None, on_line=None, timeout: float = 7200,
               env: dict[str, str] | None = None) -> Exited:
    """A long-running host program (tar, a kernel tree's kunit.py, ...):
    its output, stdout and stderr merged, goes line by line to `log` (when
    given) and to `on_line`; the exit status is the caller's to judge."""
    argv = [host_program(name, package), *map(str, args)]
    lines: list[str] = []
    sink = open(log, "w", encoding="utf-8") if log else None
    try:
        proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, text=True, errors="replace",
                                env={**os.environ, **(env or {})})
    except OSError as err:
        raise ToolError(f"cannot run `{name}`: {err.strerror}") from None
    try:
        for line in proc.stdout:
            lines.append(line)
            if sink:
                sink.write(line)
                sink.flush()
            if on_line:
                on_line(line.rstrip("\n"))
        code = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        code = None
    except BaseException:
        # stopped (SIGTERM, ^C): the program goes with us, not on in the tree
        proc.kill()
        proc.wait()
        raise
    finally:
        if sink:
            sink.close()
    return Exited(code, "".join(lines), "")


def require_file(path: Path, package: str, what: str) -> None:
    """A data file a program needs (OpenSBI for qemu-system), or a ToolError."""
    if not Path(path).is_file():
        raise ToolError(f"{what} not found at {path}", hint=f"install it: apt-get install {package}")


def redefine_symbols(obj: Path, renames: dict[str, str], out: Path) -> Ran:
    """OBJ copied to OUT with each symbol `old` of `renames` called `new`
    (definitions and references alike); no other byte of a section changes."""
    return run("objcopy", [*(f"--redefine-sym={old}={new}" for old, new in renames.items()),
                           obj, out])


# a Linux user program for a RISC-V board: static, so it needs nothing there
USER_CFLAGS = ["-O2", "-static", "-Wall", "-Wextra", "-fno-strict-aliasing"] + ARCH


def link_user_program(sources: list[Path], objs: list[Path], exe: Path) -> Ran:
    """C SOURCES compiled for RISC-V Linux user space and linked, with the
    objects OBJS, into the static executable EXE."""
    return run("gcc", [*USER_CFLAGS, *sources, *objs, "-o", exe])


def run_user_lines(exe: Path, args: list[str], on_line=None, timeout: float = 7200) -> Exited:
    """Run a static RISC-V Linux executable under qemu-riscv64 with its
    stderr read line by line as it comes (each line to `on_line`: a long
    run's progress); stdout is collected whole."""
    import threading
    argv = [qemu_user(), str(exe), *map(str, args)]
    try:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                stdin=subprocess.DEVNULL, text=True, errors="replace")
    except OSError as err:
        raise ToolError(f"cannot run `{argv[0]}`: {err.strerror}") from None
    out: list[str] = []
    reader = threading.Thread(target=lambda: out.append(proc.stdout.read()), daemon=True)
    reader.start()
    err_lines: list[str] = []
    killed: list[bool] = []
    timer = threading.Timer(timeout, lambda: (killed.append(True), proc.kill()))
    timer.start()
    try:
        for line in proc.stderr:
            err_lines.append(line)
            if on_line:
                on_line(line.rstrip("\n"))
        code = proc.wait()
    finally:
        timer.cancel()
        if proc.poll() is None:         # interrupted: the run does not outlive us
            proc.kill()
    reader.join()
    return Exited(None if killed else code, "".join(out), "".join(err_lines))
