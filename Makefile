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

# lint: gofmt, vet, staticcheck and gosec, pinned, through the Go module
# proxy. gosec skips test files, and the test and benchmark harnesses
# (bench, chaos, internal/zktest, internal/faultproxy, internal/cmd,
# cmd/confchaos, cmd/confbench), which ship nowhere. Excluded rules: G304
# (file read from a variable path: zkconf reads the files its operator names,
# by design: items, configuration, credentials, state) and G404 (math/rand:
# used only to jitter retries).
lint: vet
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 $(PKGS)
	$(GO) run github.com/securego/gosec/v2/cmd/gosec@v2.22.11 -quiet -exclude=G304,G404 \
		-exclude-dir=bench -exclude-dir=chaos -exclude-dir=internal/zktest -exclude-dir=internal/faultproxy \
		-exclude-dir=internal/cmd -exclude-dir=cmd/confchaos -exclude-dir=cmd/confbench $(PKGS)

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
	$(GO) run ./cmd/confbench --runs 3 --confagents 1 --out docs/bench

chaos: zookeeper
	$(GO) build -o $(BIN)/ ./cmd/confagent ./cmd/confchaos
	$(BIN)/confchaos --duration $(CHAOS_DURATION) --confagent $(BIN)/confagent \
		--summary $(or $(CHAOS_SUMMARY),$(BIN)/chaos-summary.txt) $(if $(CHAOS_SEED),--seed $(CHAOS_SEED))

fuzz:
	@failed=; for t in \
		./manifest:FuzzDecode \
		./manifest:FuzzValidateName \
		./agent/render:FuzzDirName \
		./agent/render:FuzzTemplateHostileData \
		./agent/render:FuzzTemplateText \
		./agent/config:FuzzLoad \
		./agent/config:FuzzLoadGenerated \
		./cache:FuzzStateFile \
		./cache:FuzzStateBody; do \
		pkg=$${t%%:*}; fn=$${t##*:}; \
		echo "== $$fn ($$pkg), $(FUZZ_TIME)"; \
		$(GO) test -run '^$$' -fuzz "^$$fn\$$" -fuzztime $(FUZZ_TIME) $$pkg || failed="$$failed $$fn"; \
	done; \
	if [ -n "$$failed" ]; then echo "fuzz: FAILED:$$failed (failing inputs are in each package's testdata/fuzz/<target>/)"; exit 1; fi; \
	echo "fuzz: every target ran clean for $(FUZZ_TIME)"

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
