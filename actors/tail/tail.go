package tail

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sluicehq/sluice/cluster"
	"github.com/sluicehq/sluice/internal/core"
	"github.com/sluicehq/sluice/topology"
)

// Reading a stream from outside (Registry.Subscribe) deploys a reader
// operator named "sluice-tail-<random>" with one instance that reads the
// stream with shuffle routing, of a kind only this node hosts
// (tailKindPrefix + node id, announced in the membership), so that its instance runs here and
// hands every record to the Subscription's channel. A reader that does not
// take records blocks the instance, which then grants no credit: producers
// are held back exactly as by any slow operator, and nothing is dropped.
// Close kills the operator with purge.

// tailKindPrefix starts the kind of a node's subscription readers.
const tailKindPrefix = "sluice.tail@"

// Prefix starts the name of every subscription's reader operator.
const Prefix = "sluice-tail-"

// Subscription delivers the records of one stream to a reader outside the
// operators (Registry.Subscribe). Records are delivered from the moment
// Subscribe returned (when the producer runs on another node: from when
// that node learned of the subscription), each once; after a rollback of
// an exactly-once pipeline, records processed again are delivered again.
// Records held for want of any reader (durability tracking) go to the
// first reader, which may be a subscription.
type Subscription struct {
	r      *Registry
	name   string
	stream string
	recs   chan core.Record
	done   chan struct{}
	once   sync.Once
	err    error
	mu     sync.Mutex
	unctx  func() bool // stops closing on the cancellation of Subscribe's ctx; guarded by mu
}

// ErrClosed is returned by Subscription.Next once the subscription is
// closed.
var ErrClosed = errors.New("tail: subscription closed")

// Next returns the next record, waiting for it until ctx is done or the
// subscription is closed (ErrClosed).
func (s *Subscription) Next(ctx context.Context) (core.Record, error) {
	select {
	case rec := <-s.recs:
		return rec, nil
	case <-s.done:
		return core.Record{}, ErrClosed
	case <-ctx.Done():
		return core.Record{}, ctx.Err()
	}
}

// All returns an iterator over the records; it ends when the subscription
// is closed. Leaving the loop does not close the subscription.
func (s *Subscription) All() iter.Seq[core.Record] {
	return func(yield func(core.Record) bool) {
		for {
			rec, err := s.Next(context.Background())
			if err != nil || !yield(rec) {
				return
			}
		}
	}
}

// Records returns the channel the stream's records arrive on. It is never
// closed: select on Done as well.
func (s *Subscription) Records() <-chan core.Record { return s.recs }

// Done is closed once the subscription is closed (by Close, or because the
// node stops).
func (s *Subscription) Done() <-chan struct{} { return s.done }

// Operator returns the name of the subscription's reader operator.
func (s *Subscription) Operator() string { return s.name }

// Stream returns the stream the subscription reads.
func (s *Subscription) Stream() string { return s.stream }

// Close ends the subscription: the reader operator is killed and its state
// purged, and a record being handed over is given up. It is safe to call
// more than once; later calls return the first call's result.
func (s *Subscription) Close() error {
	s.once.Do(func() {
		s.mu.Lock()
		if s.unctx != nil {
			s.unctx()
		}
		s.mu.Unlock()
		close(s.done)
		s.r.remove(s.name)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		s.err = s.r.kill(ctx, s.name)
	})
	return s.err
}

// Node is what subscriptions need of the node they read on; package
// actors implements it. Its methods must not call the Registry back.
type Node interface {
	// ChangeTopology applies change to the stored topology with
	// check-and-set, retrying on a concurrent change.
	ChangeTopology(ctx context.Context, change func(topology.Topology) (topology.Topology, error)) error
	// Routed reports whether the node's route table has operator reading
	// stream, with its one instance's destination known.
	Routed(stream, operator string) bool
	// Topology returns the topology the node last applied.
	Topology() topology.Topology
	// Stopping reports whether the node's Stop has begun; Life is
	// cancelled when the node stops.
	Stopping() bool
	Life() context.Context
}

// Registry holds a node's open subscriptions by operator name, and makes
// their readers. Safe for concurrent use.
type Registry struct {
	node Node
	kind string // of this node's readers (Kind)

	mu      sync.Mutex // a leaf
	m       map[string]*Subscription
	readers map[string]bool // the reader operators deployed here and not yet forgotten
}

func (r *Registry) add(s *Subscription) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = make(map[string]*Subscription)
		r.readers = make(map[string]bool)
	}
	r.m[s.name] = s
	r.readers[s.name] = true
}

// Forget reports whether name is a reader operator of a closed
// subscription, and forgets it.
func (r *Registry) Forget(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.readers[name] || r.m[name] != nil {
		return false
	}
	delete(r.readers, name)
	return true
}

func (r *Registry) remove(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.m, name)
}

func (r *Registry) get(name string) *Subscription {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.m[name]
}

func (r *Registry) all() []*Subscription {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*Subscription, 0, len(r.m))
	for _, s := range r.m {
		out = append(out, s)
	}
	return out
}

// Readers returns the names of the subscription readers deployed in t
// (operators named Prefix…, see Registry.Subscribe).
func Readers(t topology.Topology) []string {
	var out []string
	for _, spec := range t.Operators {
		if strings.HasPrefix(spec.Meta.Name, Prefix) && strings.HasPrefix(spec.Kind, tailKindPrefix) {
			out = append(out, spec.Meta.Name)
		}
	}
	return out
}

