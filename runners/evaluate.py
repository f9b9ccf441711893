"""A run folder -> converted answers -> judge labels -> leaderboard row and error taxonomy.

Everything lands inside the run folder: converted/{model}/{group}.json (upstream layout), eval/ (labels,
scores, judge metadata) and tables/ (leaderboard and taxonomy as Markdown, CSV, LaTeX, PNG)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from toolbench_adapter.answers.convert import convert_folder, write_json_atomic
from toolbench_adapter.errors import InputError
from toolbench_adapter.evaluation.evaluator import load_evaluator
from toolbench_adapter.evaluation.judge import make_judge
from toolbench_adapter.evaluation.run_judge import judge_file
from toolbench_adapter.evaluation.storage import write_text_atomic
from toolbench_adapter.queries import GROUPS, QuerySet, is_group_name
from toolbench_adapter.report import tables, taxonomy

from .run import ERRORS, MANIFEST, summarize


@dataclass
class Evaluation:
    rows: list = field(default_factory=list)
    boards: list = field(default_factory=list)
    written: list[Path] = field(default_factory=list)
    text: str = ""


def safe_name(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_.@" else "_" for c in text).strip("_") or "model"


def evaluate_run(run_dir: str | Path, client, *, evaluator: str | None = None, evaluators_dir: str | None = None,
                 mode: str = "auto", evaluate_times: int = 3, concurrency: int = 4, cache_path: str | None = None,
                 model_label: str | None = None, progress: bool = True, max_tokens: int | None = None,
                 score_anyway: bool = False, executor=None) -> Evaluation:
    """``executor``: what judges the uncached answers (passrate.JudgeExecutor; None: ``concurrency`` threads)."""
    run_dir = Path(run_dir)
    manifest = read_manifest(run_dir)
    method = manifest["config"]["method"]
    # the row is named after the run (a model "name" can be a 70-character replay path); --model-label renames
    model = safe_name(model_label or str(manifest.get("name") or run_dir.resolve().name))
    marked = infra_failure_note(run_dir, score_anyway)
    folders = [g for g in GROUPS if (run_dir / g).is_dir()] + sorted(
        p.name for p in run_dir.iterdir() if p.is_dir() and is_group_name(p.name) and p.name not in GROUPS)
    # a group folder without answer files of this method (every query of it failed, say) gets no row: an
    # empty converted file would be judged into a score over nothing
    groups = [g for g in folders if any((run_dir / g).glob(f"*_{method}.json"))]
    if not groups:
        raise InputError(f"the run folder holds no {method} answer files", path=run_dir,
                         fix="run tba run first (or rerun it: infrastructure failures write no answer file)")
    try:
        ids_dir = QuerySet(manifest["config"].get("stb_root")).ids_dir
    except InputError:
        ids_dir = None  # the checkout moved: strict scores need the test ids, upstream scores do not
    spec = load_evaluator(evaluator, [evaluators_dir] if evaluators_dir else [])
    judge = make_judge(client, spec, mode, max_tokens=max_tokens)
    result = Evaluation()
    for group in groups:
        converted = convert_folder(run_dir / group, method)
        converted_path = write_json_atomic(converted, run_dir / "converted" / model / f"{group}.json")
        has_ids = ids_dir is not None and (ids_dir / f"{group}.json").exists()
        outcome = judge_file(converted_path, judge, run_dir / "eval", group=group, model=model,
                             evaluate_times=evaluate_times, test_ids_dir=ids_dir if has_ids else None,
                             concurrency=concurrency, cache_path=cache_path, progress=progress,
                             executor=executor)
        result.rows.extend(outcome.rows)
    parts = []
    for board in tables.build_leaderboards(result.rows, scored_anyway={model: marked} if marked else None):
        result.boards.append(board)
        result.written.extend(tables.write_leaderboard(board, run_dir / "tables"))
        parts.append(tables.to_markdown(board))
    tax = taxonomy.read_taxonomy(run_dir)
    stem = run_dir / "tables" / "taxonomy"
    write_text_atomic(stem.with_suffix(".md"), taxonomy.to_markdown(tax))
    write_text_atomic(stem.with_suffix(".csv"), taxonomy.to_csv(tax))
    result.written.extend([stem.with_suffix(".md"), stem.with_suffix(".csv")])
    parts.append(taxonomy.to_markdown(tax))
    result.text = "\n".join(parts)
    return result


def read_manifest(run_dir: Path) -> dict:
    manifest_path = run_dir / MANIFEST
    if not manifest_path.exists():
        raise InputError("not a run folder (no manifest.json)", path=run_dir, fix="pass a folder written by tba run")
    return json.loads(manifest_path.read_text(encoding="utf-8"))


def infra_failure_note(run_dir: str | Path, score_anyway: bool) -> str | None:
    """None for a run without infrastructure failures; with some, refuse (exit 2) unless ``score_anyway``,
    and then the footnote that marks the row: those queries have no answer file, so scores would count them
    as unanswered (strict) or leave them out of the denominator (upstream) without a word."""
    run_dir = Path(run_dir)
    manifest = read_manifest(run_dir)
    totals = summarize(run_dir, manifest["config"]["method"])
    count = totals["infra_failures"]
    if not count:
        return None
    kinds = ", ".join(f"{kind} {n}" for kind, n in totals["infra_failures_by_kind"].items())
    if not score_anyway:
        raise InputError(f"{count} of {totals['queries']} queries ended in infrastructure failures ({kinds}) and "
                         f"have no answer file (listed in {run_dir / ERRORS})", path=run_dir,
                         field="totals.infra_failures",
                         fix=f"re-run {redo_command(manifest)}: it redoes exactly those queries; "
                         "or pass --score-anyway to score the run as it is (the table marks the row)")
    return (f"scored with {count} of {totals['queries']} queries lost to infrastructure failures ({kinds}): "
            "no answer for them (tba evaluate --score-anyway)")


def redo_command(manifest: dict) -> str:
    """The command that wrote the run's last session, as the manifest recorded it, else a description."""
    command = next((s.get("command") for s in reversed(manifest.get("sessions", [])) if s.get("command")), None)
    return f"`{command}`" if command else "the tba run command that wrote this folder"


LOCAL_JUDGE_MAX_TOKENS = 96  # a verdict is a short JSON object; a small local model would ramble to 1000


def hf_chat_client(model: str | None = None, base_url: str | None = None, api_key: str | None = None,
                   max_tokens: int = LOCAL_JUDGE_MAX_TOKENS, **_):
    """Judge with a local transformers model (default: SmolLM2-135M-Instruct); text only -> JSON mode."""
    from .models.chat_adapter import BackendChatClient
    from .models.hf import HFBackend

    class CappedChatClient(BackendChatClient):
        def chat(self, messages, *, tools=None, tool_choice=None, temperature=None, max_tokens=None, prefill=None,
                 stop=None):
            cap = min(max_tokens or self.cap, self.cap)
            return super().chat(messages, tools=tools, tool_choice=tool_choice, temperature=temperature,
                                max_tokens=cap, prefill=prefill, stop=stop)

    backend = HFBackend(model=model)
    backend.preflight()
    client = CappedChatClient(backend)
    client.cap = max_tokens
    return client
