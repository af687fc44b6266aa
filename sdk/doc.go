// Package sdk is what Sluice users import to write and run operators.
//
// An operator subscribes to named streams, keeps key-value state, sets
// timers and produces records to other streams. Every instance of an
// operator runs as a supervised actor; a failure restarts it without
// disturbing the rest. Package sdk/node's Start or Run executes a set of
// operators in one process (the embedded mode) or as a node of a cluster;
// sdk itself holds only the types, helpers and docs, so that operators and
// connectors depend on neither the runtime nor its storage:
//
//	type Counter struct{}
//
//	func (Counter) Metadata() sdk.Metadata {
//		return sdk.Metadata{
//			Name:        "count",
//			Inputs:      []sdk.Input{{Stream: "words", Routing: sdk.GroupBy}},
//			Outputs:     []string{"counts"},
//			Parallelism: 4,
//		}
//	}
//	func (Counter) Init(sdk.Context) error { return nil }
//	func (Counter) ProcessRecord(ctx sdk.Context, rec sdk.Record) error {
//		n, err := sdk.GetInt64(ctx.State(), rec.Key)
//		if err != nil {
//			return err
//		}
//		sdk.PutInt64(ctx.State(), rec.Key, n+1)
//		return ctx.Produce("counts", sdk.Record{Key: rec.Key, Value: fmt.Appendf(nil, "%d", n+1)})
//	}
//	func (Counter) ProcessTimer(sdk.Context, string, time.Time) error { return nil }
//
//	err := node.Run(ctx, node.Config{NodeConfig: node.NodeConfig{DataDir: "data"}}, func() sdk.Operator { return Counter{} })
//
// (the README's and Example's code: the count travels as decimal text, for
// readers outside Go; Int64Bytes is the compact 8-byte form.)
//
// The names below are aliases of internal/core's types, which the runtime
// uses as they are, so values pass between sdk and the runtime without
// conversion.
package sdk
