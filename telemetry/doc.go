// Package telemetry is Sluice's OpenTelemetry instrumentation: traces
// that follow sampled records through the operator graph, across nodes,
// and per-operator metrics, exported over OTLP (gRPC or HTTP) and served
// to Prometheus at /metrics on the node's control HTTP address.
//
// It attaches to the runtime from outside, through the actors/status.Observer
// hooks and actors.Node.Status; node.Start wires it up (node.Config.Telemetry,
// by default FromEnv).
//
// # A traced record's path
//
// A source instance produces a record; Observer.Sample, a per-operator
// counter, picks one in Config.Sampling.Every (default 1000). For a picked
// record the runtime starts a "produce <operator>" span and writes its W3C
// traceparent into the record's "traceparent" header. Every operator that
// processes a record with that header gets a "process <operator>" span,
// child of the header's span, with the operator, instance, node, input
// stream and the time the record's batch waited; records it produces
// meanwhile carry the new span's traceparent on, to whichever node they
// go. An untraced record costs a header scan and no allocation; a record
// whose header is not sampled (flag 00) is passed on untouched. The spans
// are recorded without the SDK's tracer, into a queue whose goroutine
// hands them to the exporters in batches (docs/observability.md says why).
//
// # Metrics
//
// Counters and gauges (records consumed and produced, mailbox length,
// restarts, dead letters, state size) are observable instruments that read
// Node.Status when a reader collects, so the record path pays nothing for
// them; the processing-time and end-to-end histograms are recorded for one
// record in actors/status.ProcessedSampleEvery. Attributes are the operator name
// and instance index only, never keys. With Config.RuntimeMetrics the Go
// runtime (go.*, OpenTelemetry contrib) and the process's CPU time and
// memory (process.*) come too. docs/observability.md lists every name.
//
// # Example
//
//	cfg, err := telemetry.FromEnv() // OTEL_EXPORTER_OTLP_ENDPOINT etc.
//	if err != nil {
//		return err
//	}
//	cfg.Sampling = telemetry.Sampling{Every: 100, Operators: map[string]int{"clicks": 1}}
//	err = node.Run(ctx, node.Config{HTTP: ":8080", Telemetry: &cfg}, operators...)
package telemetry
