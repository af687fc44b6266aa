# Sluice developer commands. Only Go 1.26 is needed; test services (Consul,
# Jaeger, SeaweedFS, NATS, Prometheus, PostgreSQL) are built or installed on first use and
# cached outside the repository (see scripts/).

GO        ?= go
DURATION  ?=
export DURATION

.PHONY: run test vet unit tools bench fuzz fmt clean

## run: the ad-network sample on the embedded runtime (Ctrl-C or DURATION=30s to stop); it prints
# the web console's URL (the control API on RUN_HTTP, the CLI's default address)
RUN_HTTP ?= 127.0.0.1:7070
run:
	$(GO) run ./samples/adnetwork/cmd/adnetwork -http $(RUN_HTTP)

# The services the tests use, from the cache (built by `make tools`).
TEST_ENV = SLUICE_CONSUL_BIN="$$(scripts/ensure-tool.sh consul)" \
	SLUICE_JAEGER_BIN="$$(scripts/ensure-tool.sh jaeger)" \
	SLUICE_WEED_BIN="$$(scripts/ensure-tool.sh weed)" \
	SLUICE_NATS_BIN="$$(scripts/ensure-tool.sh nats-server)" \
	SLUICE_POSTGRES_BIN="$$(scripts/pg-bindir.sh)" \
	SLUICE_PROMETHEUS_BIN="$$(command -v prometheus)" \
	SLUICE_CHROMIUM_BIN="$$(command -v chromium)"

## test: go vet + every test under the race detector, then the timing-sensitive suites at full speed
test: tools vet
	$(TEST_ENV) $(GO) test -race -timeout 25m ./...
	# Again without the race detector, which slows everything several times
	# over and so hid a source-first data loss (issue 17): the runtime, the
	# samples and the multi-process integration tests at full speed. The
	# in-process multi-node tests (TestCluster*, of actors and control) run only here: several
	# protoactor remotes in one process race on grpc's global logger (see
	# actors/cluster_test.go). So does checkpoint's 1 GiB incremental-upload
	# test.
	$(TEST_ENV) $(GO) test -count=1 -timeout 15m ./actors/ ./checkpoint/ ./samples/... ./internal/integration/
	$(TEST_ENV) $(GO) test -count=1 -timeout 5m -run '^TestCluster' ./control/

vet:
	$(GO) vet ./...

## tools: build/install the test services once (cached in $$HOME/.cache/sluice)
# Consul, Jaeger, SeaweedFS and nats-server are built from the Go module
# proxy, all at once (about 25 minutes on 2 cores the first time); Prometheus
# (for internal/integration's scrape test), Chromium (for the web console's
# browser tests, package console) and PostgreSQL (for connectors/postgres) are
# Debian's packages, installed as root, alongside the builds.
tools:
	@pids=; for t in consul jaeger weed nats-server; do scripts/ensure-tool.sh $$t >/dev/null & pids="$$pids $$!"; done; \
	scripts/debian-packages.sh & pids="$$pids $$!"; \
	for p in $$pids; do wait $$p || exit 1; done

## bench: the benchmark table (medians of several runs) and the Go benchmarks
bench: tools
	SLUICE_CONSUL_BIN="$$(scripts/ensure-tool.sh consul)" $(GO) run ./cmd/sluice-bench
	$(GO) test -run '^$$' -bench . -benchtime 3x ./internal/bench/...

## fuzz: every fuzz target for FUZZTIME each (default 30s): make fuzz FUZZTIME=90s
FUZZTIME ?= 30s
fuzz:
	scripts/fuzz.sh $(FUZZTIME)

fmt:
	gofmt -w $$(git ls-files '*.go')

clean:
	rm -rf sluice-data
