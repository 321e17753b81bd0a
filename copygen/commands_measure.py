"""`copygen bench` and `copygen rank`: the measurement layer's commands.

Role: command-line glue.  Builds the .copy files with gen.build into a
content-addressed cache, hands the linked ELFs to measure.bench /
measure.rank, and prints through measure.render and copygen.output.
May import click, rich, gen, emu.timing.profile, measure, copygen.errors,
copygen.output.
"""
from __future__ import annotations

from pathlib import Path

import click

from copygen.emu.timing.profile import Profile, available, load_profile
from copygen.gen.build import build_cached, build_vector_section
from copygen.errors import CopygenError, Loc
from copygen.gen.front.validate import load_file
from copygen.measure.bench import KINDS, Bench, Case, Sample
from copygen.measure.dispatch import (CLEAR, COPY, COPY_FROM, VECTOR_PATH, Dispatched,
                                      parse_vector_state, section_cost, section_cycles,
                                      vector_state_name)
from copygen.measure import measured
from copygen.measure.rank import expected_cycles, plan, rank as rank_routines
from copygen.measure.render import (bench_csv, bench_tables, measured_fields, plot_bench, rank_csv, rank_table,
                                    size_table)
from copygen.measure.size import routine_sizes
from copygen.measure.workload import ALIGN_MIXES, SIZE_WORKLOADS, make_workload, parse_aligns, parse_sizes
from copygen.output import (EXIT_HELP, ROUTINE_HELP, command, envelope, named_files, output_dir,
                            output_file, plain_tables, print_tables, progress, select_routines)

DEFAULT_SIZES = "1,8,16,32,64,128,256,512,1024,1448,2048,4096,8192,16384,32768"
DEFAULT_ALIGN = "0:0,1:0,4:0,7:0,3:3,5:2"
BUILD_CACHE = Path("build") / "cache"
# a misaligned access this dear is trapped and emulated, not done by the core
EMULATED_MISALIGNED = 50

CACHE_HELP = ("Build cache: ELFs are kept under a hash of the emitted code, the shim and the "
              "toolchain, and reused while those are unchanged.")


def _strategy_file(path: str, command: str) -> None:
    """bench and rank build what they time from a strategy: a file that is
    not a .copy is refused by its name, before any work (else the parser
    would report its first character)."""
    suffix = Path(path).suffix
    if suffix == ".copy":
        return
    what = f"a `{suffix}` file" if suffix else "a file without the .copy suffix"
    assembly = suffix in (".S", ".s", ".o", ".elf")
    raise CopygenError(f"{command} times the routines of a strategy (a .copy file), not {what}",
                       Loc(path), hint="give the .copy the code was built from (copygen build "
                       "NAME.copy writes OUT/NAME/uaccess.S); `copygen verify` and `copygen tune "
                       "--baseline` take a kernel .S" if assembly else
                       "give a .copy file (examples/*.copy are some)")


def _built(path: str, cache: Path):
    """(the file's strategy, linked ELF)."""
    res = build_cached(path, cache, available())
    return load_file(path, available()), res.elf


def _profile(given: str | None, targets) -> Profile:
    names = sorted({t.profile for t in targets})
    if given is None:
        if len(names) != 1:
            raise CopygenError(f"the files' targets use the profiles {', '.join(names) or 'none'}",
                               hint="choose one with --profile")
        given = names[0]
    return load_profile(given)


def _warn_misaligned(path: str, targets, prof: Profile) -> None:
    """A `misaligned fast` routine measured on a core that traps misaligned
    accesses is measured against the grain: say so."""
    fast = [t.name for t in targets if t.fast_misaligned]
    if fast and prof.misaligned_cost >= EMULATED_MISALIGNED:
        click.echo(f"{path}: warning: target {', '.join(fast)} is `misaligned fast`, but profile "
                   f"{prof.name} traps and emulates misaligned accesses ({prof.misaligned_cost} "
                   "cycles each): its figures there measure a misuse", err=True)


VECTOR_STATE_HELP = ("For a file whose copy_user or clear_user has a vector phase, on a profile "
                     "with vector timing: calls from the phase's threshold on run the vector "
                     "routine inside a kernel vector section, as the kernel dispatches them: "
                     "clean (the unit switched on and off), dirty (the user's vector state saved "
                     "and restored too), or the share of calls that find it dirty (0.25); "
                     "off: the scalar routine at every size.")


