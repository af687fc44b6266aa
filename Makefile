# Sluice developer commands. Only Go 1.26 is needed; test services (Consul,
# Jaeger, Prometheus) are built or installed on first use and cached outside
# the repository (see scripts/).

GO        ?= go
DURATION  ?=
export DURATION

.PHONY: run test vet unit tools bench fmt clean

## run: the ad-network sample on the embedded runtime (Ctrl-C or DURATION=30s to stop)
run:
	$(GO) run ./samples/adnetwork/cmd/adnetwork

## test: go vet + every test under the race detector, with the services they need
test: tools vet
	SLUICE_CONSUL_BIN="$$(scripts/ensure-tool.sh consul)" \
	SLUICE_JAEGER_BIN="$$(scripts/ensure-tool.sh jaeger)" \
	SLUICE_PROMETHEUS_BIN="$$(command -v prometheus)" \
	$(GO) test -race -timeout 20m ./...
	# In-process multi-node tests: several protoactor remotes in one process
	# race on grpc's global logger, so these run without -race (see
	# actors/cluster_test.go); the multi-process cluster tests run above.
	$(GO) test -count=1 -timeout 10m -run 'TestCluster' ./actors/

vet:
	$(GO) vet ./...

## tools: build/install the test services once (cached in $$HOME/.cache/sluice)
# Consul and Jaeger are built from the Go module proxy; Prometheus (for
# internal/integration's scrape test) is Debian's package, installed as root.
tools:
	@scripts/ensure-tool.sh consul >/dev/null
	@scripts/ensure-tool.sh jaeger >/dev/null
	@command -v prometheus >/dev/null || (apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends prometheus)

## bench: the benchmark table (medians of several runs) and the Go benchmarks
bench: tools
	SLUICE_CONSUL_BIN="$$(scripts/ensure-tool.sh consul)" $(GO) run ./cmd/sluice-bench
	$(GO) test -run '^$$' -bench . -benchtime 3x ./internal/bench/...

fmt:
	gofmt -w $$(git ls-files '*.go')

clean:
	rm -rf sluice-data
