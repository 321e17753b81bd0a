"""README's "Using it" says what the command line does: the same commands,
options each command has, the commands `--routine` is named for, the
number of mutation kinds; and every option has help text.  Read from click."""
from __future__ import annotations

import re

import click
import pytest

from copygen.cli import main
from copygen.mutate.edits import KINDS
from tests.conftest import ROOT

README = (ROOT / "README.md").read_text()


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


def _usage_block() -> dict[str, set[str]]:
    """command -> the options its lines in README's usage block name."""
    block = README.split("## Using it", 1)[1].split("\n\n", 2)[1]
    found: dict[str, set[str]] = {}
    current = None
    for line in block.splitlines():
        text = line.split("#", 1)[0]
        m = re.match(r"\s+copygen (tune show|[a-z]+)\b", text)
        if m:
            current = m.group(1)
            found.setdefault(current, set())
        if current:
            found[current] |= set(re.findall(r"(?<![\w-])(--?[a-z][\w-]*)", text))
    return found


def test_readme_lists_every_command_and_no_other():
    assert set(_usage_block()) == set(_commands())


@pytest.mark.parametrize("name", sorted(_commands()))
def test_each_option_readme_names_exists(name):
    cmd = _commands()[name]
    have = {o for p in cmd.params if isinstance(p, click.Option) for o in p.opts + p.secondary_opts}
    assert _usage_block().get(name, set()) <= have | {"--help", "-h"}


def test_routine_is_claimed_for_the_commands_that_take_it():
    claim = re.search(r"`--routine` \(in ([^)]*)\)", README)
    assert claim, "README names the commands --routine works in"
    named = set(re.findall(r"`([a-z ]+)`", claim.group(1)))
    takes = {n for n, c in _commands().items() if any("--routine" in p.opts for p in c.params)}
    assert named == takes


def test_the_number_of_mutation_kinds():
    (count,) = re.findall(r"(\d+) kinds of mutation", README)
    assert int(count) == len(KINDS)


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
