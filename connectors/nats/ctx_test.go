package nats_test

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/internal/natstest"
	"github.com/sluicehq/sluice/sdk"
)

// callCtx is an sdk.Context for calling an operator's methods directly,
// as the runtime does, with its state in memory (one key group): what a
// checkpoint holds is a snapshot of it.
type callCtx struct {
	context.Context
	info     sdk.InstanceInfo
	state    mapState
	produced []sdk.Record
}

func newCtx(op string, index, par int, g sdk.Guarantee, state mapState) *callCtx {
	if state == nil {
		state = mapState{}
	}
	return &callCtx{Context: context.Background(), state: state,
		info: sdk.InstanceInfo{Operator: op, Index: index, Parallelism: par, KeyGroups: par, FirstGroup: index, EndGroup: index + 1, Guarantee: g}}
}

func (c *callCtx) Produce(_ string, rec sdk.Record) error {
	c.produced = append(c.produced, rec)
	return nil
}
func (c *callCtx) SetTimer(string, time.Time) error      { return nil }
func (c *callCtx) DeleteTimer(string) error              { return nil }
func (c *callCtx) SetEventTimer(string, time.Time) error { return nil }
func (c *callCtx) DeleteEventTimer(string) error         { return nil }
func (c *callCtx) Watermark() time.Time                  { return time.Time{} }
func (c *callCtx) State() sdk.State                      { return c.state }
func (c *callCtx) Instance() sdk.InstanceInfo            { return c.info }
func (c *callCtx) Logger() *slog.Logger                  { return slog.New(slog.DiscardHandler) }

// mapState is the state of an instance with one key group.
type mapState map[string][]byte

func (m mapState) Get(k []byte) ([]byte, error) {
	if v, ok := m[string(k)]; ok {
		return v, nil
	}
	return nil, sdk.ErrNotFound
}
func (m mapState) Set(k, v []byte) { m[string(k)] = slices.Clone(v) }
func (m mapState) Delete(k []byte) { delete(m, string(k)) }
func (m mapState) Scan(prefix []byte, fn func(k, v []byte) error) error {
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if strings.HasPrefix(k, string(prefix)) {
			if err := fn([]byte(k), m[k]); err != nil {
				return err
			}
		}
	}
	return nil
}

// keys returns the state's keys with prefix.
func (m mapState) keys(prefix string) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if strings.HasPrefix(k, prefix) {
			out = append(out, k)
		}
	}
	return out
}

func must(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// jsOf returns a JetStream context on srv, its connection closed at cleanup.
func jsOf(t *testing.T, srv *natstest.Server) jetstream.JetStream {
	t.Helper()
	js, err := jetstream.New(srv.Connect(t))
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// publish publishes msgs to subject(i) with data "i" for i in [from, to),
// waiting for each ack.
func publish(t *testing.T, js jetstream.JetStream, from, to int, subject func(i int) string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var fs []jetstream.PubAckFuture
	for i := from; i < to; i++ {
		f, err := js.PublishAsync(subject(i), []byte(itoa(i)))
		if err != nil {
			t.Fatalf("publish %d: %v", i, err)
		}
		fs = append(fs, f)
	}
	for i, f := range fs {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			t.Fatalf("publish %d: %v", from+i, err)
		case <-ctx.Done():
			t.Fatalf("publish %d: no ack", from+i)
		}
	}
}

// readStream returns every message of stream (subject and data), read
// by an ordered consumer from the start until the stream's last message.
func readStream(t *testing.T, js jetstream.JetStream, stream string) []jetstream.Msg {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := js.Stream(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	n := st.CachedInfo().State.Msgs
	if n == 0 {
		return nil
	}
	c, err := js.OrderedConsumer(ctx, stream, jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	var out []jetstream.Msg
	for uint64(len(out)) < n {
		b, err := c.Fetch(int(n)-len(out), jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		for m := range b.Messages() {
			out = append(out, m)
		}
		if b.Error() != nil {
			t.Fatal(b.Error())
		}
	}
	return out
}

// streamMsgs returns the number of messages in stream.
func streamMsgs(t *testing.T, js jetstream.JetStream, stream string) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := js.Stream(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	return st.CachedInfo().State.Msgs
}
