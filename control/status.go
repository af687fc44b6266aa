package control

import (
	"github.com/sluicehq/sluice/actors"
	"github.com/sluicehq/sluice/control/api"
)

// The node's own types (package actors) stop here: the API answers with
// the view types of package api, so that the runtime's structs can change
// without changing the JSON.

// operatorViews converts a node's operator statuses.
func operatorViews(ops []actors.OperatorStatus) []api.NodeOperator {
	out := make([]api.NodeOperator, 0, len(ops))
	for _, o := range ops {
		v := api.NodeOperator{Name: o.Name, Kind: o.Kind, Parallelism: o.Parallelism, Epoch: o.Epoch, Inputs: o.Inputs, Outputs: o.Outputs,
			Instances: make([]api.NodeInstance, 0, len(o.Instances))}
		for _, in := range o.Instances {
			v.Instances = append(v.Instances, api.NodeInstance{
				Index: in.Index, Epoch: in.Epoch, Node: in.Node, FirstGroup: in.FirstGroup, EndGroup: in.EndGroup, State: string(in.State),
				Restarts: in.Restarts, Processed: in.Processed, Produced: in.Produced, DeadLetters: in.DeadLetters, Queued: in.Queued,
				BlockedNanos: int64(in.Blocked),
				StateBytes:   in.StateBytes, TransientErrors: in.TransientErrors, LastError: in.LastError, FailedReason: in.FailedReason,
			})
		}
		out = append(out, v)
	}
	return out
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
