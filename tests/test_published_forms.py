"""Published tables as papers print them: markup around cells and names, every header spelling, Markdown /
LaTeX / CSV / TSV, several tables to a file with the metric of each, "not reported" marks, headers that place
nowhere named, and the exit status."""

from __future__ import annotations

import csv
import io
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runners.cli import main
from tests.test_reproduce import per_model_set
from toolbench_adapter.errors import InputError
from toolbench_adapter.evaluation.published import leaderboards as published
from toolbench_adapter.evaluation.published.cells import EMPTY, NUMBER, TEXT, clean, parse_cell, read
from toolbench_adapter.evaluation.published.columns import column_key, place
from toolbench_adapter.evaluation.published.markdown import split_cells

# ---- one cell ------------------------------------------------------------------------------------------

MARKDOWN_WRAPS = [lambda t: f"**{t}**", lambda t: f"__{t}__", lambda t: f"*{t}*", lambda t: f"_{t}_",
                  lambda t: f"`{t}`", lambda t: f"[{t}](https://example.org/a_b#c)", lambda t: f"<b>{t}</b>",
                  lambda t: f"<u>{t}</u>", lambda t: f"~~{t}~~", lambda t: f"{t}†", lambda t: f"{t}‡",
                  lambda t: f"{t}*", lambda t: f"{t}^a", lambda t: f"{t}<sup>1</sup>", lambda t: f"{t}[^2]",
                  lambda t: f"{t}¹"]
LATEX_WRAPS = [lambda t: f"\\textbf{{{t}}}", lambda t: f"\\underline{{{t}}}", lambda t: f"\\textit{{{t}}}",
               lambda t: f"\\emph{{{t}}}", lambda t: f"{{\\bf {t}}}", lambda t: f"$\\mathbf{{{t}}}$",
               lambda t: f"\\cellcolor{{gray!20}}{t}", lambda t: f"\\textcolor{{red}}{{{t}}}",
               lambda t: f"{t}$^\\dagger$", lambda t: f"{t}\\textsuperscript{{*}}", lambda t: f"{t}$^{{a}}$",
               lambda t: f"\\multirow{{2}}{{*}}{{{t}}}", lambda t: f"\\makecell{{{t}}}", lambda t: f"{t}\\,"]
MARKDOWN_PM = ["±", " ± ", "&plusmn;", " +- ", "<sub>±", "$\\pm$"]
LATEX_PM = ["$\\pm$", " \\pm ", "$_{\\pm ", "\\textpm", "$\\pm "]


def _with_pm(mean: str, std: str, pm: str) -> str:
    if pm == "<sub>±":
        return f"{mean}<sub>±{std}</sub>"
    if pm == "$_{\\pm ":
        return f"{mean}$_{{\\pm {std}}}$"
    if pm == "$\\pm ":
        return f"${mean} \\pm {std}$"
    return f"{mean}{pm}{std}"


numbers = st.tuples(st.integers(0, 10000), st.sampled_from([0, 1, 2]), st.one_of(st.none(), st.integers(0, 500)))


