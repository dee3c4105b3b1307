# zkconf — see README.md. `make demo` and `make test` are the contract.
SHELL := /bin/bash
GO ?= go
BIN := bin
PKGS := ./...
# The benchmark and chaos harnesses (bench, chaos, confbench, confchaos) are
# their own Go module, so the library's go.mod does not carry their plotting
# dependencies. Every target that builds, vets, lints or tests the code
# covers both modules.
TOOLS := tools
# The oldest Go release the library supports (README.md, "Supported Go
# versions"): go.mod's go directive must say it, and check-go-min vets the
# module, tests included, with exactly that toolchain.
GO_MIN := 1.25.0
# Integration tests start real ZooKeeper servers (2 cores: keep packages
# from starving each other's JVMs).
# -p 3 on 2 cores: the integration tests spend much of their time waiting
# on ZooKeeper (fsyncs, session timeouts, watches), so a third package
# overlaps those waits. The timeout bounds a hang, not the speed: on a
# machine far busier than two CPU hogs (load 29) the cache package alone
# took over 15 minutes.
TEST_FLAGS ?= -race -count=1 -p 3 -timeout 25m
# go test starts packages in the order its command line names them, and
# ./... is alphabetical: the longest packages (packaging ~340 s, cache
# ~320 s under two CPU hogs) started last and ran alone at the end. Naming
# the long poles first (longest first, as measured in fresh-clone runs)
# lets the short packages fill the slots beside them. go test lists a
# package once however many patterns match it.
LONG_POLES := ./packaging ./cache ./cmd/confagent ./agent ./cmd/confpush ./publish \
	./cmd/confpush/internal/access ./cmd/confpush/internal/dashboard ./zkclient ./internal/zktest
TEST_PKGS := $(if $(filter ./...,$(PKGS)),$(LONG_POLES) $(PKGS),$(PKGS))
# The tools module's tests (chaos smoke, benchmark smokes, the browser
# test) drive real confagent processes, ZooKeeper and Chromium; the library
# code they run in-process is race-tested by the main module's own tests,
# so they run without the race detector's CPU cost, one package at a time.
TOOLS_TEST_FLAGS ?= -count=1 -p 1 -timeout 15m
CHAOS_DURATION ?= 10m
FUZZ_TIME ?= 1m

.PHONY: deb deb-test packaging-tools stress docs all install build build-tools test test-unit lint vet check-go-min fmt fmt-check lint-static zookeeper prometheus chromium screenshots demo demo-confd bench chaos fuzz install clean check-leftovers

all: build

# --version and zkconf_build_info name the build: git describe and the
# commit (with -dirty for uncommitted changes), stamped into
# internal/buildinfo. Without git (a source tarball) the binaries say
# "dev"; a plain `go build` in a checkout still records the commit.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT ?= $(shell c=$$(git rev-parse HEAD 2>/dev/null) && { git diff --quiet HEAD 2>/dev/null && echo $$c || echo $$c-dirty; })
BUILDINFO := github.com/zkconf/zkconf/internal/buildinfo
LDFLAGS := -X $(BUILDINFO).version=$(VERSION) -X $(BUILDINFO).commit=$(COMMIT)

# GOBUILDFLAGS and EXTRA_LDFLAGS are for packaging: make deb and the
# container image build static (CGO_ENABLED=0), -trimpath, stripped (-s -w).
GOBUILDFLAGS ?=
EXTRA_LDFLAGS ?=

build:
	$(GO) build $(GOBUILDFLAGS) -ldflags "$(LDFLAGS) $(EXTRA_LDFLAGS)" -o $(BIN)/ ./cmd/confpush ./cmd/confagent ./internal/cmd/zkdev

# The CLI reference (docs/cli/*.md, docs/man/*.1) is generated from the
# commands; TestCLIDocs and TestConfagentDocs fail when it is stale.
docs:
	ZKCONF_UPDATE_DOCS=1 $(GO) test -count=1 -run '^(TestCLIDocs|TestConfagentDocs)$$' ./cmd/confpush ./cmd/confagent

build-tools:
	cd $(TOOLS) && $(GO) build -o $(abspath $(BIN))/ ./cmd/confbench ./cmd/confchaos

zookeeper:
	@scripts/ensure-zookeeper.sh

# promtool, for the tests of examples/monitoring (the Debian prometheus package).
prometheus:
	@scripts/ensure-prometheus.sh

# The dashboard's browser test (tools/dashboardtest) drives a headless
# Chromium: the Debian chromium package, installed when missing.
chromium:
	@scripts/ensure-chromium.sh

