"""What each make target runs, built from the make variables as data (runners/cli/make_front.py `run TARGET`).

The Makefile exports every variable into its recipes' environment; a recipe is one line, `make_front.py run
TARGET`, and this module turns the values into the argv of the command (tba, a benchmark) that is then executed
directly, never through a shell. So no value is parsed by a shell: `RUN='$(touch F)'`, backticks, `;`, `|` or a
quote reach the command as the characters they are. A value that cannot be used as its variable says (exit 2, naming the
variable and the fix): a run's name that is not one folder name (`RUN='a b'`), a list word that would read as a
flag, *_ARGS that do not split as shell words. Flags take their values as ``--flag=VALUE`` (a value starting with
"-" is not read as another flag), a path given as an argument is written ``./-x`` when it starts with "-".

Standard library only, like make_front.py: it runs with the system python3 before `make install` has made .venv.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

SAMPLE_TOOLS = "data/sample/toolenv/tools"
FOLDER_NAME = re.compile(r"[A-Za-z0-9._@+=-]+")  # tba's safe names (runners/sweep/spec.py safe_name)


class Refused(Exception):
    """A variable whose value cannot be used as it is: exit 2 naming it."""

    def __init__(self, name: str, value: str, problem: str, fix: str):
        super().__init__(f"{name}={value!r}: {problem}")
        self.name, self.value, self.problem, self.fix = name, value, problem, fix


@dataclass
class Command:
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)  # set for this command only (e.g. TBA_E2E_VLLM)

    def text(self) -> str:
        """As a shell would take it (what `make -n` prints): ``NAME=value`` assignments, then the argv, quoted."""
        return " ".join([*(f"{k}={shlex.quote(v)}" for k, v in self.env.items()), shlex.join(self.argv)])


def run_name(backend: str, method: str, constrain: str = "", on_invalid: str = "", trials: str = "") -> str:
    """make eval's run folder: eval-BACKEND-METHOD (its "@" dropped), -trialsK unless K is empty or 1 (a set of
    trials is a folder of its own kind), then a setting that is not upstream's in the words its leaderboard row
    uses (structured/describe.py row_suffix): @constrain-C unless C is empty or off, @POLICY (":" as "-") unless the
    on-invalid policy is empty or observe; e.g. eval-hf-CoT1@constrain-schema, eval-openai-chat-CoT1-trials5. The
    folder and the row have one name."""
    constrain, on_invalid, trials = constrain.strip(), on_invalid.strip(), trials.strip()
    name = f"eval-{backend.strip()}-{method.strip().replace('@', '')}"
    if trials and trials != "1":
        name += f"-trials{trials}"
    if constrain and constrain != "off":
        name += f"@constrain-{constrain}"
    if on_invalid and on_invalid != "observe":
        name += "@" + on_invalid.replace(":", "-")
    return name


class Values:
    """The variables' values (the recipe's environment), read through checks that name the variable; ``read``
    records every name asked for (the variables a target reads: tests walk them)."""

    def __init__(self, environ: Mapping[str, str]):
        self.environ = environ
        self.read: list[str] = []

    def text(self, name: str) -> str:
        if name not in self.read:
            self.read.append(name)
        return self.environ.get(name, "")

    def derived(self, name: str, default: Callable[[], str]) -> str:
        """The value, or when empty the default the Makefile documents for it (computed here, not by a shell)."""
        return self.text(name) or default()

    def folder_name(self, name: str, value: str | None = None) -> str:
        value = self.text(name) if value is None else value
        if not FOLDER_NAME.fullmatch(value) or value.strip(".") == "":
            raise Refused(name, value, "names one folder (a run's or a sweep's): letters, digits and . _ @ + = - "
                          "only, no spaces", f"write e.g. {name}=my-run")
        return value

    def words(self, name: str) -> list[str]:
        """A list of names, separated by spaces (GROUPS="G1_instruction G1_tool"); none may start with "-"."""
        words = self.text(name).split()
        for word in words:
            if word.startswith("-"):
                raise Refused(name, self.text(name), f"the word {word!r} would be read as a flag",
                              f"list names separated by spaces, e.g. {name}=\"a b\"")
        return words

    def paths(self, name: str) -> list[str]:
        """A list of paths, separated by spaces; one starting with "-" is given as ./-x."""
        return [argument_path(word) for word in self.text(name).split()]

    def arguments(self, name: str) -> list[str]:
        """More flags for the command (BENCH_ARGS="--queries 32"): split as a shell splits words, quotes honoured,
        nothing run or expanded."""
        try:
            return shlex.split(self.text(name))
        except ValueError as exc:
            raise Refused(name, self.text(name), f"does not split into words ({exc})",
                          f"close the quote, or leave it out: {name}=\"--flag value\"") from None

    def flag(self, flag: str, name: str) -> list[str]:
        """``--flag=VALUE`` when the variable is set, else nothing."""
        value = self.text(name)
        return [f"{flag}={value}"] if value else []


def argument_path(path: str) -> str:
    return f"./{path}" if path.startswith("-") else path


# ---- what the targets share ----------------------------------------------------------------------------------------

def bin_path(v: Values, program: str) -> str:
    return os.path.join(v.text("VENV") or ".venv", "bin", program)


def tba(v: Values, *arguments: str) -> list[str]:
    return [bin_path(v, "tba"), *arguments]


def eval_run(v: Values) -> str:
    """RUN, or make eval's default name from the variables that make the run."""
    if v.text("RUN"):
        return v.folder_name("RUN")
    name = run_name(v.text("BACKEND"), v.text("METHOD"), v.text("CONSTRAIN"), v.text("ON_INVALID"), v.text("TRIALS"))
    if not FOLDER_NAME.fullmatch(name):
        raise Refused("RUN", name, "the run's name, made of BACKEND, METHOD, CONSTRAIN, ON_INVALID and TRIALS, is not one "
                      "folder name (letters, digits and . _ @ + = - only)",
                      "give the run a name of its own: RUN=my-run (or correct the variable that is not a name)")
    return name


