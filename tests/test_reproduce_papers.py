"""A paper's README tables pasted as printed (markup, compound row names, a pass-rate and a win-rate table under
their own headings, "/" cells) reproduce from released labels with only --match for the names the command
cannot guess; the same tables in LaTeX and CSV give the same verdicts; the released example reproduces the
project's worked example."""

from __future__ import annotations

import json
import re
import statistics

import pytest

from runners.cli import main
from toolbench_adapter.evaluation.published import leaderboards as published
from toolbench_adapter.evaluation.published.reproduce import compare_published, reproduce_labels
from toolbench_adapter.queryset.queries import GROUPS

N, REPEATS, REFERENCE = 37, 3, "gpt35_cot"
S, U = "AnswerStatus.Solved", "AnswerStatus.Unsolved"
# label folder -> the paper's row (Backbone, Strategy, Method); the StepTool row's name cannot be guessed
MODELS = {"gpt35_cot": ("GPT-3.5", "CoT", "/"), "gpt35_dfsdt": ("GPT-3.5", "DFSDT", "/"),
          "toolllama_2_7b_v2_dfsdt": ("ToolLLaMA-2-7b-v2", "DFSDT", "/"),
          "steptool": ("ToolLLaMA-2-7b-v2", "DFSDT", "StepTool")}
UNLABELLED = ("Claude-2", "DFSDT", "/")  # a row the labels do not cover
PAPER_ORDER = ["G1_instruction", "G1_category", "G1_tool", "G2_category", "G2_instruction", "G3_instruction"]


def solved(m: int, g: int, r: int) -> int:
    return 8 + (m * 7 + g * 5 + r * 3) % 19  # solved queries of N, per model, group and repeat


def wins(m: int, g: int) -> int:
    return 9 + (m * 4 + g * 5) % 17  # queries of N the output wins against the reference


def build_labels(root):
    for m, model in enumerate(MODELS):
        for g, group in enumerate(GROUPS):
            labels = {f"{g}{q:02d}": {"query": "q", "tool_names": [], "answer_steps": "", "final_step": "",
                                      "is_solved": {str(r): S if q < solved(m, g, r) else U for r in range(REPEATS)}}
                      for q in range(N)}
            path = root / "pass_rate_results" / model / f"{group}_{model}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(labels))
            if model != REFERENCE:
                counts = {f"{g}{q:02d}": {REFERENCE: 1 if q < wins(m, g) else 2, model: 2 if q < wins(m, g) else 1}
                          for q in range(N)}
                pref = root / "preference_results" / f"{group}_{REFERENCE}_{model}.json"
                pref.parent.mkdir(parents=True, exist_ok=True)
                pref.write_text(json.dumps(counts))
    return root


def figures() -> tuple[dict, dict]:
    """The paper's printed cells, from the labels' construction: SoPR mean±std over repeats, SoWR, Averages."""
    sopr, sowr = {}, {}
    for m, model in enumerate(MODELS):
        runs = {group: [solved(m, g, r) / N * 100 for r in range(REPEATS)] for g, group in enumerate(GROUPS)}
        cells = {g: (statistics.fmean(v), statistics.pstdev(v)) for g, v in runs.items()}
        cells["Average"] = (statistics.fmean(c[0] for c in cells.values()),
                            statistics.fmean(c[1] for c in cells.values()))
        sopr[model] = {k: f"{a:.1f}±{b:.1f}" for k, (a, b) in cells.items()}
        if model != REFERENCE:
            rates = {group: wins(m, g) / N * 100 for g, group in enumerate(GROUPS)}
            rates["Average"] = statistics.fmean(rates.values())
            sowr[model] = {k: f"{v:.1f}" for k, v in rates.items()}
    return sopr, sowr


