# turnstile — build, test and run targets.
#
#   make run     start a local ZooKeeper and run the example pipeline
#   make test    vet, gofmt check, and the race-enabled test suite
#   make fuzz    each Go fuzz target for FUZZTIME (default 30s); make test
#                runs only their seed corpora
#   make simulate  the deterministic simulator's soak on every core
#                (SIM_DURATION, default 5m; SIM_FIRST, the first seed)
#   make deps    install what the tests need (Debian/Ubuntu, as root)
#   make bench   the benchmark table of BENCHMARKS.md (about 4 minutes)
#   make bench-latency  cold keys and open-loop latency (BENCHMARKS.md, about 5 minutes)
#   make bench-twoproc  two processes on one lock against the peers' one (about 2 minutes)
#   make pause   what each lock does when its holder stalls past its lease
#   make pause-pg  the same on a PostgreSQL account: the lost updates of
#                each lock, and none with turnstile and fence/sqlfence
#   make stress  a bounded soak under connection cuts
#   make mutate  plant known bugs, one at a time, and report which checker
#                catches each (MUTATE_RUN: a regexp of mutant names)
#   make partition  Lost() and lease survival under real partitions of a
#                3-node ensemble in network namespaces (as root; minutes)
#   make nemesis  a seeded nemesis on an ensemble and client processes in
#                network namespaces, a guarded register checked for
#                linearizability, then an unguarded control (as root;
#                NEMESIS_DURATION, NEMESIS_SEED, NEMESIS_NODES=3|5)

GO ?= go

# ---------------------------------------------------------------------------
# DEB_PACKAGES: the Debian packages `make deps` ensures are installed.
# Each is checked with `dpkg -s`; only the missing ones are installed, after
# at most one `apt-get update`. Curator (Java) and kazoo (Python) are the
# peers of the interop tests (internal/interop) and the benchmark;
# redis-server is the Redis lock the benchmark measures turnstile against;
# nftables gives nft, with which internal/partition cuts links between the
# network namespaces of its ensemble; postgresql is the database the
# fence module's tests (fence/internal/pgserver) start clusters of their
# own from, with its binaries in /usr/lib/postgresql/<version>/bin.
# (Where an init system runs, Debian's redis-server package starts a
# service of its own on port 6379; the harness never uses it: it starts its
# own server on a free port.)
DEB_PACKAGES := zookeeper libcurator-recipes-java python3-kazoo redis-server nftables postgresql
# Java 17 with javac: ZooKeeper runs on it and the interop tests compile
# their Curator peer with it. Skipped if the release has none.
JAVA_DEB := openjdk-17-jdk-headless
# ---------------------------------------------------------------------------

# Set ZK_JAR (and ZK_CLASSPATH) to use a ZooKeeper installed by hand; then
# `make deps` does not touch apt (see README.md).
export ZK_JAR
export ZK_CLASSPATH

.PHONY: all deps test vet fmt-check fuzz run stress bench bench-latency bench-twoproc pause pause-pg simulate mutate partition nemesis

all: test

deps:
	@set -e; \
	if [ -n "$(ZK_JAR)" ] || ! command -v dpkg >/dev/null 2>&1; then \
		jar="$${ZK_JAR:-/usr/share/java/zookeeper.jar}"; java="$${JAVA:-java}"; \
		if [ ! -f "$$jar" ] || ! command -v "$$java" >/dev/null 2>&1; then \
			echo "deps: need Java 17 and ZooKeeper 3.8 ($$jar); set ZK_JAR (and ZK_CLASSPATH), or on Debian/Ubuntu run make deps as root without ZK_JAR" >&2; \
			exit 1; \
		fi; \
		command -v "$${REDIS_SERVER:-redis-server}" >/dev/null 2>&1 || \
			echo "deps: no redis-server (set REDIS_SERVER): the stress tests and make bench need one" >&2; \
		[ -n "$${PG_BIN:-}" ] || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || \
			echo "deps: no PostgreSQL (set PG_BIN to its bin directory): the fence module's tests need one" >&2; \
		echo "deps: using $$jar (apt not used)"; \
	else \
		missing=""; \
		for p in $(DEB_PACKAGES) $(JAVA_DEB); do \
			dpkg -s "$$p" 2>/dev/null | grep -q '^Status: install ok installed' || missing="$$missing $$p"; \
		done; \
		if [ -n "$$missing" ]; then \
			sudo=""; \
			if [ "$$(id -u)" != 0 ]; then \
				if command -v sudo >/dev/null 2>&1; then sudo="sudo"; \
				else echo "deps: must run as root to install:$$missing" >&2; exit 1; fi; \
			fi; \
			echo "deps: installing$$missing"; \
			$$sudo apt-get update; \
			install=""; \
			for p in $$missing; do \
				if [ "$$p" = "$(JAVA_DEB)" ] && ! apt-cache show "$$p" >/dev/null 2>&1; then \
					echo "deps: $$p not available here; relying on the Java that zookeeper depends on"; \
				else install="$$install $$p"; fi; \
			done; \
			if [ -n "$$install" ]; then \
				$$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y $$install; \
			fi; \
		else \
			echo "deps: Debian packages present: $(DEB_PACKAGES) $(JAVA_DEB)"; \
		fi; \
		test -f /usr/share/java/zookeeper.jar || { echo "deps: /usr/share/java/zookeeper.jar missing after install" >&2; exit 1; }; \
		command -v "$${JAVA:-java}" >/dev/null 2>&1 || { echo "deps: no java after install" >&2; exit 1; }; \
		test -x /usr/bin/redis-server || { echo "deps: /usr/bin/redis-server missing after install" >&2; exit 1; }; \
		ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || { echo "deps: no /usr/lib/postgresql/*/bin/initdb after install" >&2; exit 1; }; \
	fi
	$(GO) mod download

