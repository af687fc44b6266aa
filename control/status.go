package control

import (
	"strings"
	"time"

	"github.com/sluicehq/sluice/actors"
	"github.com/sluicehq/sluice/actors/status"
	"github.com/sluicehq/sluice/control/api"
)

// The node's own types (package actors) stop here: the API answers with
// the view types of package api, so that the runtime's structs can change
// without changing the JSON.

// operatorViews converts a node's operator statuses.
func operatorViews(ops []status.OperatorStatus) []api.NodeOperator {
	out := make([]api.NodeOperator, 0, len(ops))
	for _, o := range ops {
		v := api.NodeOperator{Name: o.Name, Kind: o.Kind, Parallelism: o.Parallelism, Epoch: o.Epoch, Inputs: o.Inputs, Outputs: o.Outputs,
			Instances: make([]api.NodeInstance, 0, len(o.Instances))}
		for _, in := range o.Instances {
			v.Instances = append(v.Instances, api.NodeInstance{
				Index: in.Index, Epoch: in.Epoch, Node: in.Node, FirstGroup: in.FirstGroup, EndGroup: in.EndGroup, State: string(in.State),
				Restarts: in.Restarts, Processed: in.Processed, Produced: in.Produced, DeadLetters: in.DeadLetters, Queued: in.Queued,
				BlockedNanos: int64(in.Blocked), BusyNanos: int64(in.Busy),
				StateBytes: in.StateBytes, TransientErrors: in.TransientErrors, LastError: in.LastError, FailedReason: in.FailedReason,
				Watermark: watermark(in.Watermark), Finished: in.Finished,
			})
		}
		for _, dl := range o.RecentDeadLetters {
			v.RecentDeadLetters = append(v.RecentDeadLetters, deadLetterView(dl))
		}
		out = append(out, v)
	}
	return out
}

// watermark returns t, or nil for the zero time (no watermark yet).
func watermark(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// deadLetterView converts a dead letter kept by a node.
func deadLetterView(dl status.DeadLetter) api.DeadLetter {
	v := api.DeadLetter{Time: dl.Time, Node: dl.Node, Index: dl.Index, Key: strings.ToValidUTF8(string(dl.Key), "\uFFFD"), KeyBytes: dl.KeyBytes,
		Value: strings.ToValidUTF8(string(dl.Value), "\uFFFD"), ValueBytes: dl.ValueBytes, Headers: make([]api.Header, len(dl.Headers))}
	for i, h := range dl.Headers {
		v.Headers[i] = api.Header{Key: h.Key, Value: h.Value}
	}
	return v
}

// streamCounts converts a node's unread-record counts.
func streamCounts(ss []actors.StreamStatus) []api.StreamCount {
	if len(ss) == 0 {
		return nil
	}
	out := make([]api.StreamCount, len(ss))
	for i, c := range ss {
		out[i] = api.StreamCount{Stream: c.Stream, Dropped: c.Dropped, Held: c.Held}
	}
	return out
}