def _vector_dispatch(path: str, st, bench: Bench, chosen: list[str], prof: Profile, state: str,
                     cache: Path):
    """(what times the calls, {routine: its dispatch} for the output): the
    bench with the kernel's vector dispatch (measure.dispatch) for those of
    the `chosen` routines whose copy_user or clear_user in `st` (the
    file's strategy) has a vector phase, unless `state` is off or the profile has no vector timing (then
    said)."""
    if state.strip().lower() == "off":
        return bench, {}
    try:
        share = parse_vector_state(state)
    except CopygenError:
        raise CopygenError(f"--vector-state {state!r}: give clean, dirty, off, or the share of "
                           "vector calls that find the user's vector state dirty, from 0 to 1 "
                           "(e.g. 0.25)") from None
    owners = {COPY: st.copy_user, COPY_FROM: st.copy_user, CLEAR: st.clear_user}
    thresholds = {r: o.vector.threshold for r, o in owners.items()
                  if o is not None and o.vector is not None and r in chosen}
    if not thresholds:
        return bench, {}
    if prof.vector is None:
        click.echo(f"{path}: profile {prof.name} has no vector timing: its vector phases are "
                   "not dispatched (the scalar routine at every size)", err=True)
        return bench, {}
    section = section_cost(section_cycles(build_vector_section(cache / "vector_section"), prof),
                           share)
    out = bench
    for routine, threshold in thresholds.items():
        out = Dispatched(out, threshold, section, routine)
    said = {KINDS[r].name: {"from_bytes": t, "vector_routine": VECTOR_PATH[r],
                            "section_cycles": round(section, 2),
                            "vector_state": vector_state_name(share)}
            for r, t in thresholds.items()}
    return out, said


def _board_expectation(cells, r, wl) -> dict | None:
    """What a board measured of one ranked routine's workload, kept apart
    from the model's expectation."""
    if cells is None:
        return None
    share, cycles = measured.expectation(cells, plan(r.routine, wl))
    return {"share": round(share, 4), "expected_cycles": None if cycles is None else round(cycles, 2),
            "on": cells.provenance() if share else "measured on no board"}


def _board_line(b: dict) -> str:
    if not b["share"]:
        return "no case of the workload measured: modelled only"
    line = f"{b['share']:.0%} of the workload's weight {b['on']}"
    if b["expected_cycles"] is None:
        return line + "; the rest modelled only"
    return line + f"; expected {b['expected_cycles']:.1f} cycles per call as measured"


def _dispatch_lines(said: dict) -> list[str]:
    return [f"{name}: from {d['from_bytes']} B through {d['vector_routine']} in a "
            f"{d['vector_state']} vector section (+{d['section_cycles']:g} cycles a call)"
            for name, d in said.items()]


