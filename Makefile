# gorma's make targets. `make help` lists them; every target carries a `## comment`.

SHELL     := /bin/bash
GO        ?= go
PKGS      ?= ./...
BIN       ?= bin
FUZZTIME  ?= 15s
SOAK_COUNT ?= 20
BENCHTIME ?= 1s
BENCH_OUT ?= results
BENCH_PKGS ?= ./...
# The package timeout at slack 1. go test gets -timeout 0 and each test binary keeps its
# own clock, which runs slower by the slack its tests' budgets get (testbudget.Run).
TEST_TIMEOUT ?= 18m
# stress-ci: CPU burners beside `make test` and the slack its budgets (and package timeouts) get.
STRESS_BURNERS ?= 20
STRESS_SLACK ?= 10
# stress-ci runs every test afresh (go test -count=1): a cached pass says nothing of this load.
# It runs STRESS_P test binaries at once (go test -p). Beside B burners on C cores,
# each binary gets about C/(B+P) of a CPU. So 4 binaries beside 20 burners each get a little
# less CPU than 2 would, and the suite ends in about half the time.
STRESS_P ?= 4
# The multi-host tests (agents in network namespaces, memberlist failure detection tuned
# to about a second) run after the other packages, not beside them: on 2 cores the
# parallel race-detector builds and tests of the others can delay an agent's answers
# past the suspicion timeout.
NETNS_TESTS := ^TestNetns
GOBIN_DIR := $(shell $(GO) env GOPATH)/bin
STATICCHECK ?= $(GOBIN_DIR)/staticcheck

.DEFAULT_GOAL := help
.PHONY: help run run-verbs build libmpich abi-gen test stress-ci race lint lint-fast fuzz bench compare ftbench soak clean

help: ## list the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  %-10s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

build: ## build every command (golaunch and apps/...) into bin/, static (CGO_ENABLED=0)
	@mkdir -p $(BIN)
	CGO_ENABLED=0 $(GO) build -o $(BIN)/ ./launcher/cmd/golaunch ./apps/...

# The cgo island: gorma as MPICH's libmpich.so.12 (abi/mpich, docs/abi.md). libmpi.so.12, the
# upstream name, links to it. The c-shared build also writes a header, which nothing uses.
LIB ?= lib
MPICH_INCLUDE ?= /usr/include/x86_64-linux-gnu/mpich
libmpich: ## gorma as a C library for MPICH-built programs: $(LIB)/libmpich.so.12 (cgo, a C compiler)
	@mkdir -p $(LIB)
	CGO_ENABLED=1 $(GO) build -buildmode=c-shared -ldflags=-extldflags=-Wl,-soname,libmpich.so.12 \
		-o $(LIB)/libmpich.so.12 ./abi/mpich/libmpich
	rm -f $(LIB)/libmpich.so.h
	ln -sf libmpich.so.12 $(LIB)/libmpi.so.12

abi-gen: ## regenerate abi/mpich's z* files and docs/abi.md's function list from MPICH's mpi.h
	$(GO) run ./abi/mpich/internal/mpigen -include $(MPICH_INCLUDE) -dir abi/mpich -doc docs/abi.md

run: build ## 4 ranks of apps/hello through golaunch on this host
	$(BIN)/golaunch -n 4 $(BIN)/hello

run-verbs: build ## two-process transport benchmark, a few seconds: verbsperf --quick on shm and tcp
	$(BIN)/verbsperf --provider all --quick

# Every step of test runs; the target fails at the end, naming the steps that failed.
test: ## vet + gofmt check, then every test with the race detector (well under 20 min); every step runs
	@failed=""; \
	step() { name=$$1; shift; echo "$$*"; "$$@" || failed="$$failed $$name"; }; \
	step lint-fast $(MAKE) --no-print-directory lint-fast; \
	step tests env GORMA_TEST_TIMEOUT=$(TEST_TIMEOUT) $(GO) test -race -timeout 0 -skip '$(NETNS_TESTS)' $(PKGS); \
	step netns-tests env GORMA_TEST_TIMEOUT=$(TEST_TIMEOUT) $(GO) test -race -timeout 0 -run '$(NETNS_TESTS)' ./launcher/; \
	if [ -n "$$failed" ]; then echo "make test: failed:$$failed"; exit 1; fi

