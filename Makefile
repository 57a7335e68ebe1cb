# Nimbus-HA. `make quickstart` runs a local cluster; `make test` runs every test.
SHELL := /bin/bash
GO    ?= go
PKG   := github.com/nimbusha/nimbus
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X $(PKG)/internal/version.Version=$(VERSION)
TOOLS := $(CURDIR)/.tools
BUF   := $(TOOLS)/node_modules/.bin/buf
export PATH := $(TOOLS)/bin:$(PATH)
# The torrent library's cgo parts, a SQLite piece-completion store and libutp,
# are left out of every build and test: the project uses neither, and building
# them from C source took most of a clean build. internal/testkit/testcluster builds the
# daemons for tests with the same tags (BuildTags).
export GOFLAGS := -tags=nosqlite,disable_libutp

# Versions of the code generators; regenerate with `make proto`.
BUF_VERSION            := 1.75.0
PROTOC_GEN_GO_VERSION  := v1.36.12
PROTOC_GEN_GRPC_VERSION := v1.6.2

TEST_TIMEOUT ?= 20m
CHAOS_DURATION ?= 5m
FUZZTIME ?= 1m

.PHONY: all build test test-deps chaos chaos-1000 fuzz verify proto lint-proto quickstart quickstart-down quickstart-restart bench bench-scale bench-workerstats bench-roll clean package

all: build

## build: static, cgo-free binaries in bin/.
build:
	CGO_ENABLED=0 $(GO) build -ldflags "$(LDFLAGS)" -o bin/ ./cmd/... ./examples/...

# Packages (deploy/nfpm.yaml, deploy/README.md): nfpm is run at its pinned
# version, outside this module's go.mod. PKG_VERSION is the tag without its
# v (0.2.0, 0.2.0+3+gabc1234), else the release line and the commit count
# (0.2.0~git1234), so every build sorts above the last.
NFPM_VERSION := v2.45.2
DIST    ?= dist
PKG_BIN ?= bin
PKG_VERSION ?= $(if $(filter v%,$(VERSION)),$(subst -,+,$(VERSION:v%=%)),$(shell \
  sed -n 's/^const Release = "\(.*\)"/\1/p' internal/version/release.go).0~git$(shell git rev-list --count HEAD 2>/dev/null || echo 0))

## package: .deb and .rpm of nimbus, supervisor and stormctl (built into PKG_BIN, as build does) into DIST (dist/), with
## the systemd units, the storm user and /etc/storm/storm.yaml (configs/storm.yaml with storm.local.dir /var/lib/storm).
package:
	CGO_ENABLED=0 $(GO) build -ldflags "$(LDFLAGS)" -o $(PKG_BIN)/ ./cmd/nimbus ./cmd/supervisor ./cmd/stormctl
	@mkdir -p $(DIST)/stage
	sed 's|^storm.local.dir:.*|storm.local.dir: "/var/lib/storm"|' configs/storm.yaml >$(DIST)/stage/storm.yaml
	@grep -qx 'storm.local.dir: "/var/lib/storm"' $(DIST)/stage/storm.yaml || { echo "package: no storm.local.dir line in configs/storm.yaml"; exit 1; }
	pids=; for p in deb rpm; do \
	  PKG_BIN=$(abspath $(PKG_BIN)) PKG_STAGE=$(abspath $(DIST)/stage) PKG_VERSION='$(PKG_VERSION)' PKG_ARCH=$$($(GO) env GOARCH) \
	    $(GO) run github.com/goreleaser/nfpm/v2/cmd/nfpm@$(NFPM_VERSION) package --config deploy/nfpm.yaml --packager $$p --target $(DIST)/ & \
	  pids="$$pids $$!"; \
	done; for pid in $$pids; do wait $$pid || exit 1; done

# Integration tests written without security that run again with it on
# (NIMBUS_TEST_SECURITY=on: mutual TLS, authorization, ZooKeeper ACLs): the
# submit, replication, failover, kill and worker lifecycles. Tests that write
# to ZooKeeper as an outsider, or need what security refuses, are not here.
SECURE_TESTS := ^(TestSubmitReplicates|TestReplicationWaitTimesOut|TestJoiningNimbus|TestFailoverGoesOnly|TestWipedLeader|TestNimbusWithoutCode|TestBadSubmissions|TestAlteredReplica|TestActivateRightAfterKill|TestThreeNimbuses|TestSIGTERMLeader|TestRestartedNimbus|TestWorkersRunWithTheirEnvironment|TestSupervisorCrashMoves|TestCrashedWorkerIsRestarted|TestRebalanceTwoToFour|TestFailingWorkerCommand|TestStormAPI|TestSIGKILLedLeaderIsDeposed|TestRestartedLeaderLeadsAtOnce)

## test: installs what the tests need (ZooKeeper, a JRE) and runs them all with -race (the chaos
## run for 60 s), the lifecycle integration tests again with security on, then every fuzz target briefly.
test: test-deps
	$(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) ./...
	NIMBUS_TEST_SECURITY=on $(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) -run '$(SECURE_TESTS)' ./integration
	cd deploy/k8s && $(GO) test -count=1 ./...
	@scripts/fuzz.sh 3s

## chaos: the chaos run for CHAOS_DURATION (5m); CHAOS_SEED=<seed> replays a run's faults.
chaos: test-deps
	CHAOS_DURATION=$(CHAOS_DURATION) $(GO) test -count=1 -run '^TestChaos$$' -v -timeout 0 ./integration/chaos

