# The project's two set-up commands: `make run` and `make test` (see README.md).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test tools clean bench soak

$(STAMP): pyproject.toml setup.py multilang/_speedups.c | tools
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test,spark,fast]' --config-settings editable_mode=compat
	touch $@

# Node and jq come from the machine (the Node and bash components need them); Graphviz's `dot`
# renders `python -m host graph --format svg|png`; Chromium and its driver run the web UI's
# end-to-end test (tests/e2e/test_web_ui.py); gcc and the Python headers build the optional C
# decoder (setup.py), so they come before the install.
tools:
	@missing=""; \
	command -v gcc >/dev/null 2>&1 || missing="$$missing gcc"; \
	$(PYTHON) -c "import os, sys, sysconfig; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()['include'], 'Python.h')))" || missing="$$missing python3-dev"; \
	command -v node >/dev/null 2>&1 || missing="$$missing nodejs"; \
	command -v jq >/dev/null 2>&1 || missing="$$missing jq"; \
	command -v dot >/dev/null 2>&1 || missing="$$missing graphviz"; \
	command -v chromium >/dev/null 2>&1 || missing="$$missing chromium"; \
	command -v chromedriver >/dev/null 2>&1 || missing="$$missing chromium-driver"; \
	command -v java >/dev/null 2>&1 || missing="$$missing openjdk-17-jre-headless"; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing$$missing with apt-get"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	  else \
	    echo "missing:$$missing -- install them first, e.g. 'sudo apt-get install$$missing'"; exit 1; \
	  fi; \
	fi

run: $(STAMP) tools
	$(PY) -m host local examples/wordcount/topology.yaml --duration 20

test: $(STAMP) tools
	$(PY) -m pytest

# Random faults against a running topology for SOAK_SECONDS (default 600), then the invariant
# check, restarts, and the host's memory and file descriptors at start and end.
soak: $(STAMP) tools
	$(PY) -m tests.chaos.soak

# Every benchmark (python -m benchmarks) in under 15 min; `make bench BENCH_ARGS=--quick` in under 2
bench: $(STAMP) tools
	$(PY) -m pip install --quiet -e '.[test,spark,fast,bench]' --config-settings editable_mode=compat
	$(PY) -m benchmarks $(BENCH_ARGS)

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis build multilang/_speedups*.so
