package cassandra

import "github.com/sluicehq/sluice/internal/sinkhealth"

// Metrics counts what the instances of a sink sharing it do, and whether
// the cluster is reachable. Set SinkConfig.Metrics to read them (a
// dashboard, a test). Safe for concurrent use. Rows counts the rows
// written and acknowledged at the configured consistency (a row written
// again after a replay counts again), Bytes their values' bytes, Errors
// the failed flushes (each retried), DownSince since when some instance
// cannot reach the cluster, LastError the last failure.
type Metrics struct {
	sinkhealth.Counters
}

// Down returns, while some instance cannot reach the cluster, an error
// wrapping ErrUnavailable that says since when and why; nil otherwise.
func (m *Metrics) Down() error { return m.Outage(ErrUnavailable) }

// health reports one instance's writes and failures to its Metrics.
type health struct {
	i    *sinkhealth.Instance
	what string // `cassandra sink "out"`
}

func newHealth(m *Metrics, what string) *health {
	if m == nil {
		m = new(Metrics)
	}
	return &health{i: sinkhealth.NewInstance(&m.Counters), what: what}
}

// failure records err, the failure of doing what, and returns what to
// report (see classify): an error wrapping ErrRefused when a retry will
// not cure it, else one wrapping sdk.ErrTransient, and ErrUnavailable,
// naming the outage, when the cluster cannot be reached.
func (h *health) failure(doing string, err error) error {
	c := classify(err)
	down := h.i.Failed(err, c.kind == unreachable)
	return c.wrap(h.what+": "+doing, err, down)
}