def run_flags(v: Values) -> list[str]:
    """The flags a run takes from the eval's variables (eval, compare-parsers-live and compare-structured share
    them); --config= given empty says "no config file" (a sweep spec's own base config is then left out too)."""
    flags = [f"--backend={v.text('BACKEND')}", f"--method={v.text('METHOD')}", *v.flag("--dialect", "DIALECT"),
             f"--server={v.text('SERVER')}", f"--concurrency={v.text('CONCURRENCY')}", f"--config={v.text('CONFIG')}",
             *v.flag("--model", "MODEL"), *v.flag("--base-url", "BASE_URL")]
    flags += v.flag("--stb-root", "STB") or [f"--tool-root={SAMPLE_TOOLS}"]
    groups = v.words("GROUPS")
    return flags + (["--groups", *groups] if groups else [])


def struct_flags(v: Values) -> list[str]:
    return [*v.flag("--constrain", "CONSTRAIN"), *v.flag("--on-invalid", "ON_INVALID")]


def judge_flags(v: Values) -> list[str]:
    return [f"--judge-backend={v.text('JUDGE_BACKEND')}", f"--evaluate-times={v.text('EVAL_TIMES')}",
            *v.flag("--judge", "JUDGE"), *v.flag("--judge-model", "JUDGE_MODEL"), *v.flag("--judge-url", "JUDGE_URL")]


def bench(script: str, *fixed: str) -> Callable[[Values], list[Command]]:
    def recipe(v: Values) -> list[Command]:
        return [Command([bin_path(v, "python"), f"benchmarks/{script}", *fixed, *v.arguments("BENCH_ARGS")])]
    return recipe


# ---- the targets ---------------------------------------------------------------------------------------------------

def eval_target(v: Values) -> list[Command]:
    trials = v.text("TRIALS")
    return [Command(tba(v, "eval", f"--name={eval_run(v)}", *run_flags(v), *struct_flags(v),
                        *v.flag("--parser", "PARSER"), *judge_flags(v),
                        *([f"--trials={trials}"] if trials.strip() not in ("", "1") else [])))]


def compare_parsers(v: Values) -> list[Command]:
    def last_eval() -> str:  # the last `make eval` run's outputs when there is one, else the shipped corpus
        folder = os.path.join("results", "runs", eval_run(v))
        return folder if os.path.isfile(os.path.join(folder, "manifest.json")) else v.text("PARSER_CORPUS")
    inputs = v.paths("PARSER_INPUT") or [argument_path(last_eval())]  # given: paths separated by spaces
    return [Command(tba(v, "compare-parsers", "--input", *inputs,
                        f"--out={v.text('PARSER_OUT')}"))]


def compare_parsers_live(v: Values) -> list[Command]:
    name = v.folder_name("LIVE_RUN")
    parsers = v.text("LIVE_PARSERS")
    return [Command(tba(v, "sweep", "runners/sweeps/compare-parsers-live.yaml", f"--name={name}",
                        f"--axis=parser={parsers}", *run_flags(v), *struct_flags(v), *judge_flags(v))),
            Command(tba(v, "compare-parsers", "--runs", f"results/sweeps/{name}", f"--out={v.text('LIVE_OUT')}"))]


def compare_structured(v: Values) -> list[Command]:
    name = v.folder_name("STRUCT_RUN")
    cells = v.words("STRUCT_CELLS")
    # no --constrain / --on-invalid: they are this sweep's axes
    return [Command(tba(v, "sweep", "runners/sweeps/compare-structured.yaml", f"--name={name}",
                        *(["--cells", *cells] if cells else []), *run_flags(v), *judge_flags(v))),
            Command(tba(v, "compare-runs", "--runs", f"results/sweeps/{name}", f"--out={v.text('STRUCT_OUT')}"))]


