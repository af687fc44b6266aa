package sdktest

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/sluicehq/sluice/placement"
	"github.com/sluicehq/sluice/sdk"
)

// Graph runs several operators wired by their streams, every instance of
// each (its Parallelism) as a Harness. Records are routed as the runtime
// routes them (group-by: by the key's key group to the instance owning
// it; broadcast: to every instance; shuffle and round-robin: to the
// instances in turn, deterministically), and every step runs the graph
// until no record is left in flight. A callback that fails stops the step:
// its error is returned and the records still in flight (the failing one
// and those queued after it) are dropped, where the runtime retries the
// failing record on the restarted instance and then delivers the rest;
// send them again to do what the runtime does (internal/conformance
// does). A record refused as bad (sdk.ErrBadRecord) does not stop the
// step: it is dead-lettered, the rest are delivered, and its error is
// returned at the end, as the runtime dead-letters it and goes on. A
// Graph is not safe for concurrent use.
type Graph struct {
	ops    []*graphOp // in stream order (upstream first)
	byName map[string]*graphOp
	subs   map[string][]*graphOp // stream → its readers
	out    map[string][]sdk.Record
	queue  []Produced

	wm time.Time // the sources' watermark last passed downstream
}

type graphOp struct {
	meta  sdk.Metadata
	insts []*Harness
	next  int // the next instance for shuffle and round-robin
}

// NewGraph creates every instance of every operator (see New; opts apply
// to every instance, WithInstance excepted).
func NewGraph(factories []sdk.Factory, opts ...Option) (*Graph, error) {
	g := &Graph{byName: map[string]*graphOp{}, subs: map[string][]*graphOp{}, out: map[string][]sdk.Record{}}
	var ops []*graphOp
	for _, f := range factories {
		meta := f().Metadata().WithDefaults()
		if g.byName[meta.Name] != nil {
			return nil, fmt.Errorf("sdktest: operator %q is listed twice", meta.Name)
		}
		op := &graphOp{meta: meta}
		for idx := range meta.Parallelism {
			h, err := New(f, append(slices.Clone(opts), WithInstance(idx))...)
			if err != nil {
				return nil, err
			}
			h.keepLog = true
			op.insts = append(op.insts, h)
		}
		g.byName[meta.Name] = op
		ops = append(ops, op)
		for _, in := range meta.Inputs {
			g.subs[in.Stream] = append(g.subs[in.Stream], op)
		}
	}
	g.ops = streamOrder(ops)
	for _, op := range g.ops {
		for _, h := range op.insts {
			g.collect(h) // what Init produced
		}
	}
	return g, g.run()
}

// streamOrder sorts ops so that an operator comes after those producing to
// its inputs (Kahn's algorithm); operators on a cycle keep their order.
func streamOrder(ops []*graphOp) []*graphOp {
	producers := map[string][]*graphOp{}
	for _, op := range ops {
		for _, s := range op.meta.Outputs {
			producers[s] = append(producers[s], op)
		}
	}
	done := map[*graphOp]bool{}
	var order []*graphOp
	for len(order) < len(ops) {
		progress := false
		for _, op := range ops {
			if done[op] {
				continue
			}
			ready := true
			for _, in := range op.meta.Inputs {
				for _, p := range producers[in.Stream] {
					if p != op && !done[p] {
						ready = false
					}
				}
			}
			if ready {
				done[op], order, progress = true, append(order, op), true
			}
		}
		if !progress { // a cycle: take the first left, in declared order
			for _, op := range ops {
				if !done[op] {
					done[op], order = true, append(order, op)
					break
				}
			}
		}
	}
	return order
}

// Instance returns the harness of instance index of operator op, to read
// its state and timers, or nil.
func (g *Graph) Instance(op string, index int) *Harness {
	o := g.byName[op]
	if o == nil || index < 0 || index >= len(o.insts) {
		return nil
	}
	return o.insts[index]
}

// Send delivers recs to the readers of stream, as if produced from outside,
// and runs the graph until nothing is in flight.
func (g *Graph) Send(stream string, recs ...sdk.Record) error {
	if len(g.subs[stream]) == 0 {
		return fmt.Errorf("sdktest: no operator reads stream %q", stream)
	}
	for _, r := range recs {
		g.queue = append(g.queue, Produced{Stream: stream, Record: r})
	}
	return g.run()
}

// Poll calls Poll once on every instance of source op (unless finished)
// and runs the graph. It reports whether every instance has finished
// (returned sdk.ErrEndOfStream).
func (g *Graph) Poll(op string) (finished bool, err error) {
	o := g.byName[op]
	if o == nil {
		return false, fmt.Errorf("sdktest: no operator %q", op)
	}
	finished = true
	for _, h := range o.insts {
		if h.Finished() {
			continue
		}
		err := h.Poll()
		g.collect(h)
		if err != nil && !errors.Is(err, sdk.ErrEndOfStream) {
			return false, err
		}
		finished = finished && h.Finished()
	}
	if err := g.run(); err != nil {
		return false, err
	}
	return finished, g.followSources()
}

