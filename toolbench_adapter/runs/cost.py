"""What a run cost and how fast its model answered (issue 42): model calls, prompt and completion tokens per query,
model latency p50 / p95 (over every model call), wall time (its sessions' seconds), and money only from a price file
the user gives (``--prices FILE``; none is shipped or guessed): per model, per million input (prompt) and output
(completion) tokens. Read from a run folder's queries.jsonl (each query's latest line: what it cost now) and its
manifest's sessions, or summed over a set of trials' folders (latencies pooled). A run written before these figures
were recorded says so ("not recorded"), never 0; so does an outside agent's run, whose model calls the harness does
not see ("not seen").

A price file (YAML or JSON)::

    currency: USD            # optional: what the prices are in (default: "money")
    models:
      gpt-4o-mini: {input: 0.15, output: 0.60}
      my-served-model: {input: 0, output: 0}
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from toolbench_adapter.errors import InputError
from toolbench_adapter.files.fileio import read_json
from toolbench_adapter.files.input_files import read_yaml

from .folder import MANIFEST, QUERY_STATS, read_query_lines

PRICE_FIX = "write models: {MODEL: {input: USD_PER_MILLION, output: USD_PER_MILLION}} (docs/noise.md: Cost and latency)"
NOT_RECORDED = "not recorded"
NOT_SEEN = "not seen (an outside agent calls its own model)"


def _percentile(values, q: float) -> float | None:
    if not values:
        return None
    import numpy as np  # here, not at the top: the evaluation reads this module, a percentile needs numpy

    return float(np.percentile(values, q))


@dataclass(frozen=True)
class Price:
    input: float  # per million prompt tokens
    output: float  # per million completion tokens


@dataclass(frozen=True)
class Prices:
    path: Path
    models: dict[str, Price]
    currency: str = "money"

    def of(self, model: str | None) -> Price | None:
        """The model's price: its exact name, else the same name in another case."""
        if model is None:
            return None
        if model in self.models:
            return self.models[model]
        lowered = {name.lower(): price for name, price in self.models.items()}
        return lowered.get(model.lower())


def read_prices(path: str | Path) -> Prices:
    """A price file, every entry checked: InputError naming the file, the key and the fix."""
    path = Path(path)
    data = read_yaml(path, "price file")
    if not isinstance(data, dict) or not isinstance(data.get("models"), dict) or not data["models"]:
        raise InputError("a price file maps models to their prices", path=path, field="models", fix=PRICE_FIX)
    models = {}
    for name, entry in data["models"].items():
        where = f"models.{name}"
        if not isinstance(entry, dict) or set(entry) != {"input", "output"}:
            raise InputError("a model's price is {input: N, output: N}, per million tokens", path=path, field=where,
                             fix=PRICE_FIX)
        for key, value in entry.items():
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
                raise InputError(f"{key} must be a price of at least 0 per million tokens, got {value!r}", path=path,
                                 field=f"{where}.{key}", fix=PRICE_FIX)
        models[str(name)] = Price(float(entry["input"]), float(entry["output"]))
    currency = data.get("currency", "money")
    if not isinstance(currency, str) or not currency.strip():
        raise InputError("currency must be a word, e.g. USD", path=path, field="currency", fix="currency: USD")
    unknown = sorted(set(data) - {"models", "currency"})
    if unknown:
        raise InputError(f"unknown key {unknown[0]!r}", path=path, field=unknown[0], fix="use models and currency")
    return Prices(path, models, currency.strip())