# screenshots re-takes docs/dashboard/*.png (README.md, docs/dashboard.md)
# from the browser test; make test writes them to a temporary directory.
screenshots: zookeeper chromium
	cd $(TOOLS) && ZKCONF_SCREENSHOTS=$(abspath docs/dashboard) $(GO) test -count=1 -run '^TestDashboardInBrowser$$' ./dashboardtest

# third_party/go-zookeeper-zk is the patched go-zookeeper both modules
# build with (go.mod's replace; its README says what changed). It is a
# module of its own, so ./... does not reach it: vet checks it here (it is
# clean, and the patch must keep it so).
ZK_COPY := third_party/go-zookeeper-zk
# third_party/semver is Masterminds/semver (through sprig) with its regular
# expressions compiled at first use instead of at every process start
# (its README says why); a module of its own too, vetted here.
SEMVER_COPY := third_party/semver
# third_party/decimal is shopspring/decimal (through sprig) with its ln(10)
# table built at first use instead of at every process start (its README
# says why); a module of its own too, vetted here.
DECIMAL_COPY := third_party/decimal
# third_party/gotenv is subosito/gotenv (through viper) with its regular
# expressions compiled at first use (its README says why); vetted here too.
GOTENV_COPY := third_party/gotenv

vet:
	$(GO) vet $(PKGS)
	cd $(TOOLS) && $(GO) vet ./...
	cd $(ZK_COPY) && $(GO) vet ./...
	cd $(SEMVER_COPY) && $(GO) vet ./...
	cd $(DECIMAL_COPY) && $(GO) vet ./...
	cd $(GOTENV_COPY) && $(GO) vet ./...

# check-go-min keeps GO_MIN true: go.mod declares it (a dependency upgrade
# that needs a newer Go raises the go directive through go get or go mod
# tidy, and fails here), and the module, tests included, vets with the
# go$(GO_MIN) toolchain (fetched once through the module proxy, then cached).
# The tools module may need a newer Go; it is not checked.
check-go-min:
	@declared=$$(sed -n 's/^go //p' go.mod); if [ "$$declared" != "$(GO_MIN)" ]; then \
		echo "go.mod says go $$declared, the supported minimum (GO_MIN) is $(GO_MIN): keep dependencies that need no newer Go, or raise GO_MIN and README.md's Supported Go versions deliberately"; exit 1; fi
	GOTOOLCHAIN=go$(GO_MIN) $(GO) vet $(PKGS)

fmt:
	gofmt -w $$(git ls-files '*.go')

# lint: gofmt, vet, the minimum Go check, staticcheck and gosec, pinned,
# through the Go module proxy, over both modules. gosec skips test files and
# the test harnesses of the main module (internal/zktest,
# internal/faultproxy, internal/cmd), which ship nowhere, and the upstream
# code of $(ZK_COPY), which it flags 31 times (unchecked errors of
# deadlines and closes, integer conversions of wire fields), and of
# $(SEMVER_COPY), $(DECIMAL_COPY) and $(GOTENV_COPY), all of which zkconf
# keeps as upstream wrote them but for
# their patches. staticcheck does not reach the copies (modules of their
# own, outside ./...); it would flag
# upstream style and the declarations only upstream's tests use. Excluded rules:
# G304 (file read from a variable path: zkconf reads the files its operator
# names, by design: items, configuration, credentials, state) and G404
# (math/rand: used only to jitter retries). gosec walks directories, not
# modules: the main module's run skips tools/, which has its own run. The
# tools harnesses ship nowhere either and do by design what these further
# rules flag: G104 (best-effort cleanup of processes and files they made),
# G115 (integer conversions of zxids, counters and wire fields), G204 (they
# start the processes they test: confagent, mount), G301/G302/G306 (their
# work directories and result files are readable on purpose).
lint: fmt-check vet check-go-min lint-static

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

# lint-static: staticcheck and gosec over both modules. GOSECGOVERSION gives
# gosec the module's go directive, which it otherwise asks `go list -m
# -json` for, once per package and rule: hundreds of go commands (gosec
# took 275 CPU-seconds for the main module, half of them in the kernel).
GOSEC_MAIN_GO := $(shell sed -n 's/^go //p' go.mod)
GOSEC_TOOLS_GO := $(shell sed -n 's/^go //p' $(TOOLS)/go.mod)
lint-static:
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 $(PKGS)
	cd $(TOOLS) && $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...
	GOSECGOVERSION=go$(GOSEC_MAIN_GO) $(GO) run github.com/securego/gosec/v2/cmd/gosec@v2.22.11 -quiet -exclude=G304,G404 \
		-exclude-dir=$(TOOLS) -exclude-dir=internal/zktest -exclude-dir=internal/faultproxy \
		-exclude-dir=internal/cmd -exclude-dir=$(ZK_COPY) -exclude-dir=$(SEMVER_COPY) -exclude-dir=$(DECIMAL_COPY) \
		-exclude-dir=$(GOTENV_COPY) $(PKGS)
	cd $(TOOLS) && GOSECGOVERSION=go$(GOSEC_TOOLS_GO) $(GO) run github.com/securego/gosec/v2/cmd/gosec@v2.22.11 -quiet \
		-exclude=G104,G115,G204,G301,G302,G304,G306,G404 ./...

