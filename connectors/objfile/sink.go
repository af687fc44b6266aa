package objfile

import (
	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/connect"
)

// stateKey prefixes the sink's state (connect.TwoPhase's keys).
const stateKey = "objfile/"

// NewSink checks cfg and returns the factory of the sink operator: a
// connect.Sink whose transactions are the instance's files (see the
// package documentation).
func NewSink(cfg SinkConfig) (sdk.Factory, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	var schema *rowSchema
	if cfg.Format == FormatParquet {
		schema = newRowSchema(cfg.Columns)
	}
	return connect.NewSink(connect.SinkConfig{
		Name: cfg.Name, Stream: cfg.Stream, Routing: cfg.Routing, Parallelism: cfg.Parallelism,
		StateKey: stateKey,
		Open: func(ctx sdk.Context) (connect.Transactions, []byte, error) {
			info := ctx.Instance()
			f := &files{cfg: cfg, schema: schema, writer: connect.WriterName(info.Operator, info.FirstGroup), log: ctx.Logger(),
				eo: info.Guarantee == sdk.ExactlyOnce}
			return f, []byte(cfg.Prefix), nil
		},
	})
}
