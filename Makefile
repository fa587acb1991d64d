# The project's two set-up commands: `make run` and `make test` (see README.md).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test tools clean bench soak lint

$(STAMP): pyproject.toml setup.py multilang/_speedups.c multilang/_json_values.c | tools
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test,spark,fast,kafka]' --config-settings editable_mode=compat
	touch $@

# Node and jq come from the machine (the Node and bash components need them); npm and shellcheck
# are for `make lint` (TypeScript comes from npm); Graphviz's `dot` renders
# `python -m host graph --format svg|png`; Chromium and its driver run the web UI's end-to-end
# test (tests/e2e/test_web_ui.py); gcc and the Python headers build the optional C decoder
# (setup.py), so they come before the install. ZooKeeper (its server jar, run as a plain process
# by tests/support/zookeeper.py) is for the storm-kafka spout's tests. Ruby runs Storm's storm.rb
# in tests/integration/test_batch_compat.py. util-linux's setpriv gives the processes the Spark
# driver starts from its threads their parent-death signal (docs/architecture.md, "Starting a
# process").
tools:
	@missing=""; \
	command -v gcc >/dev/null 2>&1 || missing="$$missing gcc"; \
	$(PYTHON) -c "import os, sys, sysconfig; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()['include'], 'Python.h')))" || missing="$$missing python3-dev"; \
	command -v node >/dev/null 2>&1 || missing="$$missing nodejs"; \
	command -v npm >/dev/null 2>&1 || missing="$$missing npm"; \
	command -v shellcheck >/dev/null 2>&1 || missing="$$missing shellcheck"; \
	command -v jq >/dev/null 2>&1 || missing="$$missing jq"; \
	command -v setpriv >/dev/null 2>&1 || missing="$$missing util-linux"; \
	command -v ruby >/dev/null 2>&1 || missing="$$missing ruby"; \
	command -v dot >/dev/null 2>&1 || missing="$$missing graphviz"; \
	command -v chromium >/dev/null 2>&1 || missing="$$missing chromium"; \
	command -v chromedriver >/dev/null 2>&1 || missing="$$missing chromium-driver"; \
	command -v java >/dev/null 2>&1 || missing="$$missing openjdk-17-jre-headless"; \
	[ -f /usr/share/java/zookeeper.jar ] || missing="$$missing zookeeper"; \
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

# The unit and conformance tiers only (tests/conftest.py marks every test with its tier), in
# under a minute: the loop to run while changing code; `make test` before committing.
.PHONY: test-fast
test-fast: $(STAMP) tools
	$(PY) -m pytest -m "unit or conformance"

# Random faults against a running topology for SOAK_SECONDS (default 600), then the invariant
# check, restarts, and the host's memory and file descriptors at start and end.
soak: $(STAMP) tools
	$(PY) -m tests.chaos.soak

# Every benchmark (python -m benchmarks) in under 15 min; `make bench BENCH_ARGS=--quick` in under 2
bench: $(STAMP) tools
	$(PY) -m pip install --quiet -e '.[test,spark,fast,bench]' --config-settings editable_mode=compat
	$(PY) -m benchmarks $(BENCH_ARGS)

# Static checks, each run even when an earlier one fails: ruff (lint rules and formatting), mypy
# (settings in pyproject.toml), shellcheck on every bash file we ship or run (.ci/run too),
# `node --check` on every JS file, and the Node client's declarations
# (multilang/node/multilang/index.d.ts) type-checked with what tests/typescript/client_usage.ts
# does with them. The tools: the [lint] extra, and TypeScript from npm into the venv (git-ignored
# like the rest of it). SC1090 is off: components source the bash client as "$MULTILANG_SH", a
# path the host sets at run time (multilang/paths.py), which shellcheck cannot follow.
LINT_STAMP := $(VENV)/.lint-installed
TYPESCRIPT := typescript@5.9.3
SHIPPED := multilang components examples benchmarks tests host

$(LINT_STAMP): $(STAMP) pyproject.toml
	$(PY) -m pip install --quiet -e '.[test,spark,fast,lint]' --config-settings editable_mode=compat
	npm install --silent --no-audit --no-fund --prefix $(VENV)/node $(TYPESCRIPT)
	touch $@

lint: $(LINT_STAMP) tools
	@failed=""; \
	check() { name=$$1; shift; echo "== $$name"; "$$@" || failed="$$failed $$name"; }; \
	check "ruff check" $(VENV)/bin/ruff check .; \
	check "ruff format" $(VENV)/bin/ruff format --check .; \
	check mypy $(VENV)/bin/mypy; \
	check shellcheck shellcheck --exclude=SC1090 .ci/run \
	  $$(find $(SHIPPED) -name '*.sh' -not -path '*/node_modules/*' | sort); \
	check "node --check" sh -c 'rc=0; for js; do node --check "$$js" || rc=1; done; exit $$rc' - \
	  $$(find $(SHIPPED) -name '*.js' -not -path '*/node_modules/*' | sort); \
	check tsc $(VENV)/node/node_modules/.bin/tsc -p tests/typescript; \
	if [ -n "$$failed" ]; then echo "make lint: failed:$$failed"; exit 1; fi; \
	echo "make lint: all checks passed"

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis build multilang/_speedups*.so