# Everything, from a fresh clone: installs ZooKeeper when missing, vets, runs
# every test (unit and integration against real ZooKeeper) of both modules,
# the main module's with the race detector (the tools module's include the
# 90-second chaos run and the benchmarks' smoke runs). The two modules' tests run side by side,
# as they did when they were one module (the tools module's, one package at
# a time, print when they end), and either failing fails the target; then
# it checks that no test left a ZooKeeper process behind. make deb-test (the
# Debian package and the container image, built and used for real: minutes,
# root) runs beside them too, and fails the target like a test. gofmt runs
# first (it fails fast); vet and the rest of lint (check-go-min,
# staticcheck, gosec: compile-bound) run beside the tests, which spend much
# of their time waiting on ZooKeeper, and print when they end; they fail
# the target like a test. (vet ahead of the tests put about two minutes of
# waiting for a CPU on the critical path under two CPU hogs.) The tests run
# with -vet=off: go test's own vet pass (a subset of vet's analyzers,
# type-checking every package again: about 55 CPU-seconds for the main
# module and 19 for the tools module, measured) would repeat what the vet
# target beside them checks in full, over the same packages and test files.
test: zookeeper prometheus chromium packaging-tools fmt-check
	@lintlog=$$(mktemp); $(MAKE) --no-print-directory -k vet check-go-min lint-static >$$lintlog 2>&1 & lint=$$!; \
		deblog=$$(mktemp); $(MAKE) --no-print-directory deb-test >$$deblog 2>&1 & deb=$$!; \
		log=$$(mktemp); (cd $(TOOLS) && $(GO) test -vet=off $(TOOLS_TEST_FLAGS) ./... >$$log 2>&1) & tools=$$!; \
		$(GO) test -vet=off $(TEST_FLAGS) $(TEST_PKGS); main=$$?; \
		wait $$tools; toolsrc=$$?; wait $$lint; lintrc=$$?; wait $$deb; debrc=$$?; \
		echo "== tools module"; cat $$log; echo "== lint: vet, check-go-min, staticcheck, gosec"; cat $$lintlog; \
		echo "== packaging: make deb-test"; cat $$deblog; \
		rm -f $$log $$lintlog $$deblog; \
		[ $$main -eq 0 ] && [ $$toolsrc -eq 0 ] && [ $$lintrc -eq 0 ] && [ $$debrc -eq 0 ]
	@$(MAKE) --no-print-directory check-leftovers

# stress: the cache's torn-read stress test at length (make test runs 100
# generations through package publish).
stress: zookeeper
	ZKCONF_STRESS_GENERATIONS=5000 $(GO) test -race -count=1 -timeout 30m -run '^TestTornReadStress$$' ./cache/

# check-leftovers: a ZooKeeper server the tests started (its zoo.cfg in a
# directory under the temporary directory the tests used: the harness
# passes it right after the class name) still running.
# Servers of another checkout's tests or benchmarks, run with a TMPDIR of
# their own, are not this run's.
LEFTOVER_PATTERN = QuorumPeerMain $(patsubst %/,%,$(or $(TMPDIR),/tmp))/.*zk[0-9]+/zoo[.]cfg
check-leftovers:
	@if pgrep -f '$(LEFTOVER_PATTERN)' >/dev/null; then \
		echo "ZooKeeper test servers outlived their tests:"; pgrep -af '$(LEFTOVER_PATTERN)'; exit 1; fi

test-unit:
	$(GO) test -short -count=1 $(PKGS)
	cd $(TOOLS) && $(GO) test -short -count=1 ./...

demo: zookeeper build
	scripts/demo.sh

# demo-confd: a confd fleet's key tree and template resources migrated
# (docs/migrating-from-confd.md); zkkeys plays confd's side.
demo-confd: zookeeper build
	$(GO) build -o $(BIN)/ ./internal/cmd/zkkeys
	scripts/demo-confd.sh

# bench: the fleet benchmark, then the single-host latency benchmark
# (confagent against a confd-style follower; docs/bench/latency.md).
bench: zookeeper
	cd $(TOOLS) && $(GO) run ./cmd/confbench --runs 3 --confagents 1 --out ../docs/bench
	cd $(TOOLS) && $(GO) run ./cmd/confbench latency --out ../docs/bench