## chaos-1000: the chaos run until 1,000 faults, one every 1 to 3 s (about 90 min); summary.md (faults by kind, operations checked, recovery p50/p99, RSS and goroutines) in CHAOS_DIR.
chaos-1000: test-deps
	CHAOS_FAULTS=1000 CHAOS_FAULT_EVERY=2s CHAOS_DIR=$(or $(CHAOS_DIR),/tmp/nimbus-chaos-1000) $(GO) test -count=1 -run '^TestChaos$$' -v -timeout 0 ./integration/chaos

## fuzz: every fuzz target for FUZZTIME (1m) each.
fuzz:
	@scripts/fuzz.sh $(FUZZTIME)

test-deps:
	@scripts/install-test-deps.sh

## verify: formatting, vet, tidy go.mod, generated code in sync, buf lint.
verify: $(BUF)
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	@cp go.mod /tmp/nimbus-go.mod.bak; cp go.sum /tmp/nimbus-go.sum.bak; \
	  $(GO) mod tidy; \
	  if ! git diff --quiet -- go.mod go.sum; then echo "go mod tidy changed go.mod/go.sum"; git diff -- go.mod go.sum; \
	    cp /tmp/nimbus-go.mod.bak go.mod; cp /tmp/nimbus-go.sum.bak go.sum; exit 1; fi
	$(BUF) lint
	@$(MAKE) --no-print-directory proto
	@if ! git diff --quiet -- proto; then echo "generated code out of sync: run make proto and commit"; git diff --stat -- proto; exit 1; fi
	@echo verify: ok

## proto: regenerates the Go code beside the .proto files.
proto: $(BUF) $(TOOLS)/bin/protoc-gen-go $(TOOLS)/bin/protoc-gen-go-grpc
	$(BUF) generate

$(BUF):
	@mkdir -p $(TOOLS)
	cd $(TOOLS) && npm install --silent --no-audit --no-fund @bufbuild/buf@$(BUF_VERSION) >/dev/null

$(TOOLS)/bin/protoc-gen-go:
	GOBIN=$(TOOLS)/bin $(GO) install google.golang.org/protobuf/cmd/protoc-gen-go@$(PROTOC_GEN_GO_VERSION)

$(TOOLS)/bin/protoc-gen-go-grpc:
	GOBIN=$(TOOLS)/bin $(GO) install google.golang.org/grpc/cmd/protoc-gen-go-grpc@$(PROTOC_GEN_GRPC_VERSION)

## quickstart: a local cluster on loopback (ZooKeeper, 3 nimbuses, 2 supervisors) with security on (a throwaway
## CA, mutual TLS, ZooKeeper digest ACLs), the example topology submitted, then the cluster summary. It installs
## only ZooKeeper and a Java runtime, if missing.
quickstart: build
	@scripts/install-test-deps.sh quickstart
	@scripts/quickstart.sh up

quickstart-down:
	@scripts/quickstart.sh down

## quickstart-restart: stop one quickstart daemon with SIGTERM and start it again as itself (DAEMON=nimbus-1..3 or supervisor-1..2).
quickstart-restart: build
	@scripts/quickstart.sh restart "$(DAEMON)"

## bench: every benchmark (failover, submit, schedule, distribution, scale, security off and on); results go to bench/RESULTS.md.
bench: test-deps build
	$(GO) test ./bench -run "^$$" -bench "Failover|Submit$$" -benchtime 1x -timeout 30m -args -trials 20 -submit-trials 10 -reassign-trials 5
	$(GO) test ./bench -run "^$$" -bench SubmitHDFS -benchtime 1x -timeout 30m -args -submit-trials 5
	$(GO) test ./bench -run "^$$" -bench Schedule -benchtime 20x -benchmem
	$(GO) test ./bench -run "^$$" -bench Distribute -benchtime 1x -timeout 40m -args -distribute-trials 3
	@$(MAKE) --no-print-directory bench-scale
	$(GO) test ./bench -run "^$$" -bench Security -benchtime 1x -timeout 30m -args -security-rounds 3 -security-read-secs 5 -security-submit-trials 20
	@$(MAKE) --no-print-directory bench-workerstats

## bench-scale: the scale benchmark at 1,000, 2,000 and 5,000 supervisors and topologies, each read row in 3 rounds (about 40 min); writes a table per size and how each cost grows into bench/RESULTS.md.
bench-scale: test-deps build
	$(GO) test ./bench -run "^$$" -bench Scale -benchtime 1x -timeout 90m -args -scale-sizes 1000,2000,5000 -scale-results bench/RESULTS.md

## bench-workerstats: workers' metrics at 1,000 supervisors and 1,000 topologies, metrics off then on, then on at the heartbeat's budget (about 11 min); prints the tables of bench/RESULTS.md's "Worker metrics at scale".
bench-workerstats: test-deps build
	$(GO) test ./bench -run "^$$" -bench WorkerStats -benchtime 1x -timeout 30m
	$(GO) test ./bench -run "^$$" -bench WorkerStats -benchtime 1x -timeout 30m -args -workerstats-extra-streams 38

## bench-roll: TestRoll, a rolling upgrade under load (0.1 → this tree → itself → back to 0.1, one daemon at a time); the daemons' logs and
## roll.md (per pass: time, failed calls, SDK retries and redirects, worker restarts, leader changes, leaderless_ms) in ROLL_DIR (/tmp/nimbus-roll).
bench-roll: test-deps
	@dir=$(or $(ROLL_DIR),/tmp/nimbus-roll); mkdir -p $$dir; \
	  ROLL_DIR=$$dir $(GO) test -count=1 -run '^TestRoll$$' -v -timeout 15m ./integration/chaos; rc=$$?; \
	  echo; cat "$$(ls -td $$dir/roll-* | head -1)/roll.md"; exit $$rc

clean:
	rm -rf bin dist .quickstart
