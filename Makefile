# zkconf — see README.md. `make demo` and `make test` are the contract.
SHELL := /bin/bash
GO ?= go
BIN := bin
PKGS := ./...
# Integration tests start real ZooKeeper servers (2 cores: keep packages
# from starving each other's JVMs).
TEST_FLAGS ?= -race -count=1 -p 2 -timeout 15m
CHAOS_DURATION ?= 10m
FUZZ_TIME ?= 1m

.PHONY: all install build test test-unit lint vet fmt zookeeper demo bench chaos fuzz install clean check-leftovers

all: build

build:
	$(GO) build -o $(BIN)/ ./cmd/confpush ./cmd/confagent ./internal/cmd/zkdev

zookeeper:
	@scripts/ensure-zookeeper.sh

vet:
	$(GO) vet $(PKGS)

fmt:
	gofmt -w $$(git ls-files '*.go')

lint: vet
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

# Everything, from a fresh clone: installs ZooKeeper when missing, vets, runs
# every test (unit and integration against real ZooKeeper) with the race
# detector, then checks that no test left a ZooKeeper process behind.
test: zookeeper lint
	$(GO) test $(TEST_FLAGS) $(PKGS)
	@$(MAKE) --no-print-directory check-leftovers

check-leftovers:
	@if pgrep -f 'QuorumPeerMain .*/zk[0-9]+/zoo[.]cfg' >/dev/null; then \
		echo "ZooKeeper test servers outlived their tests:"; pgrep -af 'QuorumPeerMain .*/zk[0-9]+/zoo[.]cfg'; exit 1; fi

test-unit:
	$(GO) test -short -count=1 $(PKGS)

demo: zookeeper build
	scripts/demo.sh

bench: zookeeper
	$(GO) test -run '^$$' -bench . -benchtime 20x ./publish/...

chaos: zookeeper
	@echo "chaos suite: arrives with issue 7"; exit 1

fuzz:
	@echo "fuzz targets: arrive with issue 7"; exit 1

PREFIX ?= /usr/local
DESTDIR ?=
# Binaries, systemd units and the example agent configuration (never
# overwriting an existing /etc/confagent/confagent.yaml).
install: build
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)/etc/systemd/system $(DESTDIR)/etc/confagent
	install -m 0755 $(BIN)/confpush $(BIN)/confagent $(DESTDIR)$(PREFIX)/bin/
	install -m 0644 systemd/confagent.service systemd/confagent@.service $(DESTDIR)/etc/systemd/system/
	[ -e $(DESTDIR)/etc/confagent/confagent.yaml ] || install -m 0640 examples/agent/confagent.yaml $(DESTDIR)/etc/confagent/confagent.yaml
	install -d $(DESTDIR)$(PREFIX)/share/doc/zkconf
	install -m 0644 README.md docs/*.md $(DESTDIR)$(PREFIX)/share/doc/zkconf/

clean:
	rm -rf $(BIN)