@dataclass
class Cost:
    """One run's (or set's) cost figures; None: not recorded (a run from before they were)."""

    queries: int = 0
    model_calls: int | None = 0  # None: not seen (an outside agent calls its own model)
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    latencies: list[float] = field(default_factory=list, repr=False)
    wall_s: float | None = None
    model: str | None = None
    money: float | None = None
    currency: str | None = None
    money_note: str = "no --prices file"  # why there is no money figure

    def per_query(self, value: float | None) -> float | None:
        return None if value is None or not self.queries else value / self.queries

    @property
    def latency_p50_s(self) -> float | None:
        return _percentile(self.latencies, 50)

    @property
    def latency_p95_s(self) -> float | None:
        return _percentile(self.latencies, 95)

    def priced(self, prices: Prices | None) -> Cost:
        """With money from ``prices`` (this run's model's entry), else the reason there is none."""
        if prices is None:
            return self
        price = prices.of(self.model)
        if price is None:
            self.money_note = f"no price for model {self.model!r} in {prices.path}"
        elif self.prompt_tokens is None or self.completion_tokens is None:
            self.money_note = "tokens not recorded"
        else:
            self.money = (self.prompt_tokens * price.input + self.completion_tokens * price.output) / 1e6
            self.currency = prices.currency
        return self

    def money_text(self) -> str:
        return f"{self.money:.4f} {self.currency}" if self.money is not None else self.money_note

    def text(self) -> str:
        """One line for a report or a summary."""
        def number(value, fmt="{:.0f}"):
            return NOT_RECORDED if value is None else fmt.format(value)

        latency = (f"p50 {self.latency_p50_s:.3f} s / p95 {self.latency_p95_s:.3f} s" if self.latencies
                   else NOT_RECORDED)
        tokens = (f"{number(self.per_query(self.prompt_tokens))} prompt and "
                  f"{number(self.per_query(self.completion_tokens))} completion tokens per query"
                  if self.prompt_tokens is not None else f"tokens per query {NOT_RECORDED}")
        calls = (f"{self.model_calls} model calls ({number(self.per_query(self.model_calls), '{:.1f}')} per query)"
                 if self.model_calls is not None else f"model calls {NOT_SEEN}")
        return (f"{calls}, "
                f"{tokens}, model latency {latency}, wall {number(self.wall_s, '{:.1f}')} s, cost "
                f"{self.money_text()}")

    def csv_cells(self) -> dict[str, str]:
        """The columns a CSV carries (named with tokens, p50, p95, cost)."""
        def cell(value, fmt="{:.2f}"):
            return "" if value is None else fmt.format(value)

        return {"model calls per query": cell(self.per_query(self.model_calls)),
                "prompt tokens per query": cell(self.per_query(self.prompt_tokens), "{:.1f}"),
                "completion tokens per query": cell(self.per_query(self.completion_tokens), "{:.1f}"),
                "model latency p50 s": cell(self.latency_p50_s, "{:.4f}"),
                "model latency p95 s": cell(self.latency_p95_s, "{:.4f}"),
                "wall s": cell(self.wall_s),
                "cost": cell(self.money, "{:.6f}"),
                "cost currency": self.currency or ("" if self.money is not None else self.money_note)}


COST_COLUMNS = list(Cost().csv_cells())


def _lines_cost(lines: Iterable[dict]) -> Cost:
    lines = list(lines)
    if any("agent_outcome" in r for r in lines):  # an outside agent's: its calls counted are tool calls, not its model's
        return Cost(queries=len(lines), model_calls=None)
    cost = Cost(queries=len(lines), model_calls=sum(int(r.get("query_count") or 0) for r in lines))
    recorded = [r for r in lines if "prompt_tokens" in r]
    if lines and len(recorded) == len(lines):
        cost.prompt_tokens = sum(int(r["prompt_tokens"]) for r in recorded)
        cost.completion_tokens = sum(int(r["completion_tokens"]) for r in recorded)
    cost.latencies = [float(x) for r in lines for x in (r.get("model_latencies_s") or [])]
    return cost


def _wall(manifest: dict) -> float | None:
    seconds = [s.get("seconds") for s in manifest.get("sessions") or [] if isinstance(s, dict)
               and isinstance(s.get("seconds"), int | float)]
    return float(sum(seconds)) if seconds else None


def run_cost(run_dir: str | Path, prices: Prices | None = None) -> Cost:
    """A run folder's cost: its queries.jsonl (each query's latest line) and its manifest's sessions."""
    run_dir = Path(run_dir)
    cost = _lines_cost(read_query_lines(run_dir / QUERY_STATS))
    try:
        manifest = read_json(run_dir / MANIFEST, "run manifest")
    except InputError:
        manifest = {}
    cost.wall_s = _wall(manifest) if isinstance(manifest, dict) else None
    cost.model = manifest.get("model") if isinstance(manifest, dict) else None
    return cost.priced(prices)


def runs_cost(run_dirs: Iterable[str | Path], prices: Prices | None = None) -> Cost:
    """The cost of several run folders together (a set's trials): sums, latencies pooled."""
    parts = [run_cost(d) for d in run_dirs]
    calls = [p.model_calls for p in parts]
    total = Cost(queries=sum(p.queries for p in parts),
                 model_calls=None if None in calls else sum(calls))
    if parts and all(p.prompt_tokens is not None for p in parts):
        total.prompt_tokens = sum(p.prompt_tokens for p in parts)
        total.completion_tokens = sum(p.completion_tokens for p in parts)
    total.latencies = [x for p in parts for x in p.latencies]
    walls = [p.wall_s for p in parts if p.wall_s is not None]
    total.wall_s = sum(walls) if walls else None
    total.model = next((p.model for p in parts if p.model), None)
    return total.priced(prices)
