package control

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/actors"
	"github.com/sluicehq/sluice/actors/tail"
	"github.com/sluicehq/sluice/control/api"
	"github.com/sluicehq/sluice/internal/core"
	"github.com/sluicehq/sluice/topology"
)

// Subscriber is implemented by nodes that let clients read a stream (GET
// /v1/streams/{name}/tail): actors.Node.
type Subscriber interface {
	Subscribe(ctx context.Context, stream string) (*tail.Subscription, error)
}

var _ Subscriber = (*actors.Node)(nil)

// tail streams the records of a stream as NDJSON (api.TailRecord) until
// the client goes, n records were sent or the node stops.
func (s *Server) tail(w http.ResponseWriter, r *http.Request) {
	if !s.request(w, r, nil, "n") {
		return
	}
	stream := r.PathValue("name")
	limit := -1
	if v := r.URL.Query().Get("n"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			writeError(w, http.StatusBadRequest, fmt.Errorf("n: want a number of records ≥ 1, got %q", v))
			return
		}
		limit = n
	}
	sub, ok := s.node.(Subscriber)
	if !ok {
		writeError(w, http.StatusNotImplemented, fmt.Errorf("node %s cannot tail streams", s.node.ID()))
		return
	}
	if !knownStream(s.node.Topology(), stream) {
		writeError(w, http.StatusNotFound, fmt.Errorf("no stream %q: no deployed operator produces or reads it (sluice graph lists the streams)", stream))
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel() // closes the subscription
	sb, err := sub.Subscribe(ctx, stream)
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, err)
		return
	}
	s.log.Info("control: tailing a stream", "stream", stream, "reader", sb.Operator(), "by", who(r.Context()).name)
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	_ = rc.SetWriteDeadline(time.Now().Add(s.cfg.Limits.WriteTimeout))
	if rc.Flush() != nil { // the client learns it is subscribed
		return
	}
	for sent := 0; limit < 0 || sent < limit; sent++ {
		rec, err := sb.Next(ctx)
		if err != nil {
			return // the client went, or the node stops
		}
		line, err := json.Marshal(tailRecord(rec))
		if err != nil {
			return
		}
		// Each record gets the write timeout of an ordinary answer.
		_ = rc.SetWriteDeadline(time.Now().Add(s.cfg.Limits.WriteTimeout))
		if _, err := w.Write(append(line, '\n')); err != nil {
			return
		}
		if rc.Flush() != nil {
			return
		}
	}
}

// tailRecord converts a record for GET /v1/streams/{name}/tail.
func tailRecord(rec core.Record) api.TailRecord {
	var out api.TailRecord
	out.Key, out.KeyBase64 = api.TextOrBase64(rec.Key)
	out.Value, out.ValueBase64 = api.TextOrBase64(rec.Value)
	out.EventTime = rec.EventTime
	for _, h := range rec.Headers {
		out.Headers = append(out.Headers, api.TailHeader{Key: h.Key, Value: h.Value})
	}
	return out
}

// knownStream reports whether a deployed operator produces or reads stream
// (dead-letter streams of deployed operators included).
func knownStream(t topology.Topology, stream string) bool {
	for _, spec := range t.Operators {
		m := spec.Meta
		if slices.Contains(m.Outputs, stream) || core.DeadLetterStream(m.Name) == stream ||
			slices.ContainsFunc(m.Inputs, func(in core.Input) bool { return in.Stream == stream }) {
			return true
		}
	}
	return false
}