def paper_markdown() -> str:
    """As a paper's README prints it: bold headers, bold best cells, italic baselines, a footnote mark, "/" for
    what was not run, a typo (one win-rate cell 2 points off) and a "–" cell."""
    sopr, sowr = figures()
    head = ("| **Backbone** | **Strategy** | **Method** | " + " | ".join(f"**{h}**" for h in
            ["I1 Ins.", "I1 Cat.", "I1 Tool", "I2 Cat.", "I2 Ins.", "I3 Ins.", "Average"]) + " |\n"
            + "|" + "---|" * 10 + "\n")
    out = ["# Our method\n", "Results on StableToolBench (our runs, gpt-4 judge, 3 evaluations).\n",
           "**Pass Rate:**", head.rstrip("\n")]
    for model, name in MODELS.items():
        cells = [sopr[model][g] for g in PAPER_ORDER + ["Average"]]
        style = (lambda c: f"**{c}**") if model == "steptool" else (lambda c: f"_{c}_") if "gpt" in model else str
        out.append(f"| {name[0]}{'†' if model == 'steptool' else ''} | {name[1]} | {name[2]} | "
                   + " | ".join(style(c) for c in cells) + " |")
    out.append(f"| {' | '.join(UNLABELLED)} | " + " | ".join(["50.0±1.0"] * 7) + " |")
    out += ["", "**Win Rate:**", head.rstrip("\n")]
    out.append(f"| {' | '.join(MODELS[REFERENCE])} | " + " | ".join(["/"] * 7) + " |")
    for model, name in MODELS.items():
        if model == REFERENCE:
            continue
        cells = [sowr[model][g] for g in PAPER_ORDER + ["Average"]]
        if model == "steptool":
            cells[1] = f"{float(cells[1]) + 2:.1f}"  # the typo
            cells[4] = "–"
            cells = [f"**{c}**" for c in cells]
        out.append(f"| {name[0]} | {name[1]} | {name[2]} | " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n\n† our method.\n"


def paper_latex() -> str:
    """The same two tables as the paper's LaTeX: captions name the metric, \\multirow backbones, $\\pm$,
    \\textbf / \\underline, rules, "--" for "/"."""
    sopr, sowr = figures()
    head = ("\\toprule\n\\multirow{2}{*}{Backbone} & \\multirow{2}{*}{Strategy} & \\multirow{2}{*}{Method} & "
            "\\multicolumn{3}{c}{I1} & \\multicolumn{2}{c}{I2} & I3 & \\multirow{2}{*}{Avg.} \\\\\n"
            "\\cmidrule(lr){4-6} \\cmidrule(lr){7-8}\n & & & Inst. & Cat. & Tool & Cat. & Inst. & Inst. & \\\\\n\\midrule\n")

    def table(caption: str, rows: list[str]) -> str:
        return ("\\begin{table*}[t]\n\\centering\n\\caption{" + caption + "}\n\\begin{tabular}{lll|cccccc|c}\n"
                + head + "".join(rows) + "\\bottomrule\n\\end{tabular}\n\\end{table*}\n")

    rows, previous = [], None
    for model, name in MODELS.items():
        cells = [sopr[model][g].replace("±", "$\\pm$") for g in PAPER_ORDER + ["Average"]]
        if model == "steptool":
            cells = [f"\\textbf{{{c}}}" for c in cells]
        base = "" if name[0] == previous else f"\\multirow{{2}}{{*}}{{{name[0]}}}"
        if model == "steptool":
            base += "$^\\dagger$"
        previous = name[0]
        rows.append(f"{base} & {name[1]} & {'--' if name[2] == '/' else name[2]} & " + " & ".join(cells) + " \\\\\n")
    rows.append(f"{UNLABELLED[0]} & {UNLABELLED[1]} & -- & " + " & ".join(["50.0$\\pm$1.0"] * 7) + " \\\\\n")
    pass_rate = table("Solvable pass rate (\\%) on StableToolBench. \\textbf{Bold}: best.", rows)
    rows, previous = [f"{MODELS[REFERENCE][0]} & {MODELS[REFERENCE][1]} & -- & " + " & ".join(["--"] * 7) + " \\\\\n"], None
    for model, name in MODELS.items():
        if model == REFERENCE:
            continue
        cells = [sowr[model][g] for g in PAPER_ORDER + ["Average"]]
        if model == "steptool":
            cells[1] = f"{float(cells[1]) + 2:.1f}"
            cells[4] = "--"
            cells = [f"\\underline{{{c}}}" for c in cells]
        rows.append(f"{name[0]} & {name[1]} & {'--' if name[2] == '/' else name[2]} & " + " & ".join(cells) + " \\\\\n")
    win_rate = table("Win rate (\\%) against GPT-3.5 CoT.", rows)
    return "% two tables of the paper\n" + pass_rate + "\n" + win_rate


def paper_csv() -> str:
    """The same as one CSV: a section row names each table's metric."""
    sopr, sowr = figures()
    lines = ["Backbone,Strategy,Method,I1-Inst,I1-Cat,I1-Tool,I2-Cat,I2-Inst,I3-Inst,Avg", "Pass rate,,,,,,,,,"]
    for model, name in MODELS.items():
        lines.append(",".join(name) + "," + ",".join(sopr[model][g] for g in PAPER_ORDER + ["Average"]))
    lines.append(",".join(UNLABELLED) + "," + ",".join(["50.0±1.0"] * 7))
    lines += ["Win rate,,,,,,,,,", ",".join(MODELS[REFERENCE]) + "," + ",".join(["/"] * 7)]
    for model, name in MODELS.items():
        if model == REFERENCE:
            continue
        cells = [sowr[model][g] for g in PAPER_ORDER + ["Average"]]
        if model == "steptool":
            cells[1] = f"{float(cells[1]) + 2:.1f}"
            cells[4] = "N/A"
        lines.append(",".join(name) + "," + ",".join(cells))
    return "\n".join(lines) + "\n"


STEPTOOL_MATCH = "ToolLLaMA-2-7b-v2 / DFSDT / StepTool=steptool"


@pytest.fixture()
def paper(tmp_path, monkeypatch):
    monkeypatch.delenv("TBA_STB_ROOT", raising=False)
    labels = build_labels(tmp_path / "released")
    path = tmp_path / "README.md"
    path.write_text(paper_markdown())
    return labels, path


def test_a_papers_readme_reproduces_with_only_the_match_it_cannot_guess(paper, capsys):
    labels, path = paper
    args = ["reproduce", "--labels", str(labels / "pass_rate_results"), str(labels / "preference_results"),
            "--published", str(path)]
    assert main(args) == 0  # three of four rows pair by name; the rest is a finding, not an error
    out = capsys.readouterr().out
    # the unpaired row beside the unpaired model, and the --match line ready to paste
    assert "not paired: 2 published rows, 1 reproduced model of this metric" in out
    suggested = re.findall(r"--match '([^']+)'", out)
    assert suggested and set(suggested) == {STEPTOOL_MATCH}
    assert main(args + ["--match", suggested[0]]) == 0
    out = capsys.readouterr().out
    assert "metric SoPR (from the heading 'Pass Rate:')" in out and "metric SoWR (from the heading 'Win Rate:')" in out
    # every numeric cell accounted for: 5 rows x 7 SoPR cells, 3 rows x 7 SoWR cells less one "–"
    assert "28 of 35 published cells reproduced exactly, 0 within rounding, 0 differ, 7 without labels, " \
           "0 not reported" in out
    assert "19 of 20 published cells reproduced exactly, 0 within rounding, 1 differ, 0 without labels, " \
           "8 not reported" in out
    assert "ToolLLaMA-2-7b-v2 / DFSDT / StepTool = reproduced steptool (--match)" in out
    assert "GPT-3.5 / DFSDT = reproduced gpt35_dfsdt vs gpt35_cot" in out  # paired by name
    assert "not paired: 1 published row" in out and "Claude-2 / DFSDT" in out
    assert "follows both the six rounded cells and the unrounded values" in out or \
           "follows the unrounded values" in out
    # a --match with a typo is an error naming the closest names, not a row silently left unpaired
    assert main(args + ["--match", "ToolLLaMA-2-7b-v2 / DFSDT / StepTool=step_tool_v2"]) == 2
    assert "the labels hold no model 'step_tool_v2'" in capsys.readouterr().err
    assert main(args + ["--match", "StepTool (ours)=steptool"]) == 2
    assert "closest published rows: 'ToolLLaMA-2-7b-v2 / DFSDT / StepTool'" in capsys.readouterr().err


def _verdicts(comparisons) -> set[tuple]:
    out = set()
    for comparison in comparisons:
        table = comparison.table
        out |= {(table.metric, c.row.name, c.column, c.mark) for c in comparison.cells}
        out |= {(table.metric, r.name, k, "not reported") for r in table.rows for k in r.not_reported}
    return out


def test_latex_and_csv_versions_give_the_same_verdicts(paper, tmp_path):
    labels, path = paper
    result = reproduce_labels([labels / "pass_rate_results", labels / "preference_results"])
    matches = dict([STEPTOOL_MATCH.split("=")])
    verdicts = {}
    for name, text in (("README.md", None), ("paper.tex", paper_latex()), ("paper.csv", paper_csv())):
        source = path if text is None else tmp_path / name
        if text is not None:
            source.write_text(text)
        tables = published.load_all([str(source)])
        assert [t.metric for t in tables] == ["SoPR", "SoWR"], name
        verdicts[name] = _verdicts(compare_published(result, tables, matches))
    assert len(verdicts["README.md"]) == 35 + 28  # every cell of both tables, numbers and marks
    assert verdicts["paper.tex"] == verdicts["README.md"]
    assert verdicts["paper.csv"] == verdicts["README.md"]
    marks = [v[3] for v in verdicts["README.md"]]
    assert (marks.count("exact"), marks.count("differs"), marks.count("not reported")) == (47, 1, 8)


def test_the_released_example_reproduces_the_worked_example(stb_root, capsys):
    """README's worked example: StableToolBench's released labels against the project's paper-style table."""
    example = stb_root / "data_example"
    table = published.DATA_DIR / "worked_example_paper.md"
    args = ["reproduce", "--labels", str(example / "pass_rate_results"), str(example / "preference_results"),
            "--published", str(table)]
    assert main(args) == 2  # no row name is a label folder's: the ready --match lines are the fix
    err = capsys.readouterr().err
    assert "--match 'ChatGPT / CoT=virtual_chatgpt_cot'" in err and "--match 'ChatGPT / DFSDT=virtual_chatgpt_dfs'" in err
    assert main(args + ["--match", "ChatGPT / CoT=virtual_chatgpt_cot", "--match",
                        "ChatGPT / DFSDT=virtual_chatgpt_dfs"]) == 0
    out = capsys.readouterr().out
    assert "2 of 2 published cells reproduced exactly, 0 within rounding, 0 differ, 0 without labels, " \
           "12 not reported" in out
    assert "1 of 1 published cells reproduced exactly, 0 within rounding, 0 differ, 0 without labels, " \
           "13 not reported" in out
