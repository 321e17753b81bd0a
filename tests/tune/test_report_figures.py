"""The tuner's pictures, read from the figure objects (not pixels): the heat
map's colour bar spans its data and every number reads on its cell; the
Pareto plot keeps a variant under a baseline visible; tables, titles and
legends name a baseline by its strategy, not by its path."""
from __future__ import annotations

import matplotlib.pyplot as plt
import pytest

from copygen.tune import figures, report

SIZES = ["8", "64", "1024", "4096"]
SPEEDUPS = {"aligned": [0.62, 1.0, 1.5, 1.73], "misaligned": [0.8, 0.95, 1.1, 1.3]}


@pytest.fixture
def heat():
    grid = {c: {s: 100.0 for s in SIZES} for c in SPEEDUPS}
    base = {c: {s: 100.0 * v for s, v in zip(SIZES, vs)} for c, vs in SPEEDUPS.items()}
    fig = figures.heatmap_figure(grid, base, "winner vs kernel2021")
    yield fig
    plt.close(fig)


def test_the_colour_bar_covers_every_cell(heat):
    image = heat.axes[0].get_images()[0]
    lo, hi = image.norm.vmin, image.norm.vmax
    assert lo <= 0.62 and hi >= 1.73
    bar = heat.axes[1]                                  # the colour bar's axes
    assert bar.get_ylim()[0] <= 0.62 and bar.get_ylim()[1] >= 1.73


def test_each_number_is_black_or_white_as_its_cell_needs(heat):
    ax = heat.axes[0]
    image = ax.get_images()[0]
    colours = {t.get_text(): t.get_color() for t in ax.texts}
    for t in ax.texts:
        cell = image.cmap(image.norm(float(t.get_text())))
        assert t.get_color() == figures.text_colour(cell)
    assert colours["1.73"] == "white" and colours["0.62"] == "white"     # dark green, dark red
    assert colours["1.00"] == "black"                                    # pale yellow


def test_text_colour_follows_luminance():
    assert figures.text_colour((0.0, 0.0, 0.0, 1.0)) == "white"
    assert figures.text_colour((1.0, 1.0, 0.8, 1.0)) == "black"


def test_a_variant_under_a_baseline_stays_visible_and_the_legend_names_the_strategy():
    rows = [{"text_bytes": 600, "expected": 100.0}, {"text_bytes": 400, "expected": 120.0}]
    labels = {"title": "t", "xlabel": "x", "ylabel": "y"}
    fig, _ = figures.pareto_figure(rows, {"examples/kernel2021.copy": {"text_bytes": 600,
                                                                       "expected": 100.0}}, labels)
    ax = fig.axes[0]
    variants, baseline = ax.collections
    assert baseline.get_zorder() > variants.get_zorder()
    assert baseline.get_facecolor().size == 0 or baseline.get_facecolor()[0][3] == 0   # hollow
    texts = [t.get_text() for t in ax.get_legend().get_texts()]
    assert texts[0].startswith("candidates") and "baseline kernel2021" in texts
    plt.close(fig)


def test_tables_name_baselines_by_strategy_not_path():
    rows = [{"label": "p", "expected": 50.0, "mean_size": 100, "text_bytes": 10, "verdict": "proved",
             "guard": {"examples/kernel2021.copy": 2}}]
    base = {"examples/kernel2021.copy": {"expected": 100.0, "mean_size": 100, "text_bytes": 9}}
    (row,) = report.table_rows(rows, base, 1)
    assert row["vs kernel2021"] == 2.0
    assert row["proof"] == "proved; 2 cells slower than kernel2021"
    assert report.shown_names(["a/x.copy", "b/x.copy", "c/y.copy"]) == {
        "a/x.copy": "a/x.copy", "b/x.copy": "b/x.copy", "c/y.copy": "y"}
