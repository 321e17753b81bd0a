"""Packaging: a wheel built from the tree, installed into a fresh venv, runs
copygen with its package data (grammar, templates, shim, profiles, the
oracle's harness) from site-packages, and claims no top-level name but
`copygen`."""
from __future__ import annotations

import shutil
import subprocess
import sys
import venv
import zipfile

import pytest

from tests.conftest import ROOT


def _run(argv, cwd, **kw):
    return subprocess.run([str(a) for a in argv], cwd=cwd, capture_output=True, text=True, **kw)


def _tree_copy(dest):
    """The tree's tracked and new files (no build/ leftovers, which setuptools
    would otherwise pack into the wheel)."""
    files = _run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT).stdout.split()
    for f in files:
        src = ROOT / f
        if src.is_file():
            (dest / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / f)
    return dest


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    out = tmp_path_factory.mktemp("wheel")
    tree = _tree_copy(tmp_path_factory.mktemp("tree"))
    r = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", out, tree], cwd=out)
    assert r.returncode == 0, r.stderr
    (whl,) = out.glob("copygen-*.whl")
    return whl


def test_the_wheel_holds_one_namespace_and_its_data(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert tops == {"copygen"}
    for data in ("copygen/grammar/copy.lark", "copygen/templates/uaccess.S.j2",
                 "copygen/templates/string.c.j2", "copygen/templates/uaccess_function.S.j2",
                 "copygen/patch/run.py", "copygen/shim/copygen.ld",
                 "copygen/shim/include/asm/asm-extable.h", "copygen/emu/profiles/u74.toml",
                 "copygen/mutate/harness.c"):
        assert data in names, data


def test_a_checkout_adds_no_path_to_the_namespace():
    """Run from the checkout, as the tests are: `copygen` is its own folder
    and nothing else (tests/, bench/ are not copygen.tests, copygen.bench),
    while the installed layers still resolve."""
    probe = ("import importlib.util, copygen, copygen.gen.front.parse as p; "
             "print(list(copygen.__path__)); print(p.__file__); "
             "print([m for m in ('copygen.tests', 'copygen.bench', 'copygen.examples') "
             "if importlib.util.find_spec(m)])")
    r = _run([sys.executable, "-c", probe], cwd=ROOT)
    assert r.returncode == 0, r.stderr
    path, parse, reachable = r.stdout.splitlines()
    assert path == repr([str(ROOT / "copygen")])
    assert parse.endswith("/gen/front/parse.py")
    assert reachable == "[]"


@pytest.mark.slow
def test_an_installed_wheel_builds_and_verifies(wheel, tmp_path):
    env_dir = tmp_path / "venv"
    # the dependencies come from this interpreter's site-packages; copygen
    # itself only from the wheel (checked below through __file__)
    venv.create(env_dir, with_pip=True, system_site_packages=True)
    py = env_dir / "bin" / "python"
    r = _run([py, "-m", "pip", "install", "-q", "--no-deps", "--force-reinstall", wheel], cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    where = _run([py, "-c", "import copygen.gen.front.parse as p; print(p.__file__)"], cwd=tmp_path)
    assert str(env_dir) in where.stdout, where.stdout + where.stderr
    copygen = env_dir / "bin" / "copygen"
    src = tmp_path / "k.copy"
    src.write_text((ROOT / "examples" / "kernel2021.copy").read_text())
    r = _run([copygen, "build", src, "-o", tmp_path / "out"], cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "out" / "k" / "k.elf").is_file()
    assert (tmp_path / "out" / "k" / "include" / "asm" / "asm-extable.h").is_file()
    r = _run([copygen, "verify", src, "--routine", "__clear_user", "--json"], cwd=tmp_path, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert '"ok": true' in r.stdout and '"proved"' in r.stdout
