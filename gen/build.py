"""The build pipeline: .copy file -> out/<stem>/{uaccess.S,string.c,mem*.S,include/}
-> objects -> linked ELF, plus a machine-readable summary.

Role: glue between validate, emit and toolchain; writes files only under the
chosen output directory.  May import gen.*, copygen.errors, the standard library.
"""
from __future__ import annotations

import hashlib
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from copygen.gen.emission import emit

from copygen.gen import toolchain
from copygen.errors import Warning_
from copygen.gen.resources import shim_dir
from copygen.gen.front.strategy import Strategy
from copygen.gen.front.validate import load_file



@dataclass
class BuildResult:
    source: str
    outdir: Path
    files: list[Path] = field(default_factory=list)
    objects: list[Path] = field(default_factory=list)
    elf: Path | None = None
    symbols: list[str] = field(default_factory=list)
    warnings: list[Warning_] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"source": self.source, "outdir": str(self.outdir),
                "files": [str(f) for f in self.files],
                "objects": [str(o) for o in self.objects],
                "elf": str(self.elf) if self.elf else None, "symbols": self.symbols,
                "warnings": [w.as_dict() for w in self.warnings]}


def display_path(path: Path) -> str:
    """The path as written in generated banners: relative to the working
    directory when inside it (`copygen build examples/kernel2021.copy` from
    the repository root names examples/kernel2021.copy), else the file's name."""
    p = Path(path).resolve()
    try:
        return str(p.relative_to(Path.cwd().resolve()))
    except ValueError:
        return p.name


def _write_if_changed(path: Path, text: str) -> None:
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


def emit_sources(st: Strategy, outdir: Path) -> list[Path]:
    """Write the emitted files and the shim include directory; return them."""
    outdir.mkdir(parents=True, exist_ok=True)
    src = display_path(Path(st.file))
    files = []
    for name, text in (("uaccess.S", emit.render_uaccess(st, src)),
                       ("uaccess_vector.S", emit.render_vector(st, src)),
                       ("string.c", emit.render_string(st, src)),
                       ("memcpy.S", emit.render_memcpy(st, src)),
                       ("memset.S", emit.render_memset(st, src))):
        path = outdir / name
        if text is None:
            path.unlink(missing_ok=True)
            continue
        _write_if_changed(path, text)
        files.append(path)
    inc = outdir / "include"
    if inc.exists():
        shutil.rmtree(inc)
    shutil.copytree(shim_dir() / "include", inc, ignore=shutil.ignore_patterns("__pycache__", "*.py"))
    _write_if_changed(outdir / "copygen.ld", (shim_dir() / "copygen.ld").read_text())
    return files


def build_file(path: str | Path, out_root: Path, link: bool = True,
               profiles=None) -> BuildResult:
    """Emit FILE into OUT_ROOT/<stem>/ and (with `link`) assemble, compile and link it.
    `profiles`: the cost profile names a target may name (gen.front.validate)."""
    st = load_file(path, profiles)
    return _build(st, str(path), Path(out_root) / st.stem, link)


def content_key(st: Strategy) -> str:
    """A hash of everything the linked ELF depends on: the emitted text, the
    shim, the toolchain prefix and flags.  Equal keys give equal ELFs."""
    h = hashlib.sha256()
    src = display_path(Path(st.file))
    vector = emit.render_vector(st, src)
    for text in (emit.render_uaccess(st, src), emit.render_string(st, src)):
        h.update(b"\0" if text is None else text.encode())
    for text in (emit.render_memset(st, src), emit.render_memcpy(st, src)):
        if text is not None:        # string functions in C keep the keys they had
            h.update(text.encode())
    if vector is not None:          # scalar strategies keep the keys they had
        h.update(vector.encode() + " ".join(toolchain.ASFLAGS_VECTOR).encode())
    shim = shim_dir()
    for f in sorted((shim / "include").rglob("*.h")) + [shim / "copygen.ld"]:
        h.update(f.read_bytes())
    h.update(" ".join([toolchain.cross_prefix(), *toolchain.ASFLAGS, *toolchain.CFLAGS,
                       *toolchain.kcflags()]).encode())
    if st.string is not None and st.string.target.reserve:   # the others keep their keys
        h.update(" ".join(toolchain.fixed_flags(st.string.target.reserve)).encode())
    return h.hexdigest()


