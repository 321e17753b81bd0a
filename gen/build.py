"""The build pipeline: .copy file -> out/<stem>/{uaccess.S,string.c,include/}
-> objects -> linked ELF, plus a machine-readable summary.

Role: glue between validate, emit and toolchain; writes files only under the
chosen output directory.  May import gen.*, the standard library.
"""
from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

from gen import emit, toolchain
from gen.errors import Warning_
from gen.strategy import Strategy
from gen.validate import load_file

ROOT = Path(__file__).resolve().parent.parent
SHIM = ROOT / "shim"


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
    """The path as written in generated banners: relative to the repo if inside."""
    p = Path(path).resolve()
    try:
        return str(p.relative_to(ROOT))
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
                       ("string.c", emit.render_string(st, src))):
        path = outdir / name
        if text is None:
            path.unlink(missing_ok=True)
            continue
        _write_if_changed(path, text)
        files.append(path)
    inc = outdir / "include"
    if inc.exists():
        shutil.rmtree(inc)
    shutil.copytree(SHIM / "include", inc)
    _write_if_changed(outdir / "copygen.ld", (SHIM / "copygen.ld").read_text())
    return files


def build_file(path: str | Path, out_root: Path, link: bool = True) -> BuildResult:
    st = load_file(path)
    outdir = Path(out_root) / st.stem
    res = BuildResult(str(path), outdir, warnings=list(st.warnings))
    res.files = emit_sources(st, outdir)
    if not link:
        return res
    inc = outdir / "include"
    fast = any(t.fast_misaligned for t in st.targets if st.string and t == st.string.target)
    for f in res.files:
        obj = f.with_suffix(".o")
        if f.suffix == ".S":
            toolchain.assemble(f, inc, obj)
        else:
            toolchain.compile_c(f, inc, obj, fast_misaligned=fast)
        res.objects.append(obj)
    res.elf = outdir / f"{st.stem}.elf"
    toolchain.link(res.objects, outdir / "copygen.ld", res.elf)
    res.symbols = st.routines()
    return res