def _plain(value: int, decimals: int, std: int | None) -> tuple[str, str | None]:
    scale = 10 ** decimals
    mean = f"{value / scale:.{decimals}f}" if decimals else str(value // 100)
    return mean, (f"{std / scale:.{decimals}f}" if decimals else str(std // 10)) if std is not None else None


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(numbers, st.sampled_from(["markdown", "latex"]), st.data())
def test_any_markup_around_a_cell_gives_the_same_number(number, form, data):
    mean, std = _plain(*number)
    wraps = MARKDOWN_WRAPS if form == "markdown" else LATEX_WRAPS
    pm = data.draw(st.sampled_from(MARKDOWN_PM if form == "markdown" else LATEX_PM))
    text = _with_pm(mean, std, pm) if std is not None else mean
    plain = parse_cell(f"{mean}±{std}" if std is not None else mean)
    # around the whole cell, and (for a cell with ±) around its mean alone, as papers bold just the figure
    for wrap in data.draw(st.lists(st.sampled_from(wraps), min_size=1, max_size=3)):
        text = wrap(text)
    text = f"  {text} "  # the spaces around a cell between its pipes / ampersands
    cell = parse_cell(text)
    assert cell is not None, text
    assert (cell.mean, cell.std, cell.decimals) == (plain.mean, plain.std, plain.decimals), text
    if std is not None and pm in ("±", " ± ", "$\\pm$"):
        inner = data.draw(st.sampled_from(wraps))
        cell = parse_cell(f"{inner(mean)}{pm}{std}")
        assert cell is not None and (cell.mean, cell.std) == (plain.mean, plain.std)


names = st.from_regex(r"[A-Z][A-Za-z]{1,8}(-[0-9]\.[0-9]|-[0-9]b)?( v2)?( \((CoT|DFS)\))?", fullmatch=True)


@settings(max_examples=200)
@given(names, st.sampled_from(MARKDOWN_WRAPS + LATEX_WRAPS))
def test_markup_and_footnote_marks_leave_a_row_name_alone(name, wrap):
    assert clean(wrap(name)) == name


@pytest.mark.parametrize("text", ["/", "-", "–", "—", "N/A", "n/a", "", "**/**", "\\textbf{--}", "$-$"])
def test_empty_marks_are_not_reported(text):
    assert read(text).kind == EMPTY


@pytest.mark.parametrize(("text", "mean", "std"), [("64.1 (+5.2)", 64.1, None), ("**58.2** ↑", 58.2, None),
                                                   ("52.2 (±1.1)", 52.2, 1.1), ("60.7%", 60.7, None),
                                                   ("−3.0", -3.0, None), ("0.675", 0.675, None)])
def test_changes_percent_signs_and_bracketed_stds(text, mean, std):
    cell = read(text)
    assert cell.kind == NUMBER and (cell.cell.mean, cell.cell.std) == (mean, std)


def test_text_is_text():
    assert read("three").kind == TEXT and read("ToolLLaMA").kind == TEXT


# ---- headers -------------------------------------------------------------------------------------------

SPELLINGS = {
    "G1_instruction": ["G1_instruction", "G1-Inst", "G1 Inst.", "I1-Inst.", "I1 Ins.", "I1-I", "I1 Instruction",
                       "**I1 Ins.**", "I1-Inst. ↑", "G1_instruction_WinRate", "I1 Inst (%)", "I1Inst"],
    "G1_category": ["G1_category", "I1-Cat.", "I1 Cat", "I1-Cate", "I1-C", "I1 Category", "G1-Cat"],
    "G1_tool": ["G1_tool", "I1-Tool.", "I1 Tool", "I1-T", "G1-Tool", "\\textbf{I1-Tool}"],
    "G2_instruction": ["G2_instruction", "I2-Inst.", "I2 Ins.", "I2-I", "I2 Instruction"],
    "G2_category": ["G2_category", "I2-Cat.", "I2 Cat.", "I2-Cate", "I2 Category"],
    "G3_instruction": ["G3_instruction", "I3-Inst.", "I3 Ins.", "I3-I", "I3 Instruction"],
    "Average": ["Avg", "Avg.", "Average", "Mean", "**Average**", "WinRate", "Pass Rate"],
    # issue 35 round two: a level alone is its mean (the leaderboard's I1 / I2 / I3), "Overall" is pooled
    "I1": ["I1", "G1", "**G1**"], "I2": ["G2", "I2 (%)"], "I3": ["G3"], "Overall": ["Overall", "Overall (%)"],
}


@pytest.mark.parametrize(("header", "key"), [(h, k) for k, hs in SPELLINGS.items() for h in hs])
def test_every_spelling_of_the_six_groups_and_the_average(header, key):
    assert column_key(header) == key


@pytest.mark.parametrize(("header", "why"), [("Avg. Rank", "unknown words: rank"), ("Params", "unknown words"),
                                             ("I3 Cat.", "no group G3_category"), ("Inst.", "which of I1 / I2 / I3"),
                                             ("I1 Overall", "pooled over part"), ("G1_tool_StdError", "error")])
def test_headers_that_place_nowhere_say_why(header, why):
    assert column_key(header) is None and why in place(header).reason


# ---- whole tables ---------------------------------------------------------------------------------------

HEADER = "| Model | I1 Inst | I1 Cat | I1 Tool | I2 Cat | I2 Inst | I3 Inst | Average |\n|---|---|---|---|---|---|---|---|\n"


def _write(tmp_path, name: str, text: str):
    path = tmp_path / name
    path.write_text(text)
    return path


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.lists(st.integers(0, 1000), min_size=7, max_size=7), min_size=1, max_size=4), st.data())
def test_a_whole_table_reads_the_same_in_any_markup_and_form(tmp_path_factory, rows, data):
    tmp = tmp_path_factory.mktemp("forms")
    plain = [[f"{v / 10:.1f}±{(v % 17) / 10:.1f}" for v in row] for row in rows]
    names = [f"Model {i} (DFS)" for i in range(len(rows))]

    def marked(text: str, wraps) -> str:
        for wrap in data.draw(st.lists(st.sampled_from(wraps), max_size=2)):
            text = wrap(text)
        return text

    md = HEADER + "".join(f"| {marked(n, MARKDOWN_WRAPS[:8])} | " + " | ".join(marked(c, MARKDOWN_WRAPS) for c in r)
                          + " |\n" for n, r in zip(names, plain, strict=True))
    tex = ("\\begin{tabular}{lccccccc}\n\\toprule\nModel & I1-Inst. & I1-Cat. & I1-Tool & I2-Cat. & I2-Inst. & "
           "I3-Inst. & Avg. \\\\\n\\midrule\n"
           + "".join(f"{marked(n, LATEX_WRAPS[:6])} & "
                     + " & ".join(marked(c.replace("±", "$\\pm$"), LATEX_WRAPS) for c in r) + " \\\\\n"
                     for n, r in zip(names, plain, strict=True)) + "\\bottomrule\n\\end{tabular}\n")
    tsv = "Model\tI1 Ins.\tI1 Cat.\tI1 Tool\tI2 Cat.\tI2 Ins.\tI3 Ins.\tAverage\n" + "".join(
        n + "\t" + "\t".join(r) + "\n" for n, r in zip(names, plain, strict=True))
    expected = [(n, [parse_cell(c).mean for c in r], [parse_cell(c).std for c in r])
                for n, r in zip(names, plain, strict=True)]
    for name, text in (("t.md", md), ("t.tex", tex), ("t.tsv", tsv)):
        table = published.read_table(_write(tmp, name, text))
        keys = [k for _, k in table.columns]
        got = [(r.name, [r.cells[k].mean for k in keys], [r.cells[k].std for k in keys]) for r in table.rows]
        assert got == expected, (name, text)


def test_compound_row_names_multirow_and_a_slash_in_a_name_column(tmp_path):
    md = ("| **BaseModel** | **Strategy** | **Method** | **I1 Ins.** | **Average** |\n|---|---|---|---|---|\n"
          "| gpt-3.5 | COT | / | _53.8±1.2_ | _51.0±1.0_ |\n"
          "| ToolLlama | DFSDT | StepTool | **59.7±0.5** | **57.5±0.6** |\n"
          "| | DFSDT | PPO | 57.5±1.5 | 51.2±1.1 |\n")
    table = published.read_table(_write(tmp_path, "p.md", md))
    assert [r.name for r in table.rows] == ["gpt-3.5 / COT", "ToolLlama / DFSDT / StepTool", "ToolLlama / DFSDT / PPO"]
    tex = ("\\begin{tabular}{lllcc}\\toprule\nBase & Strategy & Method & I1-Inst. & Avg. \\\\ \\midrule\n"
           "\\multirow{2}{*}{\\textbf{ToolLlama}} & \\multirow{2}{*}{DFSDT} & StepTool & 59.7$\\pm$0.5 & 57.5$\\pm$0.6 \\\\\n"
           " & & PPO & 57.5$\\pm$1.5 & 51.2$\\pm$1.1 \\\\ \\bottomrule\n\\end{tabular}")
    table = published.read_table(_write(tmp_path, "p.tex", tex))
    assert [r.name for r in table.rows] == ["ToolLlama / DFSDT / StepTool", "ToolLlama / DFSDT / PPO"]


def test_spanning_headers_in_markdown_and_latex(tmp_path):
    md = ("| Model | I1 | | | I2 | | I3 | Avg |\n|---|---|---|---|---|---|---|---|\n"
          "| | Inst. | Tool | Cat. | Inst. | Cat. | Inst. | |\n"
          "| A | 1.0 | 2.0 | 3.0 | 4.0 | 5.0 | 6.0 | 3.5 |\n")
    tex = ("\\begin{tabular}{l ccc cc c c}\n\\hline\n\\multirow{2}{*}{Model} & \\multicolumn{3}{c}{I1} & "
           "\\multicolumn{2}{c}{I2} & I3 & \\multirow{2}{*}{Avg} \\\\\n\\cmidrule(lr){2-4}\\cmidrule(lr){5-6}\n"
           " & Inst. & Tool & Cat. & Inst. & Cat. & Inst. & \\\\\n\\hline\nA & 1.0 & 2.0 & 3.0 & 4.0 & 5.0 & 6.0 & 3.5 \\\\\n"
           "\\end{tabular}\n")
    for name, text in (("s.md", md), ("s.tex", tex)):
        row = published.read_table(_write(tmp_path, name, text)).rows[0]
        assert {k: c.mean for k, c in row.cells.items()} == {
            "G1_instruction": 1.0, "G1_tool": 2.0, "G1_category": 3.0, "G2_instruction": 4.0, "G2_category": 5.0,
            "G3_instruction": 6.0, "Average": 3.5}, name


TWO_TABLES = """\
## Results

Below are the main results. The win rate of each model is against ChatGPT-ReACT.

**Pass Rate:**
| Backbone | Method | I1-Inst. | I1-Cat. | I1-Tool. | I2-Cat. | I2-Inst. | I3-Inst. | Average |
| --- | --- | --- | --- | --- | --- | --- | --- | --- |
| GPT-3.5 Turbo | ReACT | 41.6±1.2 | 48.4±0.5 | 52.5±0.5 | 52.2±1.0 | 31.6±1.2 | 39.9±2.0 | 44.4±1.1 |
| GPT-3.5 Turbo | **Ours** | **60.3±1.5** | 67.0±1.0 | 60.3±1.3 | 54.3±0.4 | 42.6±1.6 | 60.1±1.0 | 57.4±1.1 |

**Win Rate:**
| Backbone | Method | I1-Inst. | I1-Cat. | I1-Tool. | I2-Cat. | I2-Inst. | I3-Inst. | Average |
| --- | --- | --- | --- | --- | --- | --- | --- | --- |
| GPT-3.5 Turbo | ReACT | / | / | / | / | / | / | / |
| GPT-3.5 Turbo | **Ours** | 65.0 | 69.9 | 54.4 | 63.7 | 64.2 | N/A | 62.4 |
"""


def test_two_tables_each_with_the_metric_of_its_heading(tmp_path):
    path = _write(tmp_path, "readme.md", TWO_TABLES)
    first, second = published.read_tables(path)
    assert (first.id, first.metric, second.id, second.metric) == ("readme.md#1", "SoPR", "readme.md#2", "SoWR")
    assert "the heading 'Win Rate:'" in second.metric_source
    assert second.count_cells() == (6, 8, 0)  # 6 numbers; 7 "/" and one "N/A" counted apart
    assert [t.metric for t in published.load_published(f"{path}#2")] == ["SoWR"]
    with pytest.raises(InputError, match="no #3"):
        published.load_published(f"{path}#3")


def test_the_metric_is_overridden_per_table(tmp_path):
    path = _write(tmp_path, "readme.md", TWO_TABLES)
    tables = published.load_all([str(path)], ["2=FAC"])
    assert [t.metric for t in tables] == ["SoPR", "FAC"] and tables[1].metric_source == "--published-metric 2=FAC"
    tables = published.load_all([str(path)], ["readme.md#1=win rate"])
    assert [t.metric for t in tables] == ["SoWR", "SoWR"]
    with pytest.raises(InputError, match="names no table"):
        published.load_all([str(path)], ["5=SoPR"])
    with pytest.raises(InputError, match="is not a metric"):
        published.load_all([str(path)], ["1=accuracy"])


def test_the_metric_from_a_caption_a_section_row_a_leading_column_and_the_headers(tmp_path):
    caption = ("\\begin{table}\\caption{Win rate (\\%) against GPT-3.5 CoT.}\n\\begin{tabular}{lc}\n"
               "Model & I1-Inst. \\\\ \\midrule A & 60.7 \\\\\n\\end{tabular}\\end{table}\n")
    assert published.read_table(_write(tmp_path, "c.tex", caption)).metric == "SoWR"
    sections = ("Model,I1 Inst,Average\nPass Rate,,\nA,50.0±1.0,50.0±1.0\nWin Rate,,\nA,60.0,60.0\n")
    tables = published.read_tables(_write(tmp_path, "s.csv", sections))
    assert [(t.metric, t.rows[0].cells["Average"].mean) for t in tables] == [("SoPR", 50.0), ("SoWR", 60.0)]
    leading = ("| Metric | Method | Model | I1-Inst | Avg |\n|---|---|---|---|---|\n| Pass | ReACT | Claude-2 | 5.5 | 6.8 |\n"
               "| Win | ReACT | Claude-2 | 31 | 34.4 |\n")
    tables = published.read_tables(_write(tmp_path, "l.md", leading))
    assert [(t.metric, t.rows[0].name) for t in tables] == [("SoPR", "ReACT / Claude-2"), ("SoWR", "ReACT / Claude-2")]
    side = ("\\begin{tabular}{lcccc}\nModel & \\multicolumn{2}{c}{I1-Inst.} & \\multicolumn{2}{c}{Average} \\\\\n"
            " & Pass & Win & Pass & Win \\\\\n\\midrule\nChatGPT & 54.5 & 60.5 & 64.8 & 64.3 \\\\\n\\end{tabular}\n")
    tables = published.read_tables(_write(tmp_path, "side.tex", side))
    assert [(t.metric, t.rows[0].cells["Average"].mean) for t in tables] == [("SoPR", 64.8), ("SoWR", 64.3)]


def test_a_header_that_places_nowhere_is_named(tmp_path, capsys):
    path = _write(tmp_path, "p.md", "| Model | I1 Inst | Avg. Rank | Params | Average |\n|---|---|---|---|---|\n"
                                    "| A | 50.0 | 1.5 | 7 | 50.0 |\n")
    assert main(["reproduce", "--published", str(path), "--check-only", "--published-metric", "SoPR"]) == 0
    out = capsys.readouterr().out
    assert "not placed: 'Avg. Rank' (unknown words: rank; 1 numeric cell not compared); 'Params'" in out


def test_exit_2_only_when_the_file_holds_no_readable_table(tmp_path, capsys):
    path = _write(tmp_path, "notes.md", "# Notes\n\n| a | b |\n|---|---|\n| x | y |\n")
    assert main(["reproduce", "--published", str(path), "--check-only", "--published-metric", "SoPR"]) == 2
    err = capsys.readouterr().err
    assert "no readable published table" in err and "no column names a group or the Average" in err
    assert main(["reproduce", "--published", str(_write(tmp_path, "ok.md", TWO_TABLES)), "--check-only"]) == 0


def test_with_labels_cells_that_differ_exit_0_and_no_readable_table_exits_2(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("TBA_STB_ROOT", raising=False)
    labels, _ids = per_model_set(tmp_path)  # my_model: G1_instruction 50.0±0.0
    wrong = _write(tmp_path, "wrong.md", "| Model | I1 Inst |\n|---|---|\n| my_model | 60.0±0.0 |\n")
    assert main(["reproduce", "--labels", str(labels), "--published", str(wrong), "--published-metric", "SoPR"]) == 0  # a finding
    assert "0 of 1 published cells reproduced exactly, 0 within rounding, 1 differ" in capsys.readouterr().out
    notes = _write(tmp_path, "notes.md", "# Notes\n\n| a | b |\n|---|---|\n| x | y |\n")
    assert main(["reproduce", "--labels", str(labels), "--published", str(notes)]) == 2
    assert "no readable published table" in capsys.readouterr().err


def test_numbers_in_columns_not_placed_are_in_k_of_m(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("TBA_STB_ROOT", raising=False)
    labels, _ids = per_model_set(tmp_path)  # my_model: G1_instruction 50.0±0.0, Average 91.7±0.0
    path = _write(tmp_path, "p.md", "| Model | I1 Inst | I1-Tol. | Avg. Rank | Average | Mean |\n|---|---|---|---|---|---|\n"
                                    "| my_model | 50.0±0.0 | 100.0±0.0 | 1 | 91.7±0.0 | 91.7 |\n"
                                    "| Other | 40.0±1.0 | 30.0±1.0 | 2 | 35.0±1.0 | 35.0 |\n")
    args = ["reproduce", "--labels", str(labels), "--published", str(path), "--published-metric", "SoPR"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "'I1-Tol.' (unknown words: tol; 2 numeric cells not compared)" in out
    assert "'Mean' (a second Average column; the first is read; 2 numeric cells not compared)" in out
    assert "4 numeric cells, 0 not reported, 6 in columns not placed" in out
    summary = ("2 of 10 published cells reproduced exactly, 0 within rounding, 0 differ, 2 without labels, "
               "0 not reported, 6 in columns not placed")
    assert summary in out
    counts = [int(n) for n in re.findall(r"\d+", summary)]
    assert counts[1] == counts[0] + sum(counts[2:5]) + counts[6]  # M: every number, exactly once
    assert main(args + ["--published", str(path)]) == 0  # two tables: the Overall line counts them too
    assert ("Overall: 4 of 20 published cells reproduced exactly, 0 within rounding, 0 differ, 4 without labels, "
            "0 not reported, 12 in columns not placed") in capsys.readouterr().out


def test_the_metric_of_a_fac_heading_shown_as_printed(tmp_path):
    fac = published.read_table(_write(tmp_path, "f.md", "### Final Answer Completeness (FAC, %)\n\n"
                                                        "| Model | I1 Ins. | Avg |\n|---|---|---|\n| A | 50.0 | 50.0 |\n"))
    assert (fac.metric, fac.metric_source) == ("FAC", "the heading 'Final Answer Completeness (FAC, %)'")
    tex = ("\\begin{table}\\caption{Solvable pass rate (SoPR, \\%) on StableToolBench.}\n\\begin{tabular}{lc}\n"
           "Model & I1-Inst. \\\\ \\midrule A & 60.7 \\\\\n\\end{tabular}\\end{table}\n")
    table = published.read_table(_write(tmp_path, "c.tex", tex))
    assert (table.metric, table.metric_source) == ("SoPR", "caption 'Solvable pass rate (SoPR, %) on StableToolBench.'")


def _restyled(rows: list[list[str]], header: list[str]) -> tuple[str, str, str]:
    """StableToolBench's table as a paper would print it: Markdown with the best cell of each column bold and the
    second italic, a link and a dagger on names; the same as a LaTeX tabular (\\textbf, \\underline, $\\pm$,
    rules) and as CSV."""
    means = [[float(cell.split("±")[0]) for cell in row[1:]] for row in rows]
    ranks = [sorted({m[c] for m in means}, reverse=True) for c in range(len(header) - 1)]

    def rank(r: int, c: int) -> int:
        return ranks[c].index(means[r][c])

    md_styles, tex_styles = ["**{}**", "_{}_"], ["\\textbf{{{}}}", "\\underline{{{}}}"]
    md = ["## Results", "", "**Solvable Pass Rate (%):**", "",
          "| " + " | ".join(f"**{h}**" for h in header) + " |", "|" + ":---:|" * len(header)]
    tex = ["\\begin{table}[t]", "\\caption{Solvable pass rate (\\%). \\textbf{Bold}: best.}",
           "\\begin{tabular}{l" + "c" * (len(header) - 1) + "}", "\\toprule",
           " & ".join(f"\\textbf{{{h}}}" for h in header) + " \\\\", "\\midrule"]
    for r, row in enumerate(rows):
        name = f"[{row[0]}](https://example.org/{r})†" if r % 2 else f"{row[0]}^a"
        cells = [md_styles[rank(r, c)].format(cell) if rank(r, c) < 2 else cell for c, cell in enumerate(row[1:])]
        md.append(f"| {name} | " + " | ".join(cells) + " |")
        cells = [cell.replace("±", "$\\pm$") for cell in row[1:]]
        cells = [tex_styles[rank(r, c)].format(cell) if rank(r, c) < 2 else cell for c, cell in enumerate(cells)]
        mark = "$^\\dagger$" if r % 2 else ""
        tex.append(f"{row[0]}{mark} & " + " & ".join(cells) + " \\\\")
    tex += ["\\bottomrule", "\\end{tabular}", "\\end{table}"]
    out = io.StringIO()
    csv.writer(out).writerows([header] + rows)
    return "\n".join(md) + "\n", "\n".join(tex) + "\n", out.getvalue()


def test_the_stabletoolbench_table_restyled_as_a_paper_reads_the_same(tmp_path):
    original = published.DATA_DIR / "stb_gpt_cache_sopr.md"
    lines = [line for line in original.read_text(encoding="utf-8").splitlines() if line.startswith("|")]
    header, rows = split_cells(lines[0]), [split_cells(line) for line in lines[2:]]

    def reading(table) -> tuple[list, list]:
        cells = [(r.name, {k: (c.mean, c.std, c.decimals) for k, c in r.cells.items()}) for r in table.rows]
        checks = published.check_averages(table)
        return cells, [(c.row.name, c.mark, c.mean_mark, c.conventions, c.verdict) for c in checks]

    expected = reading(published.read_table(original))
    assert len(expected[0]) == 10 and all(len(cells) == 7 for _, cells in expected[0]) and len(expected[1]) == 10
    for name, text in zip(("paper.md", "paper.tex", "paper.csv"), _restyled(rows, header), strict=True):
        table = published.read_table(_write(tmp_path, name, text))
        assert table.metric == "SoPR" and not table.not_placed and not table.unplaced, name
        assert reading(table) == expected, name
