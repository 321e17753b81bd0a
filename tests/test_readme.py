"""The README and the command reference say what the command line does.

docs/commands.md's synopsis names every command and every option each
command has, and nothing else; every `copygen ...` command line shown in
the README or a guide uses options its command has; the README is a front
door of at most 200 lines whose command table names every command; the
commands `--routine` is claimed for are those that take it; the number of
mutation kinds is the tool's; and every option has help text.  Read from
click."""
from __future__ import annotations

import re

import click
import pytest

from copygen.cli import main
from copygen.mutate.edits import KINDS
from tests.conftest import ROOT

README = (ROOT / "README.md").read_text()
COMMANDS_MD = (ROOT / "docs" / "commands.md").read_text()
GUIDES = sorted((ROOT / "docs").glob("*.md"))
MAX_README_LINES = 200


def _commands(group=main, prefix=()) -> dict[str, click.Command]:
    """'check', 'tune', 'tune show', ...: what a user types, and its command
    (the tune group's hidden walk is `copygen tune FILE` itself)."""
    out = {}
    for name, cmd in group.commands.items():
        if isinstance(cmd, click.Group):
            for sub, sc in cmd.commands.items():
                out[" ".join((*prefix, name) if sc.hidden else (*prefix, name, sub))] = sc
        else:
            out[" ".join((*prefix, name))] = cmd
    return out


def _options(cmd: click.Command) -> set[str]:
    return {o for p in cmd.params if isinstance(p, click.Option) for o in p.opts + p.secondary_opts}


COMMAND = re.compile(r"^\s*(?:\$\s*)?copygen (tune show|[a-z]+)\b")
OPTION = re.compile(r"(?<![\w-])(--?[a-z][\w-]*)")


def _usage(block: str) -> dict[str, set[str]]:
    """command -> the options its lines in a usage block name: a line that
    starts with `copygen CMD` opens a command, the lines after it continue
    it, and `#` starts a comment."""
    found: dict[str, set[str]] = {}
    current = None
    for line in block.splitlines():
        text = line.split("#", 1)[0]
        m = COMMAND.match(text)
        if m:
            current = m.group(1)
            found.setdefault(current, set())
            text = text[m.end():]
        elif text.strip().startswith("copygen"):
            current = None                       # `copygen --help`
        if current:
            found[current] |= set(OPTION.findall(text))
    return found


def _synopsis() -> dict[str, set[str]]:
    section = COMMANDS_MD.split("## Synopsis", 1)[1].split("\n## ", 1)[0]
    return _usage(section)


def _shown_command_lines(text: str) -> list[str]:
    """Every `copygen ...` command line of a page's code (indented blocks and
    fenced ones), continuation lines (a trailing backslash) joined and
    comments left out."""
    lines, out, fenced, i = text.splitlines(), [], False, 0
    while i < len(lines):
        line = lines[i]
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif (fenced or line.startswith(("    ", "\t"))) and COMMAND.match(line):
            joined = line
            while joined.rstrip().endswith("\\") and i + 1 < len(lines):
                i += 1
                joined = joined.rstrip()[:-1] + " " + lines[i].strip()
            out.append(joined.split("#", 1)[0])
        i += 1
    return out


def test_the_synopsis_lists_every_command_and_no_other():
    assert set(_synopsis()) == set(_commands())


@pytest.mark.parametrize("name", sorted(_commands()))
def test_the_synopsis_names_every_option_of_each_command_and_no_other(name):
    cmd = _commands()[name]
    named = _synopsis().get(name, set())
    assert named <= _options(cmd) | {"--help", "-h"}, f"copygen {name}: no such option {named - _options(cmd)}"
    long_forms = {next((o for o in p.opts if o.startswith("--")), p.opts[0])
                  for p in cmd.params if isinstance(p, click.Option)}
    missing = sorted(o for o in long_forms if o not in named)
    assert not missing, f"docs/commands.md does not document copygen {name} {missing}"


@pytest.mark.parametrize("page", [ROOT / "README.md", *GUIDES], ids=lambda p: p.name)
def test_every_command_line_shown_uses_options_its_command_has(page):
    commands = _commands()
    wrong = []
    for line in _shown_command_lines(page.read_text()):
        name = COMMAND.match(line).group(1)
        if name not in commands:
            wrong.append(f"{line.strip()}: no command `{name}`")
            continue
        rest = line.split(f"copygen {name}", 1)[1]
        for opt in OPTION.findall(rest):
            if opt not in _options(commands[name]) | {"--help", "-h"}:
                wrong.append(f"{line.strip()}: `{opt}`")
    assert not wrong, f"{page.name}: " + "; ".join(wrong)


def test_the_readme_is_a_front_door():
    assert len(README.splitlines()) <= MAX_README_LINES
    table = README.split("## Using it", 1)[1].split("\n## ", 1)[0]
    named = {m.group(1) for m in re.finditer(r"`copygen (tune show|[a-z]+)\b", table)}
    assert named == set(_commands())
    assert "docs/index.md" in README and "docs/commands.md" in README


def test_the_setup_commands_are_the_two_of_the_readme():
    setup = README.split("## Set-up", 1)[1].split("\n## ", 1)[0]
    assert "./install.sh && copygen build examples/kernel2021.copy -o build" in setup
    assert "./install.sh && python3 -m pytest" in setup


def test_routine_is_claimed_for_the_commands_that_take_it():
    claim = re.search(r"`--routine`\*?\*? \(in ([^)]*)\)", COMMANDS_MD)
    assert claim, "docs/commands.md names the commands --routine works in"
    named = set(re.findall(r"`([a-z ]+)`", claim.group(1)))
    # calibrate's --routine NAME=PATH names code for a fit, not a routine to choose
    takes = {n for n, c in _commands().items()
             if any("--routine" in p.opts and "=" not in (p.metavar or "") for p in c.params)}
    assert named == takes


@pytest.mark.parametrize("page", ["README.md", "docs/mutate.md"])
def test_the_number_of_mutation_kinds(page):
    counts = re.findall(r"(\d+) kinds of (?:mutation|single-edit bugs)", (ROOT / page).read_text())
    assert counts, f"{page} says how many kinds of mutation there are"
    assert {int(c) for c in counts} == {len(KINDS)}


def test_the_mutation_guide_lists_every_kind():
    guide = (ROOT / "docs" / "mutate.md").read_text()
    assert all(f"`{k}`" in guide for k in KINDS)


@pytest.mark.parametrize("name", sorted(_commands()))
def test_every_option_has_help(name):
    missing = [p.opts[0] for p in _commands()[name].params
               if isinstance(p, click.Option) and not (p.help or "").strip()]
    assert not missing, f"copygen {name}: {missing} have no help text"


def test_tune_has_one_form_and_its_help_lists_its_options():
    from click.testing import CliRunner
    shown = CliRunner().invoke(main, ["tune", "--help"], prog_name="copygen")
    assert shown.exit_code == 0
    assert shown.output.startswith("Usage: copygen tune [OPTIONS] FILE")
    assert "--sweep" in shown.output and "--dry-run" in shown.output and "show DB" in shown.output
    assert "tune run" not in shown.output
    example = str(ROOT / "examples" / "tune_u74.copy")
    walk = [example, "--sweep", "u74_clear_space", "--dry-run"]
    assert CliRunner().invoke(main, ["tune", "run", *walk]).exit_code == 2
    assert CliRunner().invoke(main, ["tune", *walk]).exit_code == 0