stress-ci: ## `make test` beside STRESS_BURNERS (20) CPU burners, STRESS_P (4) test binaries at once, none cached, budgets scaled by GORMA_TEST_SLACK=STRESS_SLACK (10)
	@echo "stress-ci: building the race-detector tests before the burners start"; \
	out=$$($(GO) test -race -count=1 -run '^$$' $(PKGS) 2>&1) || { echo "$$out"; exit 1; }; \
	pids=""; trap 'kill $$pids 2>/dev/null' EXIT; trap 'exit 130' INT TERM; \
	for i in $$(seq $(STRESS_BURNERS)); do yes >/dev/null & pids="$$pids $$!"; done; \
	echo "stress-ci: $(STRESS_BURNERS) burners, GORMA_TEST_SLACK=$(STRESS_SLACK), go test -p $(STRESS_P) -count=1"; \
	GOFLAGS="$${GOFLAGS:+$$GOFLAGS }-p=$(STRESS_P) -count=1" GORMA_TEST_SLACK=$(STRESS_SLACK) \
		$(MAKE) --no-print-directory test

race: ## every test with the race detector, each run twice, uncached
	GORMA_TEST_TIMEOUT=30m $(GO) test -race -count=2 -timeout 0 $(PKGS)

lint-fast: ## gofmt check and go vet (the fast lint checks run by `make test`)
	@out=$$(gofmt -l .); \
	if [ -n "$$out" ]; then echo "gofmt -l reports unformatted files:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)

lint: lint-fast ## gofmt, go vet and staticcheck (installed on first use)
	@if [ ! -x "$(STATICCHECK)" ] && ! command -v staticcheck >/dev/null; then \
		echo "installing staticcheck"; $(GO) install honnef.co/go/tools/cmd/staticcheck@latest; fi
	@if [ -x "$(STATICCHECK)" ]; then $(STATICCHECK) $(PKGS); else staticcheck $(PKGS); fi

fuzz: ## run every Fuzz target for FUZZTIME (default 15s) each
	@set -e; found=0; \
	for pkg in $$($(GO) list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}}:{{.Dir}}{{end}}' $(PKGS)); do \
		dir=$${pkg#*:}; pkg=$${pkg%%:*}; \
		grep -qs '^func Fuzz' $$dir/*_test.go || continue; \
		list=$$($(GO) test -list '^Fuzz' $$pkg) || { echo "$$list"; exit 1; }; \
		for fz in $$(echo "$$list" | grep '^Fuzz'); do \
			found=$$((found+1)); \
			echo "== $$pkg $$fz ($(FUZZTIME))"; \
			$(GO) test -run '^$$' -fuzz "^$$fz$$" -fuzztime $(FUZZTIME) $$pkg; \
		done; \
	done; \
	echo "fuzz: ran $$found target(s)"

bench: build ## Benchmark* of the hot paths, then a full verbsperf run writing JSON to results/
	@mkdir -p $(BENCH_OUT)
	set -o pipefail; $(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) $(BENCH_PKGS) | tee $(BENCH_OUT)/gobench.txt
	set -o pipefail; $(BIN)/verbsperf --provider all --json=$(BENCH_OUT)/verbsperf.json | tee $(BENCH_OUT)/verbsperf.txt

soak: ## the process-kill, multi-process, multi-host and RMA tests SOAK_COUNT (20) times each (race detector), the coherence soak (30000 seeds, deep DFS) and the ulfm soak (100000 agreements, model check to 5 members)
	$(GO) test -race -count=$(SOAK_COUNT) -timeout 60m -run 'TestConformance/MultiProcess' ./transport/verbs/shm ./transport/verbs/tcp
	$(GO) test -race -count=$(SOAK_COUNT) -timeout 60m -run 'Process|Kill|Netns|Stranger' ./transport/verbs/shm ./transport/verbs/tcp ./launcher
	$(GO) test -race -count=$(SOAK_COUNT) -timeout 60m -run 'TestLaunchRMA|TestStaleReadChecker|TestCache' ./window
	$(GO) test -timeout 30m -run 'TestSim|TestExhaustive' ./window/coherence -coherence.soak
	$(GO) test -timeout 30m -run 'TestAgree|TestRevoke' ./runtime/internal/ulfm -ulfm.soak

compare: ## gorma side by side with Open MPI and MPICH (apt-get installs them and jq if missing): startup (also under srun and mpiexec.hydra), p2p, RMA, Allreduce, and net.Conn against Unix/TCP sockets and shmipc-go; writes docs/benchmarks.json, docs/charts and the page docs/benchmarks.md generated from them (under 15 min)
	@command -v mpicc.openmpi >/dev/null && command -v mpicc.mpich >/dev/null && command -v jq >/dev/null || { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y openmpi-bin libopenmpi-dev mpich libmpich-dev jq; }
	scripts/compare-all.sh

ftbench: build ## fault-tolerance figures (scripts/ftbench.sh): recovery after kill -9 of a rank (and, as root, of a network-namespace host, and a host joining), 20 jobs each, and --ft's failure-free cost; writes results/ftbench, docs/ft.json and docs/benchmarks.md
	BIN=$(BIN) scripts/ftbench.sh

clean: ## remove built binaries and benchmark output
	rm -rf $(BIN) $(BENCH_OUT)