chaos: zookeeper build-tools
	$(GO) build -o $(BIN)/ ./cmd/confagent
	$(BIN)/confchaos --duration $(CHAOS_DURATION) --confagent $(BIN)/confagent \
		--summary $(or $(CHAOS_SUMMARY),$(BIN)/chaos-summary.txt) $(if $(CHAOS_SEED),--seed $(CHAOS_SEED))

fuzz:
	@failed=; for t in \
		./manifest:FuzzDecode \
		./manifest:FuzzValidateName \
		./internal/render:FuzzDirName \
		./internal/template:FuzzTemplateHostileData \
		./internal/template:FuzzTemplateText \
		./cmd/internal/config:FuzzLoad \
		./cmd/internal/config:FuzzLoadGenerated \
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
# Where make install puts the systemd units (make deb: /lib/systemd/system).
# Their paths (/usr/local/bin/confagent, the documentation) follow PREFIX.
UNITDIR ?= /etc/systemd/system
DOCDIR ?= $(PREFIX)/share/doc/zkconf
# Where make install puts shell completions: the directories bash-completion
# and zsh (site-functions) search under PREFIX, and fish's vendor directory.
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
ZSHCOMPDIR ?= $(PREFIX)/share/zsh/site-functions
FISHCOMPDIR ?= $(PREFIX)/share/fish/vendor_completions.d
MANDIR ?= $(PREFIX)/share/man
# Binaries, systemd units (in UNITDIR, naming the binaries under PREFIX),
# the example agent configuration and the template it names (never overwriting an existing /etc/confagent/confagent.yaml or
# template), the unit's drop-in granting the directories that configuration
# writes (confagent systemd-dropin; docs/install.md), man pages and shell
# completions (generated by the binaries just built), and README and docs/
# with the examples they link to (internal/cmd/installdocs: links to what
# is not installed become plain text). With DESTDIR
# (packaging) the drop-in is left to the host: the configuration names paths
# of the host, not of DESTDIR.
install: build
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(UNITDIR) $(DESTDIR)/etc/confagent $(DESTDIR)/etc/confagent/templates
	install -m 0755 $(BIN)/confpush $(BIN)/confagent $(DESTDIR)$(PREFIX)/bin/
	for u in confagent.service confagent@.service; do \
		sed 's|/usr/local/|$(PREFIX)/|g' systemd/$$u >$(DESTDIR)$(UNITDIR)/$$u && chmod 0644 $(DESTDIR)$(UNITDIR)/$$u || exit 1; \
	done
	[ -e $(DESTDIR)/etc/confagent/confagent.yaml ] || install -m 0640 examples/agent/confagent.yaml $(DESTDIR)/etc/confagent/confagent.yaml
	[ -e $(DESTDIR)/etc/confagent/templates/upstreams.conf.tmpl ] || install -m 0644 examples/agent/templates/upstreams.conf.tmpl $(DESTDIR)/etc/confagent/templates/
	@if [ -z "$(DESTDIR)" ]; then \
		$(PREFIX)/bin/confagent systemd-dropin --config /etc/confagent/confagent.yaml --write || \
		{ echo "make install: fix /etc/confagent/confagent.yaml, then run: confagent systemd-dropin --write"; exit 1; }; \
	else echo "DESTDIR set: on the host, run: confagent systemd-dropin --write (docs/install.md)"; fi
	$(GO) run ./internal/cmd/installdocs $(DESTDIR)$(DOCDIR)
	install -d $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(BASHCOMPDIR) $(DESTDIR)$(ZSHCOMPDIR) $(DESTDIR)$(FISHCOMPDIR)
	install -m 0644 docs/man/*.1 $(DESTDIR)$(MANDIR)/man1/
	for b in confpush confagent; do \
		$(BIN)/$$b completion bash >$(DESTDIR)$(BASHCOMPDIR)/$$b && \
		$(BIN)/$$b completion zsh >$(DESTDIR)$(ZSHCOMPDIR)/_$$b && \
		$(BIN)/$$b completion fish >$(DESTDIR)$(FISHCOMPDIR)/$$b.fish || exit 1; \
	done

# deb: a Debian package of both binaries (static), the units in
# /lib/systemd/system (installed disabled), man pages, completions, the
# documentation and the example configuration as a conffile, into DEB_OUT
# (packaging/deb/build.sh; version from git describe). deb-test builds it,
# checks it with lintian and installs it with dpkg into a throw-away root,
# and builds and runs the container image (Dockerfile) with buildah and
# runc: packaging/packaging_test.go.
DEB_OUT ?= $(BIN)

deb:
	packaging/deb/build.sh $(DEB_OUT)

packaging-tools:
	@scripts/ensure-packaging.sh

deb-test: zookeeper packaging-tools
	ZKCONF_PACKAGING_TEST=1 $(GO) test -count=1 -timeout 20m ./packaging/

clean:
	rm -rf $(BIN)
