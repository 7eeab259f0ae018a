# Setats: build, test, demo and benchmarks. `make help` lists the targets.
# Suites whose code does not exist yet are skipped with a message, so every target works at every commit.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

GO        ?= go
MVN       ?= mvn
MVN_FLAGS ?= -B -ntp
# A test JVM that hangs fails the build after this many seconds instead of blocking CI.
MVN_TEST_TIMEOUT ?= 1200
MVN_VERIFY = $(MVN) $(MVN_FLAGS) -Dsurefire.timeout=$(MVN_TEST_TIMEOUT) -Dfailsafe.timeout=$(MVN_TEST_TIMEOUT)
PYTHON    ?= python3

GATEWAY_BIN   := bin/setats
CONNECTOR_POM := connector-java/pom.xml
CONNECTOR_JAR := connector-java/target/setats-flink-connector-0.1.0.jar
RUNNER_POM    := e2e/sql-runner/pom.xml
RUNNER_JAR    := e2e/sql-runner/target/setats-sql-runner-0.1.0.jar
PROTOC_GEN_GO_VERSION := v1.36.12

say = @printf '\n== %s\n' $(1)

.PHONY: help deps build build-gateway build-connector build-runner test test-go test-alerts test-fuzz fuzz test-java test-e2e \
        demo bench bench-flink proto clean

help:
	@echo 'make demo    build gateway + connector, start the gateway, run the seed write and CDC jobs in Flink, print the changelog'
	@echo 'make test    installs missing Debian/Python packages, then go build/vet/test, connector mvn verify (unit + ITCases), SQL runner tests, end-to-end (pyarrow, pgbench, demo)'
	@echo 'make fuzz    Go fuzz targets over hostile client input, FUZZTIME (40s) each'
	@echo 'make bench   Go benchmarks (store, gateway)'
	@echo 'make bench-flink  Setats vs Apache Paimon through Flink, 3 A/B runs (docs/bench-flink.md; BENCH_ROWS=100000 BENCH_RUNS=1 for a quick check)'
	@echo 'make build   bin/setats, the connector jar and the SQL runner jar'
	@echo 'make deps    install what a new machine lacks (Debian packages, Python packages)'
	@echo 'make proto   regenerate proto/setatspb from proto/setats.proto'
	@echo 'make clean   remove build outputs and demo data'

# Installs what the tests need and a machine lacks; quick when everything is there.
deps:
	$(call say,"deps: Debian packages (PostgreSQL 15, pgbench, MariaDB, promtool)")
	@bash .ci/install-debian.sh
	$(call say,"deps: Python packages (e2e/requirements.txt)")
	@if $(PYTHON) -c 'import pyarrow, pytest, yaml, duckdb, chdb' 2>/dev/null; then echo "python: pyarrow, pytest, PyYAML present"; \
	else $(PYTHON) -m pip install --disable-pip-version-check -q -r e2e/requirements.txt; fi

# ---------------------------------------------------------------------------------------------
# build

build: build-gateway build-connector build-runner

build-gateway:
	$(call say,"build gateway -> $(GATEWAY_BIN)")
	@if [ -d gateway/cmd/setats ]; then \
	  $(GO) build -o $(GATEWAY_BIN) ./gateway/cmd/setats && ls -l $(GATEWAY_BIN); \
	else echo "skip: gateway/cmd/setats does not exist yet"; fi

# The jars are file targets: rebuilt only when their sources changed (make demo twice is quick).
ifneq ($(wildcard $(CONNECTOR_POM)),)
$(CONNECTOR_JAR): $(CONNECTOR_POM) $(shell find connector-java/src -type f 2>/dev/null) proto/setats.proto
	$(call say,"build connector -> $(CONNECTOR_JAR)")
	$(MVN) $(MVN_FLAGS) -f $(CONNECTOR_POM) -DskipTests package
	@touch $@ && ls -l $@
build-connector: $(CONNECTOR_JAR)
else
build-connector:
	@echo "skip connector: $(CONNECTOR_POM) does not exist yet"
endif

$(RUNNER_JAR): $(RUNNER_POM) $(shell find e2e/sql-runner/src -type f 2>/dev/null)
	$(call say,"build SQL runner -> $(RUNNER_JAR)")
	$(MVN) $(MVN_FLAGS) -f $(RUNNER_POM) -DskipTests package
	@touch $@ && ls -l $@
build-runner: $(RUNNER_JAR)

# ---------------------------------------------------------------------------------------------
# test

test: deps test-go test-alerts test-fuzz test-java test-e2e

test-go:
	$(call say,"go build / vet / test ./...")
	$(GO) build ./...
	$(GO) vet ./...
	@log=$$(mktemp); rc=0; $(GO) test -count=1 -timeout 30m ./... 2>&1 | tee "$$log" || rc=$$?; \
	awk '/^ok /{ok++} /^FAIL\t/{f++} /no test files/{n++} END{printf "go test: %d packages ok, %d failed, %d without tests\n", ok, f, n}' "$$log"; \
	rm -f "$$log"; exit $$rc

# The binlog alert rules (deploy/prometheus): syntax and their unit test (Debian package prometheus).
test-alerts:
	$(call say,"promtool check rules / test rules deploy/prometheus")
	promtool check rules deploy/prometheus/setats-alerts.yml
	cd deploy/prometheus && promtool test rules setats-alerts_test.yml

