# kandev — see README.md. Every target works from a clean clone.
GO      ?= go
BIN     ?= bin/kandev
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/kandev/kandev/cmd.Version=$(VERSION)

.PHONY: all build test lint bench demo install clean

all: build

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/kandev

## test: everything the README promises: unit, integration (real daemon,
## kandev mcp and mock agent processes), CLI scripts and TUI tests.
test: lint
	$(GO) test -race -count=1 ./...

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

demo: build
	$(BIN) demo

install:
	$(GO) install -ldflags "$(LDFLAGS)" ./cmd/kandev

clean:
	rm -rf bin
