# Runnel. The two commands: `make demo` and `make test` (everything CI runs).
# `make help` lists the rest. Variables in CAPITALS can be set on the command
# line, e.g. `make fuzz FUZZTIME=30m` or `make bench BENCH_PKGS=./bench/...`.

# The machines start on an older Go; the module needs this one, which the go
# command fetches through the module proxy on first use.
export GOTOOLCHAIN := go1.27.3

GO ?= go
SHELL := bash
.SHELLFLAGS := -euo pipefail -c

BIN := bin
RUNNEL := $(BIN)/runnel

UNIT_TIMEOUT ?= 15m
INTEGRATION_TIMEOUT ?= 20m
FUZZTIME ?= 5m
FUZZTIME_SHORT ?= 10s
BENCH_PKGS ?= ./...
BENCHTIME ?= 200ms
DEMO_ARGS ?=
CLUSTER_DIR ?= .data/cluster
CLUSTER_PORT ?= 9092
CLUSTER_CTRL ?= 9192
CLUSTER_HTTP ?= 9644

# Unit tests are every package outside integration/ (listed in the recipe:
# make's $(shell) does not see exported variables such as GOTOOLCHAIN). The
# integration tests start brokers and drive external clients. Those of
# INTEGRATION_ALONE run after the others, on their own: integration/txn
# copies a million records under SIGKILLs and keeps both cores of a CI
# machine busy for two to three minutes, integration/streams counts a million
# records three times with instances SIGKILLed; beside them, the three-node
# cluster of integration/kgo failed (brokers fenced, "INVALID_REPLICATION_FACTOR").
INTEGRATION_PKGS = ./integration/...
INTEGRATION_ALONE = ./integration/txn ./integration/streams

.DEFAULT_GOAL := help

.PHONY: help
help: ## list the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-18s %s\n", $$1, $$2}'

.PHONY: build
build: ## compile every package and build bin/runnel
	$(GO) build ./...
	@mkdir -p $(BIN)
	$(GO) build -o $(RUNNEL) ./cmd/runnel

# The demo builds only what it runs: on a fresh machine that is the better
# part of its two minutes.
.PHONY: demo
demo: ## the retail demo on an embedded broker, with a live dashboard (DEMO_ARGS="--rate 1000 ..." passes flags)
	@mkdir -p $(BIN)
	$(GO) build -o $(RUNNEL) ./cmd/runnel
	exec $(RUNNEL) demo retail $(DEMO_ARGS)

.PHONY: cluster
cluster: build ## run a three-node cluster on 127.0.0.1 (ports 9092-9094) until Ctrl-C
	RUNNEL=$(RUNNEL) CLUSTER_DIR=$(CLUSTER_DIR) CLUSTER_PORT=$(CLUSTER_PORT) CLUSTER_CTRL=$(CLUSTER_CTRL) CLUSTER_HTTP=$(CLUSTER_HTTP) scripts/cluster.sh

.PHONY: test
TEST_STEPS := tools vet test-unit fuzz-short test-integration

# Every step runs even when an earlier one fails, so that one CI run reports
# everything; the exit status says whether all passed.
test: ## everything CI runs: tools, vet, unit tests, short fuzzing, integration tests
	@failed=; \
	for step in $(TEST_STEPS); do \
		echo "== make $$step"; \
		start=$$SECONDS; \
		$(MAKE) --no-print-directory $$step || failed="$$failed $$step"; \
		echo "== make $$step: $$((SECONDS - start))s"; \
	done; \
	if [[ -n $$failed ]]; then echo "== make test FAILED:$$failed"; exit 1; fi; \
	echo "== make test passed"

.PHONY: tools
tools: ## install the external test clients when missing (kcat, kafka-python, kafkajs)
	scripts/tools.sh

.PHONY: vet
vet: ## go vet every package
	$(GO) vet ./...

.PHONY: test-unit
test-unit: ## unit tests, with the race detector, in random order
	pkgs=$$($(GO) list ./... | grep -v '/integration/'); \
	$(GO) test -race -shuffle=on -timeout $(UNIT_TIMEOUT) $$pkgs

.PHONY: test-integration
test-integration: ## compatibility, fault and exactly-once tests with external clients and franz-go's own suite (needs `make tools`)
	alone=$$($(GO) list $(INTEGRATION_ALONE)); \
	pkgs=$$($(GO) list $(INTEGRATION_PKGS) | grep -vxF "$$alone"); \
	failed=0; \
	$(GO) test -race -shuffle=on -timeout $(INTEGRATION_TIMEOUT) $$pkgs || failed=1; \
	$(GO) test -p 1 -race -shuffle=on -timeout $(INTEGRATION_TIMEOUT) $$alone || failed=1; \
	exit $$failed

.PHONY: fuzz-short
fuzz-short: ## run every fuzz target for FUZZTIME_SHORT (10s) each
	GO=$(GO) scripts/fuzz.sh $(FUZZTIME_SHORT)

.PHONY: fuzz
fuzz: ## run every fuzz target for FUZZTIME (5m) each
	GO=$(GO) scripts/fuzz.sh $(FUZZTIME)

.PHONY: bench
bench: ## Runnel vs kfake vs the raw disk/loopback limit, broker memory over 10 GB; prints a table (bench/README.md)
	GO=$(GO) bench/run.sh

.PHONY: bench-micro
bench-micro: ## run the package micro-benchmarks of BENCH_PKGS for BENCHTIME each
	$(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) $(BENCH_PKGS)

.PHONY: clean
clean: ## remove build output and demo data
	rm -rf $(BIN) .data
