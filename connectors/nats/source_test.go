package nats_test

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	sn "github.com/sluicehq/sluice/connectors/nats"
	"github.com/sluicehq/sluice/internal/natstest"
	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/sdktest"
)

func itoa(i int) string { return strconv.Itoa(i) }

// inStream starts a server with stream "in" on subjects "in.>".
func inStream(t *testing.T) (*natstest.Server, jetstream.JetStream) {
	t.Helper()
	srv := natstest.Start(t, natstest.Options{})
	srv.CreateStream(t, jetstream.StreamConfig{Name: "in", Subjects: []string{"in.>"}})
	return srv, jsOf(t, srv)
}

func sourceFactory(t *testing.T, cfg sn.SourceConfig) sdk.Factory {
	t.Helper()
	f, err := sn.NewSource(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestSourceProducesMessagesWithKeyHeadersAndTime(t *testing.T) {
	srv, js := inStream(t)
	before := time.Now()
	ctx := t.Context()
	for i := range 10 {
		m := &natsgo.Msg{Subject: "in.s" + itoa(i%2), Data: []byte(itoa(i)), Header: natsgo.Header{"k": {"key" + itoa(i%3)}, "x": {"y"}}}
		if _, err := js.PublishMsg(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	publish(t, js, 10, 12, func(int) string { return "in.nokey" })
	h, err := sdktest.New(sourceFactory(t, sn.SourceConfig{Name: "src", Output: "recs", Connection: sn.Connection{URL: srv.URL()},
		Stream: "in", KeyHeader: "k", Bounded: true, MaxPollRecords: 5}), sdktest.WithGuarantee(sdk.ExactlyOnce))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	deadline := time.Now().Add(20 * time.Second)
	for !h.Finished() {
		if err := h.Poll(); err != nil && !errors.Is(err, sdk.ErrEndOfStream) {
			t.Fatalf("Poll: %v", err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("bounded source not finished after 20s; produced %d", len(h.Output("recs")))
		}
	}
	recs := h.Take("recs")
	if len(recs) != 12 {
		t.Fatalf("produced %d records, want 12", len(recs))
	}
	for i, r := range recs {
		if got := string(r.Value); got != itoa(i) {
			t.Fatalf("record %d: value %q, want %q", i, got, itoa(i))
		}
		want := "key" + itoa(i%3)
		if i >= 10 {
			want = "in.nokey" // no key header: the subject
		}
		if string(r.Key) != want {
			t.Errorf("record %d: key %q, want %q", i, r.Key, want)
		}
		if r.EventTime.Before(before.Add(-time.Second)) || r.EventTime.After(time.Now()) {
			t.Errorf("record %d: event time %v, want the message's timestamp (after %v)", i, r.EventTime, before)
		}
		if i < 10 && !slices.Contains(r.Headers, sdk.Header{Key: "x", Value: "y"}) {
			t.Errorf("record %d: headers %v lack x=y", i, r.Headers)
		}
		if !slices.Contains(r.Headers, sdk.Header{Key: sn.HeaderSequence, Value: itoa(i + 1)}) {
			t.Errorf("record %d: headers %v lack %s=%d", i, r.Headers, sn.HeaderSequence, i+1)
		}
	}
	if v, ok := h.GetInGroup(0, []byte("nats/seq/in/*all")); !ok || len(v) != 8 || v[7] != 12 {
		t.Fatalf("position in state %v (%v), want sequence 12", v, ok)
	}
}

func TestSourceResumesFromThePositionInState(t *testing.T) {
	srv, js := inStream(t)
	publish(t, js, 0, 30, func(i int) string { return "in." + itoa(i%3) })
	f := sourceFactory(t, sn.SourceConfig{Name: "src", Output: "recs", Connection: sn.Connection{URL: srv.URL()}, Stream: "in", MaxPollRecords: 7})
	c := newCtx("src", 0, 1, sdk.ExactlyOnce, nil)
	src := f().(*sn.Source)
	must(t, "Init", src.Init(c))
	t.Cleanup(func() { _ = src.Close(c) })
	pollUntil(t, src, c, 14)
	checkpoint := mapState{}
	for k, v := range c.state {
		checkpoint[k] = v
	}
	pollUntil(t, src, c, 30)
	after := values(c.produced[14:])

	r := newCtx("src", 0, 1, sdk.ExactlyOnce, checkpoint)
	restored := f().(*sn.Source)
	must(t, "Init after the restore", restored.Init(r))
	t.Cleanup(func() { _ = restored.Close(r) })
	pollUntil(t, restored, r, 16)
	if got := values(r.produced); !slices.Equal(got, after) {
		t.Fatalf("after the restore produced %v, want what followed the checkpoint: %v", got, after)
	}
}

func TestSourceInstancesSplitTheSubjects(t *testing.T) {
	srv, js := inStream(t)
	publish(t, js, 0, 30, func(i int) string { return []string{"in.a", "in.b.x", "in.c"}[i%3] })
	f := sourceFactory(t, sn.SourceConfig{Name: "src", Output: "recs", Connection: sn.Connection{URL: srv.URL()}, Stream: "in",
		Subjects: []string{"in.a", "in.b.*", "in.c"}, Parallelism: 2})
	var all []string
	for i, want := range []int{20, 10} {
		c := newCtx("src", i, 2, sdk.ExactlyOnce, nil)
		src := f().(*sn.Source)
		must(t, "Init", src.Init(c))
		t.Cleanup(func() { _ = src.Close(c) })
		pollUntil(t, src, c, want)
		for _, r := range c.produced {
			subj := string(r.Key)
			if (i == 0) != (subj == "in.a" || subj == "in.c") {
				t.Errorf("instance %d read %s", i, subj)
			}
			all = append(all, string(r.Value))
		}
	}
	slices.SortFunc(all, func(a, b string) int { x, _ := strconv.Atoi(a); y, _ := strconv.Atoi(b); return x - y })
	for i, v := range all {
		if v != itoa(i) {
			t.Fatalf("the instances together read %v, want 0..29 once each", all)
		}
	}
}

// pollUntil polls src until c holds n records.
func pollUntil(t *testing.T, src *sn.Source, c *callCtx, n int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for len(c.produced) < n {
		if err := src.Poll(c); err != nil {
			t.Fatalf("Poll: %v", err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("produced %d records after 20s, want %d", len(c.produced), n)
		}
	}
	if len(c.produced) != n {
		t.Fatalf("produced %d records, want %d", len(c.produced), n)
	}
}

func values(recs []sdk.Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = string(r.Value)
	}
	return out
}

func TestSourceStartErrorsNameTheField(t *testing.T) {
	srv := natstest.Start(t, natstest.Options{Token: "right"})
	stopped := natstest.Start(t, natstest.Options{})
	stopped.Stop()
	srv.CreateStream(t, jetstream.StreamConfig{Name: "in", Subjects: []string{"in.>"}})
	for _, tc := range []struct {
		name      string
		conn      sn.Connection
		stream    string
		is        error
		transient bool
		field     string
	}{
		{"wrong URL", sn.Connection{URL: stopped.URL(), ConnectTimeout: time.Second}, "in", sn.ErrUnavailable, true, "Connection.URL"},
		{"bad token", sn.Connection{URL: srv.URL(), Token: "wrong"}, "in", sn.ErrAuthentication, false, "Connection.Token"},
		{"no credentials", sn.Connection{URL: srv.URL()}, "in", sn.ErrAuthentication, false, "set User/Password, Token or CredsFile"},
		{"missing stream", sn.Connection{URL: srv.URL(), Token: "right"}, "nope", sn.ErrNoStream, true, "SourceConfig.Stream"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := sourceFactory(t, sn.SourceConfig{Name: "src", Output: "recs", Connection: tc.conn, Stream: tc.stream})
			c := newCtx("src", 0, 1, sdk.ExactlyOnce, nil)
			src := f().(*sn.Source)
			must(t, "Init", src.Init(c))
			defer src.Close(c)
			err := src.Poll(c)
			if !errors.Is(err, tc.is) || errors.Is(err, sdk.ErrTransient) != tc.transient || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("Poll: got %v, want %v (transient %v) naming %s", err, tc.is, tc.transient, tc.field)
			}
		})
	}
}

func TestConfigValidateNamesTheField(t *testing.T) {
	good := sn.SourceConfig{Name: "src", Output: "recs", Connection: sn.Connection{URL: "nats://127.0.0.1:4222"}, Stream: "in"}
	for _, tc := range []struct {
		name  string
		edit  func(*sn.SourceConfig)
		field string
	}{
		{"no URL", func(c *sn.SourceConfig) { c.Connection.URL = "" }, "Connection.URL"},
		{"bad scheme", func(c *sn.SourceConfig) { c.Connection.URL = "http://x:1" }, "Connection.URL"},
		{"no stream", func(c *sn.SourceConfig) { c.Stream = "" }, "SourceConfig.Stream"},
		{"dotted stream", func(c *sn.SourceConfig) { c.Stream = "a.b" }, "SourceConfig.Stream"},
		{"bad subject", func(c *sn.SourceConfig) { c.Subjects = []string{"a.>.b"} }, "SourceConfig.Subjects[0]"},
		{"two credentials", func(c *sn.SourceConfig) { c.Connection.Token, c.Connection.User = "t", "u" }, "only one of"},
		{"password without user", func(c *sn.SourceConfig) { c.Connection.Password = "p" }, "Connection.User"},
		{"missing creds file", func(c *sn.SourceConfig) { c.Connection.CredsFile = "/nonexistent.creds" }, "Connection.CredsFile"},
		{"missing CA", func(c *sn.SourceConfig) { c.Connection.TLS = &sn.TLS{CAFile: "/nonexistent.pem"} }, "Connection.TLS.CAFile"},
		{"cert without key", func(c *sn.SourceConfig) { c.Connection.TLS = &sn.TLS{CertFile: "/x.pem"} }, "Connection.TLS"},
		{"too parallel", func(c *sn.SourceConfig) { c.Parallelism = 2 }, "Parallelism"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := good
			tc.edit(&c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("Validate: got %v, want an error naming %s", err, tc.field)
			}
		})
	}
	if err := good.Validate(); err != nil {
		t.Fatalf("Validate of a good config: %v", err)
	}
	sink := sn.SinkConfig{Name: "out", Inputs: []sdk.Input{{Stream: "s"}}, Connection: sn.Connection{URL: "nats://127.0.0.1:4222"}, Subject: "out.*"}
	if err := sink.Validate(); err == nil || !strings.Contains(err.Error(), "SinkConfig.Subject") {
		t.Fatalf("sink Validate with a wildcard subject: got %v, want an error naming SinkConfig.Subject", err)
	}
}