def build_cached(path: str | Path, cache_root: Path, profiles=None) -> BuildResult:
    """build_file() into CACHE_ROOT/<stem>-<content key>/, reusing the ELF a
    previous build of the same content left there (the toolchain is not run)."""
    st = load_file(path, profiles)
    outdir = Path(cache_root) / f"{st.stem}-{content_key(st)[:16]}"
    elf = outdir / f"{st.stem}.elf"
    if elf.is_file():
        res = BuildResult(str(path), outdir, warnings=list(st.warnings), elf=elf,
                          symbols=st.routines())
        res.files = [outdir / n for n in ("uaccess.S", "uaccess_vector.S", "string.c", "memcpy.S",
                                          "memset.S")
                     if (outdir / n).exists()]
        res.objects = [f.with_suffix(".o") for f in res.files]
        return res
    return _build(st, str(path), outdir, link=True)


def build_assembly(sources: list[Path], outdir: Path, name: str) -> Path:
    """Kernel assembly files (a tree's arch/riscv/lib/memset.S, uaccess.S),
    each assembled against the shim's include directory as Kbuild would
    against the kernel's (with the V extension, as a CONFIG_RISCV_ISA_V
    kernel's KBUILD_AFLAGS have it), linked into OUTDIR/NAME.elf; the
    sources are read where they are and never copied."""
    outdir.mkdir(parents=True, exist_ok=True)
    objs = []
    for i, src in enumerate(sources):
        obj = outdir / f"{i}-{Path(src).stem}.o"
        toolchain.assemble(Path(src), shim_dir() / "include", obj, vector=True)
        objs.append(obj)
    elf = outdir / f"{name}.elf"
    partial = elf.with_suffix(".elf.partial")
    toolchain.link(objs, shim_dir() / "copygen.ld", partial)
    partial.replace(elf)
    return elf


def build_vector_section(outdir: Path) -> Path:
    """shim/vector_section.S (what a kernel vector section costs around the
    vector routine) linked into OUTDIR/vector_section.elf, built once."""
    elf = Path(outdir) / "vector_section.elf"
    if elf.is_file():
        return elf
    elf.parent.mkdir(parents=True, exist_ok=True)
    obj = elf.with_suffix(".o")
    toolchain.assemble(shim_dir() / "vector_section.S", shim_dir() / "include", obj, vector=True)
    partial = elf.with_suffix(".elf.partial")
    toolchain.link([obj], shim_dir() / "copygen.ld", partial)
    partial.replace(elf)
    return elf


def _build(st: Strategy, source: str, outdir: Path, link: bool) -> BuildResult:
    res = BuildResult(source, outdir, warnings=list(st.warnings))
    if link:
        toolchain.kcflags()     # a KCFLAGS that cannot be split stops before any file is written
    res.files = emit_sources(st, outdir)
    if not link:
        return res
    inc = outdir / "include"
    for f in res.files:
        obj = f.with_suffix(".o")
        if f.suffix == ".S":
            toolchain.assemble(f, inc, obj, vector=f.name == "uaccess_vector.S")
        else:
            # string.c honours the string block's reserved registers as GCC can
            toolchain.compile_c(f, inc, obj, st.string.target.reserve if st.string else ())
        res.objects.append(obj)
    elf = outdir / f"{st.stem}.elf"
    # linked under a temporary name: an interrupted build never leaves a
    # complete-looking ELF for build_cached() to reuse
    partial = elf.with_suffix(".elf.partial")
    toolchain.link(res.objects, outdir / "copygen.ld", partial)
    partial.replace(elf)
    res.elf = elf
    res.symbols = st.routines()
    return res


def shim_elf(source: str | Path, workdir: Path) -> Path:
    """A hand-written kernel-style .S (assembled against the shim's kernel
    macros) or an object file, linked with the shim's linker script into
    WORKDIR/<stem>.elf: how code that did not come from a .copy file meets
    the emulator and the verifier.  The .S is assembled with the V
    extension, as Kbuild assembles every .S of a CONFIG_RISCV_ISA_V kernel
    (uaccess_vector.S needs it; scalar code encodes the same either way)."""
    source, workdir = Path(source), Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    obj = source
    if source.suffix != ".o":
        obj = workdir / (source.stem + ".o")
        toolchain.assemble(source, shim_dir() / "include", obj, vector=True)
    elf = workdir / (source.stem + ".elf")
    toolchain.link([obj], shim_dir() / "copygen.ld", elf)
    return elf