# The harness (stress/), the metrics exporter (metrics/, with its
# example), the fencing module (fence/, whose tests need a PostgreSQL
# driver) and the pipeline example (golang.org/x/sync) are modules of
# their own, so that the library's go.mod lists only what the library
# needs; go.work joins them, and `./...` from here does not descend into
# another module: each is named explicitly.
PKGS := ./... ./stress/... ./metrics/... ./fence/... ./examples/metrics/... ./examples/pipeline/...

vet:
	$(GO) vet $(PKGS)

fmt-check:
	@files="$$(gofmt -l .)"; \
	if [ -n "$$files" ]; then echo "gofmt needed on:"; echo "$$files"; exit 1; fi

# The tests' events go through internal/testtimes, which prints what go
# test prints and then the slowest tests; go test's own status is kept
# apart, as sh has no pipefail.
test: deps vet fmt-check
	@rc=$$(mktemp); tt=$$(mktemp); $(GO) build -o $$tt ./internal/testtimes || exit 1; \
	{ $(GO) test -race -count=1 -timeout 15m -json $(PKGS); echo $$? > $$rc; } | $$tt; \
	shown=$$?; status=$$(cat $$rc); rm -f $$rc $$tt; \
	if [ "$$status" != 0 ]; then exit $$status; fi; exit $$shown

run: deps
	$(GO) run ./examples/pipeline

