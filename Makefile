# kandev — see README.md. Every target works from a clean clone.
GO      ?= go
BIN     ?= bin/kandev
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/kandev/kandev/cmd.Version=$(VERSION)
# kandev needs no cgo: SQLite is modernc.org/sqlite (pure Go), it resolves
# no host names (the net package's cgo resolver) and only a dependency
# looks up the user (os/user reads /etc/passwd without cgo). Built without
# it the binary is static and each command starts ~1 ms sooner (no dynamic
# loader, no libc; issue 14). CGO=1 builds as plain `go build` does. Tests
# keep go's default: -race needs cgo.
CGO     ?= 0

.PHONY: all build test lint bench bench-go bench-proc soak demo install clean inspector darwin

all: build

build:
	CGO_ENABLED=$(CGO) $(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/kandev

## test: everything the README promises: unit, integration (real daemon,
## kandev mcp and mock agent processes), CLI scripts and TUI tests.
## Tests run tasks in temp dirs: one that created a worktree of this
## repository (a task started in the package directory) fails the run.
## Every kandev worktree is on a kandev/* branch, so the branches tell.
REPO_TRACES = git for-each-ref --format='%(refname:short)' refs/heads/kandev/ 2>/dev/null
## The timeout is per package: core/daemon runs every integration suite,
## the trust matrix's 440 cells under bwrap and docker among them (issue
## 34), in 8 minutes on a quiet 2-CPU machine and 15 with the CPU loaded.
test: lint inspector darwin
	@before="$$($(REPO_TRACES))"; \
	$(GO) test -race -count=1 -timeout 30m ./... || exit $$?; \
	after="$$($(REPO_TRACES))"; \
	if [ "$$before" != "$$after" ]; then \
	  echo "tests left kandev/* branches (task worktrees) in this repository:"; \
	  printf '%s\n' "$$after" | grep -vxF "$$before"; exit 1; fi

## darwin: the Mac builds (Seatbelt for bwrap, no procfs) compile, so they
## never break unseen; nothing runs them here.
darwin:
	CGO_ENABLED=0 GOOS=darwin GOARCH=arm64 $(GO) build -o /dev/null ./cmd/kandev
	CGO_ENABLED=0 GOOS=darwin GOARCH=amd64 $(GO) build -o /dev/null ./cmd/kandev

STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...

## inspector: the pinned MCP Inspector CLI that mcpserve's tests run
## against a live kandev mcp. Without npm it is skipped, except in CI.
INSPECTOR := mcpserve/testdata/inspector
inspector: $(INSPECTOR)/node_modules/.package-lock.json

$(INSPECTOR)/node_modules/.package-lock.json: $(INSPECTOR)/package.json $(INSPECTOR)/package-lock.json
	@if command -v npm >/dev/null 2>&1; then \
	  cd $(INSPECTOR) && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error; \
	elif [ -n "$$CI" ]; then echo "make inspector: npm is required in CI" >&2; exit 1; \
	else echo "make inspector: npm not found; the MCP Inspector test will skip" >&2; fi

## bench: in-process Go benchmarks, then whole processes of the real
## binary against floors (bench-proc). KANDEV_BENCH_100K=1 adds 100,000
## tasks to bench-proc; BENCH_BINS=old=path,new=path compares binaries.
## bench-proc also streams (ADR 0050): bursts of 1k-64k chunks, and 50
## agents for 15 s (KANDEV_BENCH_LOAD=60s for the full minute), and times
## session start and MCP calls here and on a loopback SSH host (as root
## with /usr/sbin/sshd; else that column says why it is skipped).
bench: bench-go bench-proc

bench-go:
	$(GO) test -run '^$$' -bench . -benchmem ./...

bench-proc: build
	CGO_ENABLED=$(CGO) $(GO) run ./cmd/kandev-bench -bin $(or $(BENCH_BINS),kandev=$(BIN))

## soak (issue 39): SOAK_SESSIONS mock sessions over SOAK_HOSTS hosts (this
## machine and loopback sshds: root and /usr/sbin/sshd), SOAK_KILLS kill -9s
## of the daemon a round, rounds until SOAK_DURATION has passed; the oracle's
## table, exit non-zero on a violation. SOAK_SEED replays a run.
SOAK_SESSIONS ?= 100
SOAK_HOSTS ?= 10
SOAK_KILLS ?= 1
SOAK_DURATION ?= 0
soak: build
	$(GO) run ./cmd/kandev-bench soak -bin $(BIN) -sessions $(SOAK_SESSIONS) -hosts $(SOAK_HOSTS) -kills $(SOAK_KILLS) -duration $(SOAK_DURATION) $(if $(SOAK_SEED),-seed $(SOAK_SEED))

demo: build
	$(BIN) demo

## install: go install, then say where the binary went and whether that
## directory is on PATH.
install:
	CGO_ENABLED=$(CGO) $(GO) install -ldflags "$(LDFLAGS)" ./cmd/kandev
	@dir="$$($(GO) env GOBIN)"; [ -n "$$dir" ] || dir="$$($(GO) env GOPATH)/bin"; \
	echo "installed $$dir/kandev"; \
	case ":$$PATH:" in *":$$dir:"*) ;; *) echo "$$dir is not on PATH; add it: export PATH=\"$$dir:\$$PATH\"";; esac

clean:
	rm -rf bin