@click.command(epilog=EXIT_HELP)
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--profile", default=None, help="Cost profile (default: the file's target profile).")
@click.option("--sizes", default=DEFAULT_SIZES, show_default=True,
              help="Sizes: list and ranges, e.g. 8,64,1448 or 0-64 or 0-4096/512.")
@click.option("--align", "aligns", default=DEFAULT_ALIGN, show_default=True,
              help="SRC:DST offsets from a page boundary; * = 0..7; or aligned|all|spec|src-misaligned.")
@click.option("--routine", "routines", multiple=True, help=ROUTINE_HELP)
@click.option("--cold", is_flag=True, help="Empty the modelled L1 before each call (default: warm).")
@click.option("--json", "as_json", is_flag=True, help="Print the samples as JSON.")
@click.option("--csv", "as_csv", is_flag=True, help="Print the samples as CSV.")
@click.option("--plot", type=click.Path(dir_okay=False), help="Write a PNG: bytes/cycle against size.")
@click.option("--vector-state", default="clean", show_default=True, metavar="clean|dirty|SHARE|off",
              help=VECTOR_STATE_HELP)
@click.option("--build-cache", default=str(BUILD_CACHE), show_default=True, type=click.Path(file_okay=False),
              help=CACHE_HELP)
@click.option("--measured", "measured_files", multiple=True, type=click.Path(dir_okay=False),
              help="A board's measurements (docs/measurements.md; repeatable): cells measured "
                   "for FILE's routines show the board's figure, marked m; the rest stay modelled.")
@command("bench")
def bench(file, profile, sizes, aligns, routines, cold, as_json, as_csv, plot, vector_state,
          build_cache, measured_files) -> int:
    """Cycles and bytes/cycle of each routine in FILE per (size, src, dst alignment).

    Builds FILE, runs every routine it defines (copy_to/from_user, clear_user,
    memcpy, memmove, memset) in the emulator with the cost profile, warm L1,
    and checks each result.  Offsets are from a page boundary.  Each
    routine's .text bytes (its symbol's st_size, fault exits included) and
    its share of __ex_table close the table (`sizes` in --json).
    """
    if as_json and as_csv:
        raise CopygenError("--json and --csv are exclusive", hint="pick one output format")
    _strategy_file(file, "bench")
    output_dir(build_cache, "--build-cache")
    named_files(profile=profile)
    if plot:
        output_file(plot, "--plot")
    size_list, pairs = parse_sizes(sizes), parse_aligns(aligns)
    cells = measured.load(list(measured_files), file) if measured_files else None
    st, elf = _built(file, Path(build_cache))
    targets = st.targets
    prof = _profile(profile, targets)
    _warn_misaligned(file, targets, prof)
    b = Bench(elf, prof, max(size_list), warm=not cold)
    chosen = select_routines(b.routines(), routines, file)
    timed, dispatch = _vector_dispatch(file, st, b, chosen, prof, vector_state, Path(build_cache))
    sizes = list(routine_sizes(b.machine.image, chosen).values())
    cases = _bench_cases(chosen, size_list, pairs)
    samples: list[Sample] = []
    with progress() as bar:
        task = bar.add_task(f"bench {Path(file).name}", total=len(cases))
        for case in cases:
            samples.append(timed.run(case))
            bar.advance(task)
    if plot:
        limit = 4.0 * prof.mem_pipes if prof.mem_pipes else None
        plot_bench(samples, Path(plot), f"{Path(file).name} on {prof.name}", limit)
        click.echo(f"wrote {plot}", err=True)
    def board(s):
        return cells.get(s.routine, s.size, s.src_align, s.dst_align, warm=not cold) if cells else None
    if as_json:
        envelope("bench", True, file=file, elf=str(elf), profile=prof.name,
                 modelled_by=prof.provenance, warm=not cold,
                 vector_dispatch=dispatch, sizes=[z.as_dict() for z in sizes],
                 measured_on=cells.provenance() if cells else None,
                 samples=[s.as_dict() | measured_fields(s, board(s)) for s in samples])
    elif as_csv:
        click.echo(bench_csv(samples, board), nl=False)
    else:
        print_tables(*bench_tables(samples, prof.name, plain=plain_tables(), measured=board),
                     size_table(sizes, plain=plain_tables()))
        for line in _dispatch_lines(dispatch) + _measured_lines(cells, samples, board):
            click.echo(line)
        click.echo(_modelled_line(prof))
    return 0


def _modelled_line(prof: Profile) -> str:
    """Where the table's modelled cycles come from."""
    return f"cycles modelled by the {prof.name} profile: {prof.provenance}"


def _measured_lines(cells, samples, board) -> list[str]:
    """Where the marked cells come from, and how many there are."""
    if cells is None:
        return []
    n = sum(board(s) is not None for s in samples)
    return [f"m: {n} of {len(samples)} cells {cells.provenance() if n else 'measured: none of these cells'}; "
            f"the rest modelled by the profile"]


def _bench_cases(symbols: list[str], sizes: list[int], pairs: list[tuple[int, int]]) -> list[Case]:
    cases = []
    for sym in symbols:
        mine = pairs if KINDS[sym].form == "copy" else list(dict.fromkeys((0, d) for _, d in pairs))
        cases += [Case(sym, n, s, d) for n in sizes for s, d in mine]
    return cases


WORKLOAD_HELP = (f"Size distribution: {', '.join(SIZE_WORKLOADS)}, uniform:A-B, "
                 "or a .csv in LLVM libc's distribution format (one line of probabilities for sizes 0..N).")


@click.command("rank", epilog=EXIT_HELP)
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--profile", default=None, help="Cost profile (default: the files' target profile).")
@click.option("--workload", default="network", show_default=True, help=WORKLOAD_HELP)
@click.option("--align-mix", default="spec", show_default=True, type=click.Choice(list(ALIGN_MIXES)),
              help="Alignment mix of (src, dst) offsets.")
@click.option("--routine", "routines", multiple=True,
              help=ROUTINE_HELP + " Default: all but copy_from_user (the same code as copy_to_user).")
@click.option("--json", "as_json", is_flag=True, help="Print the ranking as JSON.")
@click.option("--csv", "as_csv", is_flag=True, help="Print the ranking as CSV.")
@click.option("--vector-state", default="clean", show_default=True, metavar="clean|dirty|SHARE|off",
              help=VECTOR_STATE_HELP)
@click.option("--build-cache", default=str(BUILD_CACHE), show_default=True, type=click.Path(file_okay=False),
              help=CACHE_HELP)
@click.option("--measured", "measured_files", multiple=True, type=click.Path(dir_okay=False),
              help="A board's measurements (docs/measurements.md; repeatable): for each routine, "
                   "the share of the workload's calls the board measured, and its expected cycles "
                   "when it measured them all.  The ranking stays the model's.")
@command("rank")
def rank(files, profile, workload, align_mix, routines, as_json, as_csv, vector_state,
         build_cache, measured_files) -> int:
    """Order the routines of FILES by expected cycles per call under a workload.

    Routines of the same kind (copy_to_user, clear_user, memcpy, ...) are ranked
    against each other; the expectation weighs warm-L1 cycles by the workload's
    size and alignment probabilities.  Each row gives the routine's .text bytes
    too (its symbol's st_size).
    """
    if as_json and as_csv:
        raise CopygenError("--json and --csv are exclusive", hint="pick one output format")
    for f in files:
        _strategy_file(f, "rank")
    output_dir(build_cache, "--build-cache")
    named_files(profile=profile, workload=workload)
    wl = make_workload(workload, align_mix)
    boards = {f: measured.load(list(measured_files), f) for f in files} if measured_files else {}
    built = [(f, *_built(f, Path(build_cache))) for f in files]
    prof = _profile(profile, [t for _, st, _ in built for t in st.targets])
    max_size = max(s for s, _ in wl.sizes)
    jobs, dispatch = [], {}
    for f, st, elf in built:
        _warn_misaligned(f, st.targets, prof)
        b = Bench(elf, prof, max_size)
        present = b.routines() if routines else [s for s in b.routines() if KINDS[s].name != "copy_from_user"]
        chosen = select_routines(present, routines, f, strict=False)
        timed, dispatch[f] = _vector_dispatch(f, st, b, chosen, prof, vector_state,
                                              Path(build_cache))
        jobs += [(f, timed, sym) for sym in chosen]
    if not jobs:
        raise CopygenError(f"none of the files defines {', '.join(routines)}",
                           hint=f"routine kinds: {', '.join(k.name for k in KINDS.values())}")
    results = []
    with progress() as bar:
        task = bar.add_task(f"rank ({wl.name})", total=sum(len(plan(s, wl)) for _, _, s in jobs))
        for f, b, sym in jobs:
            results.append(expected_cycles(b, f, sym, wl, lambda n: bar.advance(task, n)))
    ranked = rank_routines(results)
    board = {(r.source, r.routine): _board_expectation(boards.get(r.source), r, wl) for r in results}
    if as_json:
        envelope("rank", True, profile=prof.name, modelled_by=prof.provenance, workload=wl.as_dict(),
                 vector_dispatch={f: d for f, d in dispatch.items() if d},
                 ranking={k: [{"rank": i, **r.as_dict(), "relative": round(rel, 4),
                               "measured": board[r.source, r.routine]}
                              for i, (r, rel) in enumerate(v, 1)] for k, v in ranked.items()})
    elif as_csv:
        click.echo(rank_csv(ranked), nl=False)
    else:
        print_tables(rank_table(ranked, wl.name, prof.name, plain=plain_tables()))
        click.echo(wl.description)
        click.echo(_modelled_line(prof))
        for (f, sym), b in board.items():
            if b is not None:
                click.echo(f"{f} {sym}: " + _board_line(b))
        for f, d in dispatch.items():
            for line in _dispatch_lines(d):
                click.echo(f"{f}: {line}")
    return 0

