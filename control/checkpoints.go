package control

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/actors"
	"github.com/sluicehq/sluice/checkpoint"
	"github.com/sluicehq/sluice/control/api"
)

// Checkpointer is implemented by nodes that take checkpoints (every
// *actors.Node; those not exactly-once answer actors.ErrNoCheckpoints).
// The checkpoint endpoints answer 404 on a node without it.
//
// Any node answers every checkpoint endpoint: the list and the details
// are read from the checkpoint store, which every node of an exactly-once
// cluster shares, and a node that does not coordinate forwards a savepoint
// request to the coordinator itself (over the node-to-node connection,
// which needs no control API credentials), so the caller needs no idea
// which node coordinates.
type Checkpointer interface {
	Checkpoint(ctx context.Context) (uint64, error)
	CheckpointStatus(ctx context.Context) (actors.CheckpointStats, error)
	Checkpoints(ctx context.Context) ([]checkpoint.Meta, error)
	CheckpointMeta(ctx context.Context, id uint64) (checkpoint.Meta, error)
}

var _ Checkpointer = (*actors.Node)(nil)

// checkpointer returns the node as a Checkpointer, or writes 404.
func (s *Server) checkpointer(w http.ResponseWriter) (Checkpointer, bool) {
	c, ok := s.node.(Checkpointer)
	if !ok {
		writeError(w, http.StatusNotFound, actors.ErrNoCheckpoints)
	}
	return c, ok
}

// checkpointError answers err: 404 when checkpoints are off or the
// checkpoint does not exist, else 503 (the store unreachable, say).
func checkpointError(w http.ResponseWriter, err error) {
	code := http.StatusServiceUnavailable
	if errors.Is(err, actors.ErrNoCheckpoints) || errors.Is(err, checkpoint.ErrNotFound) {
		code = http.StatusNotFound
	}
	writeError(w, code, err)
}

