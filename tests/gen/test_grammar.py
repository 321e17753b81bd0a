"""grammar/copy.lark is the spec (docs/language.md): what its comments say of
gen/front/parse.py is there, and every node its trees have is turned into a
record by a Transformer method of the node's name."""
from __future__ import annotations

import re

from lark import Transformer

from copygen.gen.front import parse
from copygen.gen.resources import grammar_file

TEXT = grammar_file().read_text()
COMMENTS = "\n".join(ln.split("//", 1)[1] for ln in TEXT.splitlines() if "//" in ln)
RULES = "\n".join(ln.split("//", 1)[0] for ln in TEXT.splitlines())


def _transformer() -> type:
    (cls,) = [v for v in vars(parse).values()
              if isinstance(v, type) and issubclass(v, Transformer) and v is not Transformer]
    return cls


def test_every_alias_and_kept_rule_has_a_transformer_method():
    cls = _transformer()
    aliases = re.findall(r"->\s*(\w+)", RULES)
    # rules named `_x` are inlined into their parent: no node, no method
    nodes = {str(r.alias or r.origin.name) for r in parse.parser().rules
             if not str(r.origin.name).startswith("_")}
    assert nodes >= set(aliases) and "start" in nodes
    missing = sorted(n for n in nodes if not callable(getattr(cls, n, None)))
    assert not missing, f"{cls.__name__} has no method for {missing}"


def test_the_comments_name_what_gen_parse_has():
    cls = _transformer()
    assert re.search(rf"\b{cls.__name__}\b", COMMENTS), "the header names the Transformer"
    dotted = re.findall(r"gen\.parse\.(\w+)", COMMENTS)
    camel = re.findall(r"\b_?[A-Z][a-z0-9]+[A-Z]\w*\b", COMMENTS)
    unknown = sorted({n for n in dotted + camel if not hasattr(parse, n)})
    assert not unknown, f"copy.lark's comments name {unknown}, which gen/front/parse.py does not define"
