package actors

import (
	"time"

	"github.com/sluicehq/sluice/actors/status"
	"github.com/sluicehq/sluice/internal/core"
)

// observeStages tells a status.StageObserver the sent and queue stages of
// rec, whose processing started at start, from batch m.
func (i *instance) observeStages(obs status.Observer, rec *core.Record, m *batchMsg, start time.Time) {
	so, ok := obs.(status.StageObserver)
	if !ok || m.Sent.IsZero() {
		return
	}
	so.Stage(i.key.op, i.key.index, status.StageQueue, start.Sub(m.Sent))
	if !rec.EventTime.IsZero() {
		so.Stage(i.key.op, i.key.index, status.StageSent, m.Sent.Sub(rec.EventTime))
	}
}

// observedCommit is the periodic commit (in the background where it can
// be: commitState), timed for a status.StageObserver: the time the
// instance spent on it.
func (i *instance) observedCommit(sync bool) {
	so, ok := i.node.cfg.Observer.(status.StageObserver)
	if !ok || i.ck.hold != 0 {
		i.commitState(sync, true)
		return
	}
	start := time.Now()
	i.commitState(sync, true)
	so.Stage(i.key.op, i.key.index, status.StageCommit, time.Since(start))
}

// checkpointObserver returns the node's observer as a
// status.CheckpointObserver, or nil.
func (n *Node) checkpointObserver() status.CheckpointObserver {
	o, _ := n.cfg.Observer.(status.CheckpointObserver)
	return o
}

// traceOf returns the trace header of rec, or "".
func traceOf(rec *core.Record) string {
	for _, h := range rec.Headers {
		if h.Key == status.TraceHeader {
			return h.Value
		}
	}
	return ""
}

// withTrace returns rec with its trace header set to tp (a new headers
// slice: the record's own may be shared).
func withTrace(rec core.Record, tp string) core.Record {
	hs := make([]core.Header, 0, len(rec.Headers)+1)
	for _, h := range rec.Headers {
		if h.Key != status.TraceHeader {
			hs = append(hs, h)
		}
	}
	rec.Headers = append(hs, core.Header{Key: status.TraceHeader, Value: tp})
	return rec
}