func (s *Server) listCheckpoints(w http.ResponseWriter, r *http.Request) {
	if !s.request(w, r, nil) {
		return
	}
	c, ok := s.checkpointer(w)
	if !ok {
		return
	}
	list, err := c.Checkpoints(r.Context())
	if err != nil {
		checkpointError(w, err)
		return
	}
	out := make([]api.CheckpointView, len(list))
	for i, m := range list {
		out[i] = checkpointView(m)
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) getCheckpoint(w http.ResponseWriter, r *http.Request) {
	if !s.request(w, r, nil) {
		return
	}
	c, ok := s.checkpointer(w)
	if !ok {
		return
	}
	id, err := strconv.ParseUint(r.PathValue("id"), 10, 64)
	if err != nil {
		writeError(w, http.StatusBadRequest, fmt.Errorf("checkpoint id %q: want a number, as GET /v1/checkpoints lists", r.PathValue("id")))
		return
	}
	m, err := c.CheckpointMeta(r.Context(), id)
	if err != nil {
		checkpointError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, checkpointDetail(m))
}

// takeCheckpoint takes a savepoint and answers it once complete.
func (s *Server) takeCheckpoint(w http.ResponseWriter, r *http.Request) {
	if !s.request(w, r, nil) {
		return
	}
	c, ok := s.checkpointer(w)
	if !ok {
		return
	}
	// Answer before the server's write timeout cuts the connection.
	ctx, cancel := context.WithTimeout(r.Context(), max(s.cfg.Limits.WriteTimeout-time.Second, time.Second))
	defer cancel()
	id, err := c.Checkpoint(ctx)
	if err != nil {
		checkpointError(w, fmt.Errorf("savepoint: %w", err))
		return
	}
	m, err := c.CheckpointMeta(ctx, id)
	if err != nil {
		checkpointError(w, fmt.Errorf("savepoint %d complete, but: %w", id, err))
		return
	}
	s.log.Info("control: savepoint taken", "checkpoint", id, "by", who(r.Context()).name)
	writeJSON(w, http.StatusCreated, checkpointView(m))
}

// checkpointView describes one checkpoint.
func checkpointView(m checkpoint.Meta) api.CheckpointView {
	v := api.CheckpointView{ID: m.ID, Savepoint: m.Savepoint, Started: m.Started, Completed: m.Completed,
		DurationMS: m.Duration().Milliseconds(), Uploaded: m.Uploaded(), Size: m.Size(), TopologyVersion: m.TopologyVersion}
	for _, p := range m.Nodes {
		v.Instances += len(p.Groups)
	}
	return v
}

// checkpointDetail describes one checkpoint with its nodes' parts.
func checkpointDetail(m checkpoint.Meta) api.CheckpointDetail {
	d := api.CheckpointDetail{CheckpointView: checkpointView(m), Nodes: make([]api.CheckpointNode, 0, len(m.Nodes)),
		Note: "source positions and sinks' pending commits are operator state, inside the instances' key groups"}
	for _, p := range m.Nodes {
		n := api.CheckpointNode{Node: p.Node, DB: p.DB, Files: len(p.Files), Uploaded: p.Uploaded, Instances: make([]api.CheckpointInstance, 0, len(p.Groups))}
		for _, f := range p.Files {
			n.Size += f.Size
		}
		for _, g := range p.Groups {
			n.Instances = append(n.Instances, api.CheckpointInstance{Operator: g.Operator, Epoch: g.Epoch, Index: g.Index,
				FirstGroup: g.First, EndGroup: g.End, StateBytes: g.StateBytes})
		}
		slices.SortFunc(n.Instances, func(a, b api.CheckpointInstance) int {
			return cmp.Or(cmp.Compare(a.Operator, b.Operator), cmp.Compare(a.Epoch, b.Epoch), cmp.Compare(a.Index, b.Index))
		})
		d.Nodes = append(d.Nodes, n)
	}
	return d
}

// checkpointStatus returns the node's account of checkpoints, or nil when
// it takes none.
func (s *Server) checkpointStatus(ctx context.Context) *api.CheckpointStatus {
	c, ok := s.node.(Checkpointer)
	if !ok {
		return nil
	}
	st, err := c.CheckpointStatus(ctx)
	if errors.Is(err, actors.ErrNoCheckpoints) {
		return nil
	}
	if err != nil {
		return &api.CheckpointStatus{Error: err.Error()}
	}
	out := &api.CheckpointStatus{Coordinator: st.CoordinatorNode, Completed: st.Completed, Failed: st.Failed,
		Last: st.Last, LastSavepoint: st.LastSavepoint, LastTime: st.LastTime, LastDurationMS: st.LastDuration.Milliseconds(),
		LastUploaded: st.LastUploaded, LastSize: st.LastSize, InProgress: st.InProgress,
		ConsecutiveFailures: st.ConsecutiveFailures, LastError: st.LastError, LastFailure: st.LastFailure,
		Generation: st.Generation, Rollbacks: st.Rollbacks}
	if out.Coordinator == "" && st.Coordinator {
		out.Coordinator = s.node.ID()
	}
	if !st.LastTime.IsZero() {
		out.LastAgeMS = time.Since(st.LastTime).Milliseconds()
	}
	return out
}

// checkpoints returns the coordinator's account of checkpoints from the
// gathered nodes' statuses (nil when checkpoints are off).
func (v view) checkpoints() *api.CheckpointStatus {
	var any *api.CheckpointStatus
	for id, st := range v.nodes {
		c := st.Checkpoints
		if c == nil {
			continue
		}
		if c.Coordinator == id {
			return c
		}
		any = c
	}
	if any == nil {
		return nil
	}
	if e, ok := v.errs[any.Coordinator]; ok {
		return &api.CheckpointStatus{Coordinator: any.Coordinator, Error: fmt.Sprintf("the coordinator did not answer: %s", e)}
	}
	return &api.CheckpointStatus{Coordinator: any.Coordinator, Error: "no node answered as the coordinator"}
}
