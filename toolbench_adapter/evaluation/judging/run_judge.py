"""Judge one converted answer file end to end: labels, meta file, score file. The CLI's ``tba judge``."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

from toolbench_adapter.errors import InputError
from toolbench_adapter.evaluation.cache import JudgementCache
from toolbench_adapter.evaluation.judging.fac import FacRun, judge_fac
from toolbench_adapter.evaluation.judging.judge import FunctionJudge
from toolbench_adapter.evaluation.judging.passrate import JudgeExecutor, JudgeRun, JudgingProgress, judge_converted
from toolbench_adapter.evaluation.scoring.results import ScoreRow, load_test_ids, write_score_file
from toolbench_adapter.evaluation.scoring.scores import STRICT, sopr
from toolbench_adapter.evaluation.storage import write_label_files, write_text_atomic
from toolbench_adapter.files.input_files import read_json


@dataclass
class JudgeOutcome:
    run: JudgeRun
    rows: list[ScoreRow]
    label_file: Path
    score_file: Path | None  # None: judgements failed and the scores were not asked for anyway


def read_converted(path: str | Path) -> dict:
    path = Path(path)
    data = read_json(path, "converted answer file")
    if not isinstance(data, dict):
        raise InputError("converted answer file must be a JSON object keyed by query id", path=path)
    return data


def names_from_path(path: str | Path) -> tuple[str, str]:
    """Upstream layout ``{converted}/{model}/{group}.json`` -> (group, model)."""
    path = Path(path)
    return path.stem, path.parent.name


def judge_file(converted_path: str | Path, judge: FunctionJudge, out_dir: str | Path, *, group: str, model: str,
               evaluate_times: int = 3, test_ids_dir: str | Path | None = None, concurrency: int = 4,
               cache_path: str | Path | None = None, progress: bool | JudgingProgress = True,
               executor: JudgeExecutor | None = None, score_anyway: bool = False,
               judge_label: str | None = None, meta_extra: dict | None = None) -> JudgeOutcome:
    """Labels are always written (a failed judgement is stored as JudgeError with its reason); the score file
    only when every judgement has a verdict, or with ``score_anyway`` (failed ones left out of the scores).
    ``judge_label``: the judge as the meta file and the score rows name it (default ``judge.name``; tba evaluate
    adds its marks, e.g. self-judged); ``meta_extra``: more fields for the meta file."""
    judge_label = judge_label or judge.name
    converted = read_converted(converted_path)
    test_ids = load_test_ids(test_ids_dir, group)
    if test_ids_dir is not None and test_ids is None:
        raise InputError(f"no test id file for {group}", path=Path(test_ids_dir) / f"{group}.json")
    cache = JudgementCache(cache_path)
    started = time.time()
    run = judge_converted(converted, judge, evaluate_times=evaluate_times, test_ids=test_ids,
                          concurrency=concurrency, cache=cache, progress=progress, executor=executor)
    methods = sorted({str(e["answer"].get("method")) for e in converted.values() if isinstance(e, dict)
                      and isinstance(e.get("answer"), dict) and e["answer"].get("method")})
    method = methods[0] if len(methods) == 1 else (", ".join(methods) or None)
    meta = {"judge": judge_label, "mode": judge.mode, "evaluator": judge.spec.name,
            "evaluator_path": str(judge.spec.path), "evaluator_sha256": judge.spec.fingerprint,
            "temperature": judge.temperature, "max_tokens": judge.max_tokens, "evaluate_times": evaluate_times,
            "group": group, "model": model, "method": method, "converted": str(converted_path),
            "queries": len(run.entries), "requests": run.requests, "cache_hits": run.cache_hits,
            "judge_errors": run.errors, "malformed_replies": judge.malformed, "seconds": round(time.time() - started, 2),
            **(meta_extra or {})}
    if cache.unwritten:  # verdicts the cache file could not take (a full disk): the labels hold them, a rerun asks again
        meta["cache_unwritten"] = cache.unwritten
    label_file = write_label_files(out_dir, group, model, run.entries, meta)
    labels = run.labels()
    common = {"method": method, "judge": judge_label, "source": str(label_file)}
    rows = [ScoreRow(model, group, sopr(labels, evaluate_times=evaluate_times), **common)]
    if test_ids is not None:
        rows.append(ScoreRow(model, group, sopr(labels, mode=STRICT, evaluate_times=evaluate_times,
                                                test_ids=test_ids), **common))
    score_file = None
    if not run.errors or score_anyway:
        score_file = write_score_file(Path(out_dir) / f"scores_{group}_{model}.json", rows)
    return JudgeOutcome(run, rows, label_file, score_file)


def fac_file(converted_path: str | Path, client, out_dir: str | Path, *, group: str, model: str,
             test_ids_dir: str | Path | None = None, unwrap_finish: bool = False,
             concurrency: int = 4, score_anyway: bool = False) -> tuple[FacRun, ScoreRow, Path]:
    """FAC of one converted file over the test ids (all converted ids without an id folder). The records are
    always written; the score file only when every judgement has a verdict, or with ``score_anyway``."""
    converted = read_converted(converted_path)
    ids = load_test_ids(test_ids_dir, group)
    if test_ids_dir is not None and ids is None:
        raise InputError(f"no test id file for {group}", path=Path(test_ids_dir) / f"{group}.json")
    run = judge_fac(converted, client, ids, unwrap_finish=unwrap_finish, concurrency=concurrency)
    score = run.score()
    if unwrap_finish:
        score.mode = "strict"
    payload = {"judge": client.name, "group": group, "model": model, "unwrap_finish": unwrap_finish,
               "missing": run.missing, "records": run.records}
    out_dir = Path(out_dir)
    write_text_atomic(out_dir / f"fac_{group}_{model}.json", json.dumps(payload, ensure_ascii=False, indent=2))
    row = ScoreRow(model, group, score, judge=client.name, source=str(converted_path))
    if not run.errors or score_anyway:
        write_score_file(out_dir / f"scores_fac_{group}_{model}.json", [row])
    return run, row, out_dir / f"fac_{group}_{model}.json"