// NewRegistry returns the registry of the node nodeID.
func NewRegistry(nodeID string, node Node) *Registry {
	return &Registry{node: node, kind: kindOf(nodeID)}
}

// kindOf returns the kind of node nodeID's subscription readers: the
// prefix and the node's id, or a digest of an id too long for a kind.
func kindOf(nodeID string) string {
	if k := tailKindPrefix + nodeID; len(k) <= cluster.MaxKindLen {
		return k
	}
	sum := sha256.Sum256([]byte(nodeID))
	return tailKindPrefix + hex.EncodeToString(sum[:])
}

// Kind returns the kind of the node's subscription readers, which only
// this node hosts (it announces it in the membership).
func (r *Registry) Kind() string { return r.kind }

// Reader makes one of the node's subscription readers (the factory of
// Kind).
func (r *Registry) Reader() core.Operator { return &tailOperator{r: r} }

// Len returns the number of open subscriptions and of readers deployed
// and not yet forgotten.
func (r *Registry) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.m) + len(r.readers)
}

// Subscribe starts reading stream from outside the operators: it deploys a
// reader operator and returns once this node routes the stream's records
// to it (or fails when ctx is done first). The subscription is closed when
// ctx is done or by Close; CloseAll closes those left open.
func (r *Registry) Subscribe(ctx context.Context, stream string) (*Subscription, error) {
	if err := core.ValidName(stream); err != nil {
		return nil, fmt.Errorf("tail: subscribe: stream: %w", err)
	}
	if r.node.Stopping() {
		return nil, errors.New("tail: subscribe: the node is stopping")
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := Prefix + hex.EncodeToString(b[:])
	s := &Subscription{r: r, name: name, stream: stream, recs: make(chan core.Record), done: make(chan struct{})}
	r.add(s)
	spec := topology.OperatorSpec{Kind: r.kind, Meta: core.Metadata{
		Name: name, Inputs: []core.Input{{Stream: stream, Routing: core.Shuffle}}, Parallelism: 1,
	}.WithDefaults()}
	if err := r.node.ChangeTopology(ctx, func(t topology.Topology) (topology.Topology, error) {
		next, _, err := t.Deploy(spec, time.Now())
		return next, err
	}); err != nil {
		r.remove(name)
		return nil, fmt.Errorf("tail: subscribe to %q: %w", stream, err)
	}
	if err := r.waitRouted(ctx, stream, name); err != nil {
		return nil, errors.Join(fmt.Errorf("tail: subscribe to %q: %w", stream, err), s.Close())
	}
	s.mu.Lock()
	s.unctx = context.AfterFunc(ctx, func() { _ = s.Close() })
	s.mu.Unlock()
	return s, nil
}

// waitRouted waits until this node's route table has operator reading
// stream.
func (r *Registry) waitRouted(ctx context.Context, stream, operator string) error {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		if r.node.Routed(stream, operator) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-r.node.Life().Done():
			return errors.New("the node stopped")
		case <-tick.C:
		}
	}
}

// kill removes a subscription's reader operator, purging its state.
func (r *Registry) kill(ctx context.Context, name string) error {
	err := r.node.ChangeTopology(ctx, func(t topology.Topology) (topology.Topology, error) {
		if _, ok := t.Find(name); !ok {
			return t, nil
		}
		return t.Kill(name, true)
	})
	if err != nil {
		return fmt.Errorf("tail: close subscription %s: %w", name, err)
	}
	return nil
}

// CloseAll closes every open subscription (on the node's Stop) and removes
// this node's readers still in the topology it last applied; without any
// it does not touch the store (which may be unreachable).
func (r *Registry) CloseAll(ctx context.Context) error {
	var errs []error
	for _, s := range r.all() {
		errs = append(errs, s.Close())
	}
	if t := r.node.Topology(); !slices.ContainsFunc(t.Operators, func(spec topology.OperatorSpec) bool { return spec.Kind == r.kind }) {
		return errors.Join(errs...)
	}
	errs = append(errs, r.node.ChangeTopology(ctx, r.Without))
	return errors.Join(errs...)
}

// Without kills (with purge) the subscription readers of this node in t
// that have no open subscription: after a restart none of them has a
// subscriber.
func (r *Registry) Without(t topology.Topology) (topology.Topology, error) {
	next := t
	for _, spec := range t.Operators {
		if spec.Kind != r.kind || r.get(spec.Meta.Name) != nil {
			continue
		}
		var err error
		if next, err = next.Kill(spec.Meta.Name, true); err != nil {
			return t, err
		}
	}
	return next, nil
}

// tailOperator is a subscription's reader: it hands each record to its
// Subscription, waiting while the reader does not take it.
type tailOperator struct {
	r *Registry
}

func (o *tailOperator) Metadata() core.Metadata {
	return core.Metadata{Name: Prefix + "reader", Inputs: []core.Input{{Stream: "any"}}, Parallelism: 1}
}

func (o *tailOperator) Init(core.Context) error { return nil }

func (o *tailOperator) ProcessRecord(ctx core.Context, rec core.Record) error {
	s := o.r.get(ctx.Instance().Operator)
	if s == nil {
		return nil // closed: the reader is being removed
	}
	rec.Key, rec.Value, rec.Headers = bytes.Clone(rec.Key), bytes.Clone(rec.Value), slices.Clone(rec.Headers)
	select {
	case s.recs <- rec:
	case <-s.done:
	case <-ctx.Done(): // the instance stops: the record is given up
	}
	return nil
}

func (o *tailOperator) ProcessTimer(core.Context, string, time.Time) error { return nil }