# Go fuzz targets over hostile client input (DoPut IPC, every Flight command and action body), each
# for FUZZTIME; a crash, a hang, a Go runtime panic in an error or an allocation above the
# target's bound fails. Seed corpora: testdata/fuzz/ next to each target (go test ./... runs every
# seed of every target too). FUZZ_TARGETS lists package:target pairs; the default fuzzes the IPC
# guard and decoder, the gateway targets (DoPut and every command/action body over loopback) need
# an instrumented build of the whole gateway: make fuzz FUZZ_TARGETS="./gateway:FuzzDoPut ./gateway:FuzzRequests".
FUZZTIME ?= 40s
FUZZ_TARGETS ?= ./gateway/ipcguard:FuzzDecode
fuzz:
	$(call say,"go fuzz targets for $(FUZZTIME) each")
	@for t in $(FUZZ_TARGETS); do pkg=$${t%%:*}; fn=$${t##*:}; \
	  echo "fuzz $$pkg $$fn"; \
	  $(GO) test -run '^$$' -fuzz "^$$fn\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 100x "$$pkg" || exit 1; done
test-fuzz: fuzz

test-java: build-gateway
	$(call say,"connector: mvn verify (Surefire unit tests, Failsafe ITCases)")
	@if [ -f $(CONNECTOR_POM) ]; then \
	  $(MVN_VERIFY) -f $(CONNECTOR_POM) verify; \
	else echo "skip: $(CONNECTOR_POM) does not exist yet"; fi
	$(call say,"SQL runner: mvn verify")
	@if [ -f $(RUNNER_POM) ]; then \
	  $(MVN_VERIFY) -f $(RUNNER_POM) verify; \
	else echo "skip: $(RUNNER_POM) does not exist yet"; fi

test-e2e: build
	$(call say,"end-to-end")
	@if [ -f e2e/run.sh ]; then bash e2e/run.sh; else echo "skip: e2e/run.sh does not exist yet"; fi

# ---------------------------------------------------------------------------------------------
# demo, bench, proto

demo: build
	$(call say,"demo")
	bash e2e/demo.sh

# Every package with a Benchmark function (merge, gateway/store, gateway, e2e/gatewaytest, ...).
# BENCH=regexp narrows them, BENCH_FLAGS adds go test flags (e.g. -count 5 for benchstat).
BENCH ?= .
BENCH_FLAGS ?=
bench:
	$(call say,"Go benchmarks")
	@pkgs=$$(grep -rl --include='*_test.go' '^func Benchmark' . | xargs -r -n1 dirname | sort -u); \
	if [ -z "$$pkgs" ]; then echo "skip: no benchmarks yet"; else \
	  echo "packages: $$pkgs"; \
	  $(GO) test -run '^$$' -bench '$(BENCH)' -benchmem $(BENCH_FLAGS) $$pkgs; fi

# Setats vs Apache Paimon (changelog-producer = lookup) through Flink 1.20, one JVM per system and
# run, alternating (docs/bench-flink.md). Not part of `make test`; runs the harness's own tests (fold, workload, report) first. BENCH_ROWS, BENCH_RUNS,
# BENCH_FRESH_SECONDS, BENCH_FRESH_RATE, BENCH_DIR, BENCH_OUT change it.
BENCH_FLINK_POM := bench/flink/pom.xml
bench-flink: build-gateway build-connector
	$(call say,"bench-flink: Setats vs Paimon through Flink")
	$(GO) build -o bin/setats-loadgen ./e2e/cmd/setats-loadgen
	$(MVN) $(MVN_FLAGS) -q -f $(BENCH_FLINK_POM) package
	java -Dbench.gateway=$(abspath $(GATEWAY_BIN)) -Dbench.loadgen=$(abspath bin/setats-loadgen) \
	  -Dbench.connector=$(abspath $(CONNECTOR_JAR)) -Dbench.classes=$(abspath bench/flink/target/classes) \
	  -Dbench.classpath=$(abspath bench/flink/target/classpath.txt) \
	  -cp "bench/flink/target/classes:$$(cat bench/flink/target/classpath.txt)" io.setats.bench.flink.BenchFlink

proto:
	$(call say,"protoc -> proto/setatspb")
	@command -v protoc >/dev/null || EXTRA_DEBS=protobuf-compiler bash .ci/install-debian.sh
	@gobin="$$($(GO) env GOPATH)/bin"; \
	if ! "$$gobin/protoc-gen-go" --version 2>/dev/null | grep -qF "$(PROTOC_GEN_GO_VERSION)"; then \
	  $(GO) install google.golang.org/protobuf/cmd/protoc-gen-go@$(PROTOC_GEN_GO_VERSION); fi; \
	echo "protoc $$(protoc --version), protoc-gen-go $$("$$gobin/protoc-gen-go" --version)"; \
	PATH="$$gobin:$$PATH" protoc -I proto --go_out=. --go_opt=module=github.com/setats/setats proto/setats.proto
	@ls -l proto/setatspb

clean:
	rm -rf bin .demo e2e/.work connector-java/target e2e/sql-runner/target bench/flink/target