# Every func FuzzX of the library's packages, found in the sources, each
# run alone (go test fuzzes one target at a time) for FUZZTIME. A failing
# input is written to the package's testdata/fuzz/FuzzX/, where plain go
# test runs it from then on. Targets that need ZooKeeper start one per
# fuzz worker, as their TestMain does.
FUZZTIME ?= 30s
fuzz: deps
	@set -e; \
	for dir in $$(grep -rl --include='*_test.go' '^func Fuzz' . | grep -v '^./stress/' | xargs -n1 dirname | sort -u); do \
		for target in $$(grep -h '^func Fuzz' $$dir/*_test.go | sed 's/^func \(Fuzz[A-Za-z0-9_]*\).*/\1/'); do \
			echo "fuzz: $$dir $$target for $(FUZZTIME)"; \
			$(GO) test $$dir -run '^$$' -fuzz "^$$target\$$" -fuzztime $(FUZZTIME); \
		done; \
	done

# A bounded soak: contended mutex under connection cuts. Exits non-zero on
# any violation or orphaned node.
stress: deps
	$(GO) run ./stress -workload contended -workers 16 -duration 20s -faults conn-cut

# The table of BENCHMARKS.md: turnstile against go-zookeeper's Lock,
# Curator, kazoo, a Redis lock and the bare ZooKeeper requests, each beside
# its plain program, on one embedded ZooKeeper in its default durability
# (forceSync=yes) and one redis-server: 64 workers on paths of their own,
# 16 on one path, 10,000 queued waiters; one table at the end.
bench: deps
	$(GO) run ./stress -bench -warmup 2s -duration 6s

# Cold keys (a lock path never used before, every cycle) for every impl
# beside its plain program, then open loop on keys and on uncontended at
# half the best ZooKeeper peer's closed-loop rate (BENCHMARKS.md). A target
# of its own: with make bench's suite it would take over six minutes.
bench-latency: deps
	$(GO) run ./stress -bench-latency -warmup 2s -duration 6s

# Issue 19's two processes on one lock alone: gozk, Curator and kazoo with
# 16 workers on one path, then two turnstile processes of 8 workers each,
# with cohorting and strict FIFO, and the targets (make bench prints them
# too).
bench-twoproc: deps
	$(GO) run ./stress -bench-twoproc -warmup 2s -duration 6s

# A holder process stopped (SIGSTOP) past its session timeout or TTL, for
# turnstile, go-zookeeper's Lock and the Redis lock: who gets in meanwhile,
# and whether the stalled holder's write is refused when it goes on.
pause: deps
	$(GO) run ./stress -impl turnstile,gozk,redis -faults pause -workload contended -workers 8 \
		-session-timeout 2s -fault-interval 1s -duration 12s

# make pause on an account in a PostgreSQL server of the run's own: each
# hold reads the balance and writes it plus a deposit of 1, the stalled
# holder stopped between the two; turnstile unfenced and fenced with
# fence/sqlfence (the token checked first in each transaction, the write's
# included), go-zookeeper's Lock and the Redis lock unfenced. The books at
# the end (deposits acknowledged against the final balance) count the lost
# updates; one table sets the four side by side (about a minute).
pause-pg: deps
	$(GO) run ./stress -impl turnstile,turnstile-sqlfence,gozk,redis -faults pause -pause-resource postgres \
		-workload contended -workers 8 -session-timeout 2s -fault-interval 1s -duration 12s

# The simulator's soak (engine/sim_test.go): seeds from SIM_FIRST on, one
# per core at a time, each single-threaded and reproducible, for
# SIM_DURATION. It prints seeds/s, schedule steps, simulated acquisitions
# and failures, with the seed and replay command of the first failure.
# (make test runs a bounded number of seeds, under the race detector.)
SIM_DURATION ?= 5m
SIM_FIRST ?= 1
simulate: deps
	$(GO) test ./engine -run 'TestSimulationSoak$$' -count=1 -timeout 0 -v \
		-sim.soak=$(SIM_DURATION) -sim.first=$(SIM_FIRST)

# Planted bugs (internal/mutate/mutants.go): each is planted in a copy of
# the work tree and must be caught by the simulator within MUTATE_BUDGET of
# simulation, or by the named tests of its class. Prints caught or missed
# per mutant, then `mutants: C caught of M`; fails if any is missed.
MUTATE_BUDGET ?= 2m
MUTATE_RUN ?=
mutate: deps
	$(GO) run ./internal/mutate -budget $(MUTATE_BUDGET) -run '$(MUTATE_RUN)'

# Real partitions (internal/partition, as root): a 3-node ensemble and its
# clients in network namespaces of their own, links cut with nftables or
# taken down. make test runs the Lost() tests and the sessions' spread;
# this adds a minute's hold and a failover on an ensemble whose leader
# serves no clients (leaderServes=no), and the survival measurements, SURVIVAL_TRIALS trials each (each prints "survival ...: N
# of M leases kept").
SURVIVAL_TRIALS ?= 20
partition: deps
	@out=$$(mktemp); status=0; \
	TURNSTILE_SURVIVAL_TRIALS=$(SURVIVAL_TRIALS) $(GO) test ./internal/partition -count=1 -v -timeout 60m \
		-run 'TestLostBeforeOtherGrant|TestSurvival|TestSessionsSpread|TestLeaderServesNo' >$$out 2>&1 || status=$$?; \
	grep -E '^(=== RUN|--- |survival|PASS|FAIL|ok)|(lost|survival|spread)_test.go' $$out; \
	rm -f $$out; exit $$status

# The nemesis (stress nemesis, stress/nemesis.go; as root): a 3-member
# ensemble (NEMESIS_NODES=5: five) and 4 client processes, each in a network
# namespace of its own, under faults drawn from NEMESIS_SEED (0: from the
# clock) for NEMESIS_DURATION: partitions, client cuts, stopped and killed
# clients, killed and stalled servers, latency. The clients write a register
# through Lease.Guarded and a fenced register (a process); beside them a
# participant holds through the CLI, `turnstile lock PATH -- CMD`, whose
# CMD writes the fenced register with its token and may not live beside
# another holder's grant. Porcupine and the exclusion checks judge the
# history. Then a control run under the same schedule (at most 2m) writes
# without guard or fence, its CLI's CMD handing the writes to a service
# outside its tree, and must show violations, that one included. The last
# line sums both up; the exit status is non-zero on any violation of the
# real run, or a control without one. Built first (the harness and the
# CLI), so that the summary stays the last line.
NEMESIS_DURATION ?= 2m
NEMESIS_SEED ?= 0
NEMESIS_NODES ?= 3
nemesis: deps
	@dir=$$(mktemp -d); status=0; \
	$(GO) build -o $$dir/stress ./stress && $(GO) build -o $$dir/turnstile ./cmd/turnstile && \
	$$dir/stress nemesis -duration $(NEMESIS_DURATION) -seed $(NEMESIS_SEED) -nodes $(NEMESIS_NODES) \
		-turnstile $$dir/turnstile || status=$$?; \
	rm -rf $$dir; exit $$status