// PollSources polls every source once (see Poll). It reports whether
// every source has finished.
func (g *Graph) PollSources() (finished bool, err error) {
	finished = true
	for _, op := range g.ops {
		if _, ok := op.insts[0].op.(sdk.Source); !ok {
			continue
		}
		fin, err := g.Poll(op.meta.Name)
		if err != nil {
			return false, err
		}
		finished = finished && fin
	}
	return finished, nil
}

// followSources moves the watermark of every operator to the minimum of
// the sources' watermarks (a finished source's is EndOfTime), in stream
// order, as watermarks travel in the runtime; it holds while a source that
// has not finished has none (no strategy, or nothing produced yet).
func (g *Graph) followSources() error {
	wm := EndOfTime
	for _, op := range g.ops {
		if _, src := op.insts[0].op.(sdk.Source); !src || len(op.meta.Inputs) > 0 {
			continue
		}
		for _, h := range op.insts {
			switch {
			case h.Finished():
			case h.Watermark().IsZero():
				return nil
			case h.Watermark().Before(wm):
				wm = h.Watermark()
			}
		}
	}
	if !wm.After(g.wm) {
		return nil
	}
	g.wm = wm
	return g.each(func(h *Harness) error {
		if wm.After(h.Watermark()) {
			return h.AdvanceWatermark(wm)
		}
		return nil
	})
}

// RunSources calls PollSources until every source has finished, at most
// maxPolls rounds, then ends the graph (End).
func (g *Graph) RunSources(maxPolls int) error {
	for range maxPolls {
		fin, err := g.PollSources()
		if err != nil {
			return err
		}
		if fin {
			return g.End()
		}
	}
	return fmt.Errorf("sdktest: sources not finished after %d polls", maxPolls)
}

// AdvanceTime moves every instance's processing time forward by d, firing
// due timers (see Harness.SetTime), and runs the graph.
func (g *Graph) AdvanceTime(d time.Duration) error {
	return g.each(func(h *Harness) error { return h.AdvanceTime(d) })
}

// AdvanceWatermark moves every instance's watermark to wm, operator by
// operator in stream order, running the graph after each: what an upstream
// operator's event timers produce reaches downstream operators before
// their watermark passes it.
func (g *Graph) AdvanceWatermark(wm time.Time) error {
	return g.each(func(h *Harness) error { return h.AdvanceWatermark(wm) })
}

// End ends every operator's input in stream order (see Harness.End).
func (g *Graph) End() error { return g.each((*Harness).End) }

func (g *Graph) each(fn func(*Harness) error) error {
	for _, op := range g.ops {
		for _, h := range op.insts {
			err := fn(h)
			g.collect(h)
			if err != nil {
				return err
			}
		}
		if err := g.run(); err != nil {
			return err
		}
	}
	return nil
}

// collect moves what h produced to the queue and the outputs.
func (g *Graph) collect(h *Harness) {
	for _, p := range h.takeLog() {
		g.out[p.Stream] = append(g.out[p.Stream], p.Record)
		g.queue = append(g.queue, p)
	}
}

// run delivers queued records, in order, until none is left. A record an
// operator refuses as bad (sdk.ErrBadRecord) is dead-lettered by its
// Harness and the others go on, as in the runtime; the bad records'
// errors are returned once the queue is empty. Any other failure stops
// the run.
func (g *Graph) run() error {
	defer func() { g.queue = g.queue[:0] }()
	var bad []error
	for j := 0; j < len(g.queue); j++ { // delivering appends to the queue
		p := g.queue[j]
		for _, op := range g.subs[p.Stream] {
			for _, h := range op.route(p) {
				err := h.Send(p.Stream, p.Record)
				g.collect(h)
				if err == nil {
					continue
				}
				err = fmt.Errorf("operator %q instance %d: %w", op.meta.Name, h.info.Index, err)
				if !errors.Is(err, sdk.ErrBadRecord) {
					return errors.Join(append(bad, err)...)
				}
				bad = append(bad, err)
			}
		}
	}
	return errors.Join(bad...)
}

// route picks the instances of op that receive p.
func (op *graphOp) route(p Produced) []*Harness {
	var routing sdk.Routing
	for _, in := range op.meta.Inputs {
		if in.Stream == p.Stream {
			routing = in.Routing
		}
	}
	switch routing {
	case sdk.GroupBy:
		kg := placement.KeyGroup(p.Record.Key, op.meta.KeyGroups)
		idx := placement.InstanceFor(kg, op.meta.KeyGroups, len(op.insts))
		return op.insts[idx : idx+1]
	case sdk.Broadcast:
		return op.insts
	}
	h := op.insts[op.next%len(op.insts)]
	op.next++
	return []*Harness{h}
}

// Output returns the records produced to stream (by any operator) and not
// yet taken.
func (g *Graph) Output(stream string) []sdk.Record { return g.out[stream] }

// Take returns and forgets the records produced to stream.
func (g *Graph) Take(stream string) []sdk.Record {
	r := g.out[stream]
	delete(g.out, stream)
	return r
}