def report(v: Values) -> list[Command]:
    run = v.derived("REPORT_RUN", lambda: os.path.join("results", "runs", eval_run(v)))
    out = v.derived("REPORT_OUT", lambda: os.path.join(run, "report.html"))
    compare = v.paths("COMPARE")
    if not os.path.isdir(run):
        raise Refused("REPORT_RUN", run, "run folder not found",
                      "run `make eval` first (with the same BACKEND, METHOD or RUN), or REPORT_RUN=DIR: a folder "
                      "written by `tba run`")
    return [Command(tba(v, "report", argument_path(run), *(["--compare", *compare] if compare else []),
                        f"--out={out}"))]


def screenshot(v: Values) -> list[Command]:
    """README's picture: the report of the eval's run (make eval ran first: the rule's prerequisite), then headless
    Chromium's first screen of it."""
    report_command = report(v)[0]
    out = next(a for a in report_command.argv if a.startswith("--out=")).removeprefix("--out=")
    return [report_command, Command([bin_path(v, "python"), "docs_build/screenshot.py", argument_path(out),
                                     f"--out={v.text('SCREENSHOT')}"])]


def e2e(v: Values, *engine: str) -> list[Command]:
    return [Command([bin_path(v, "python"), "-m", "runners.serving.e2e", *engine,
                     f"--profile={v.text('E2E_PROFILE')}", *v.flag("--base-url", "BASE_URL"),
                     *v.flag("--model", "MODEL"), *v.flag("--stb-root", "STB"), *v.arguments("E2E_ARGS")])]


RECIPES: dict[str, Callable[[Values], list[Command]]] = {
    "test": lambda v: [Command([bin_path(v, "python"), "-m", "pytest", "-q"],
                               env={"TBA_E2E_VLLM": v.text("E2E_VLLM")})],
    "eval": eval_target,
    "reproduce": lambda v: [Command(tba(v, "reproduce", f"--stb-root={v.text('STB_ROOT')}",
                                        "--published=stb-gpt-cache-sopr", "--published=stb-gpt-cache-sowr"))],
    "serve": lambda v: [Command(tba(v, "serve", f"--port={v.text('PORT')}", f"--cache={v.text('CACHE')}",
                                    f"--simulator={v.text('SIMULATOR')}", *v.flag("--stb-root", "STB")))],
    "compare-parsers": compare_parsers,
    "compare-parsers-live": compare_parsers_live,
    "compare-structured": compare_structured,
    "sweep": lambda v: [Command(tba(v, "sweep", argument_path(v.text("SPEC")), *v.arguments("SWEEP_ARGS")))],
    "report": report,
    "screenshot": screenshot,
    "docs": lambda v: [Command([bin_path(v, "mkdocs"), "build", "--strict", "--quiet"],
                               env={"NO_MKDOCS_2_WARNING": "1"})],
    "doctor": lambda v: [Command(tba(v, "doctor", *v.flag("--stb-root", "STB"), f"--cache={v.text('CACHE')}",
                                     f"--simulator={v.text('SIMULATOR')}", *v.flag("--judge-url", "JUDGE_URL"),
                                     *v.flag("--judge-model", "JUDGE_MODEL"), *v.arguments("DOCTOR_ARGS")))],
    "e2e": e2e,
    "e2e-light": lambda v: e2e(v, "--engine=hf"),
    "bench-runner": bench("bench_runner.py"),
    "bench-server": bench("bench_server.py"),
    "profile-server": bench("profile_server.py"),
    "bench-http": bench("bench_http.py"),
    "profile-runner": bench("profile_runner.py"),
    "bench-fanout": bench("bench_fanout.py"),
    "bench-sweep": bench("bench_sweep.py"),
    "bench-trials": bench("bench_trials.py"),
    "bench-parsers": lambda v: bench("bench_parsers.py", f"--corpus={v.text('PARSER_CORPUS')}")(v),
    "bench-parsers-adversarial": bench("bench_parsers.py", "--adversarial"),
    "bench-hf": bench("bench_hf_backend.py"),
    "bench-report": bench("bench_report.py"),
    "bench-engine": bench("bench_engine.py"),
    "bench-published": bench("bench_published.py"),
}


def derived_defaults(values: Mapping[str, str]) -> dict[str, str]:
    """The values with RUN, PARSER_INPUT, REPORT_RUN and REPORT_OUT filled in as the recipes fill them when empty
    (`make help` shows them so); a value that is refused is shown as it is."""
    filled = dict(values)
    v = Values(values)
    for name, compute in (("RUN", lambda: eval_run(v)),
                          ("PARSER_INPUT", lambda: " ".join(compare_parsers(v)[0].argv[3:-1])),
                          ("REPORT_RUN", lambda: os.path.join("results", "runs", eval_run(v))),
                          ("REPORT_OUT", lambda: os.path.join(filled["REPORT_RUN"], "report.html"))):
        if not filled.get(name):
            try:
                filled[name] = compute()
            except Refused:
                pass
    return filled
