package nats_test

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	sn "github.com/sluicehq/sluice/connectors/nats"
	"github.com/sluicehq/sluice/creds/credstest"
	"github.com/sluicehq/sluice/internal/natstest"
	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/sdktest"
)

// outStream starts a server with stream "out" on "out.>" keeping message
// ids for dupes.
func outStream(t *testing.T, dupes time.Duration) (*natstest.Server, jetstream.JetStream) {
	t.Helper()
	srv := natstest.Start(t, natstest.Options{})
	srv.CreateStream(t, jetstream.StreamConfig{Name: "out", Subjects: []string{"out.>"}, Duplicates: dupes})
	return srv, jsOf(t, srv)
}

func sinkFactory(t *testing.T, cfg sn.SinkConfig) sdk.Factory {
	t.Helper()
	f, err := sn.NewSink(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func sinkConfig(srv *natstest.Server) sn.SinkConfig {
	return sn.SinkConfig{Name: "out", Inputs: []sdk.Input{{Stream: "s"}}, Connection: sn.Connection{URL: srv.URL()},
		Subject: "out", SubjectFromKey: true, Stream: "out"}
}

func TestSinkPublishesEveryRecordBeforeClosing(t *testing.T) {
	srv, js := outStream(t, 0)
	stats := new(sn.Stats)
	cfg := sinkConfig(srv)
	cfg.Stats, cfg.SubjectHeader = stats, "to"
	h, err := sdktest.New(sinkFactory(t, cfg), sdktest.WithGuarantee(sdk.AtLeastOnce))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		must(t, "Send", h.Send("s", sdk.Record{Key: []byte("k" + itoa(i%4)), Value: []byte(itoa(i)), Headers: []sdk.Header{{Key: "h", Value: "v"}}}))
	}
	must(t, "Send", h.Send("s", sdk.Record{Key: []byte("ignored"), Value: []byte("routed"), Headers: []sdk.Header{{Key: "to", Value: "out.by.header"}}}))
	must(t, "Close", h.Close()) // waits for the acks
	msgs := readStream(t, js, "out")
	if last := msgs[len(msgs)-1]; last.Subject() != "out.by.header" || string(last.Data()) != "routed" {
		t.Fatalf("the record with a subject header went to %s (%q), want out.by.header", last.Subject(), last.Data())
	}
	msgs = msgs[:len(msgs)-1]
	if len(msgs) != 100 {
		t.Fatalf("%d messages in the stream, want 100", len(msgs))
	}
	for i, m := range msgs {
		if string(m.Data()) != itoa(i) || m.Subject() != "out.k"+itoa(i%4) || m.Headers().Get("h") != "v" {
			t.Fatalf("message %d: %s %q headers %v, want out.k%d %q h=v", i, m.Subject(), m.Data(), m.Headers(), i%4, itoa(i))
		}
	}
	if stats.Messages() != 101 || stats.Bytes() == 0 {
		t.Fatalf("stats: %d messages, %d bytes; want 101 and some", stats.Messages(), stats.Bytes())
	}
}

// eoSink makes an exactly-once sink instance on c, closed at cleanup.
func eoSink(t *testing.T, f sdk.Factory, c *callCtx) *sn.Sink {
	t.Helper()
	s := f().(*sn.Sink)
	must(t, "Init", s.Init(c))
	t.Cleanup(func() { _ = s.Close(c) })
	return s
}

func writeRecs(t *testing.T, s *sn.Sink, c *callCtx, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		must(t, "ProcessRecord", s.ProcessRecord(c, sdk.Record{Key: []byte("k" + itoa(i%3)), Value: []byte(itoa(i))}))
	}
}

// exactly checks that msgs hold the values from..to-1 once each, in order.
func exactly(t *testing.T, msgs []jetstream.Msg, from, to int) {
	t.Helper()
	var got []string
	for _, m := range msgs {
		got = append(got, string(m.Data()))
	}
	var want []string
	for i := from; i < to; i++ {
		want = append(want, itoa(i))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("the stream holds %d messages %v…, want %d: %v…", len(got), head(got), len(want), head(want))
	}
}

func head(xs []string) []string { return xs[:min(len(xs), 12)] }

func TestExactlyOnceSinkPublishesOnCommitAndARepeatedCommitIsDeduplicated(t *testing.T) {
	srv, js := outStream(t, time.Hour)
	stats := new(sn.Stats)
	cfg := sinkConfig(srv)
	cfg.Stats = stats
	f := sinkFactory(t, cfg)
	c := newCtx("out", 0, 1, sdk.ExactlyOnce, nil)
	s := eoSink(t, f, c)

	writeRecs(t, s, c, 0, 50)
	must(t, "PreCommit(1)", s.PreCommit(c, 1))
	checkpoint1 := maps.Clone(c.state)
	writeRecs(t, s, c, 50, 80) // after the barrier: checkpoint 2's
	if n := streamMsgs(t, js, "out"); n != 0 {
		t.Fatalf("%d messages published before any Commit, want none", n)
	}
	must(t, "Commit(1)", s.Commit(c, 1))
	waitStream(t, js, 50)
	exactly(t, readStream(t, js, "out"), 0, 50)
	// The next barrier deletes what is acknowledged: its checkpoint holds
	// only checkpoint 2's records.
	must(t, "PreCommit(2)", s.PreCommit(c, 2))
	if keys := c.state.keys("nats/ck/"); len(keys) != 1 {
		t.Fatalf("state lists pre-committed epochs %q after PreCommit(2), want checkpoint 2's alone", keys)
	}
	if n := len(c.state.keys("nats/out/")); n != 30 {
		t.Fatalf("state keeps %d records after PreCommit(2), want checkpoint 2's 30", n)
	}

	// A crash: restored from checkpoint 1, whose Commit runs again.
	r := newCtx("out", 0, 1, sdk.ExactlyOnce, maps.Clone(checkpoint1))
	restored := eoSink(t, f, r)
	must(t, "Commit(1) after the restore", restored.Commit(r, 1))
	waitFor(t, "the repeated commit's 50 duplicates acknowledged", func() bool { return stats.Duplicates() == 50 })
	exactly(t, readStream(t, js, "out"), 0, 50)
	// The source replays what followed checkpoint 1.
	writeRecs(t, restored, r, 50, 80)
	must(t, "PreCommit(2)", restored.PreCommit(r, 2))
	writeRecs(t, restored, r, 80, 90)
	must(t, "PreCommit(3)", restored.PreCommit(r, 3))
	must(t, "Commit(3)", restored.Commit(r, 3)) // commits 2 as well
	must(t, "Commit(3) again", restored.Commit(r, 3))
	waitStream(t, js, 90)
	exactly(t, readStream(t, js, "out"), 0, 90)

	// An instance restart between barriers keeps the records so far.
	writeRecs(t, restored, r, 90, 95)
	again := eoSink(t, f, r)
	writeRecs(t, again, r, 95, 100)
	must(t, "PreCommit(4)", again.PreCommit(r, 4))
	must(t, "Commit(4)", again.Commit(r, 4))
	waitStream(t, js, 100)
	exactly(t, readStream(t, js, "out"), 0, 100)
}

// waitStream waits until the stream "out" holds n messages.
func waitStream(t *testing.T, js jetstream.JetStream, n uint64) {
	t.Helper()
	waitFor(t, fmt.Sprintf("%d messages in the stream", n), func() bool { return streamMsgs(t, js, "out") >= n })
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	sluicetest.WaitEvery(t, 20*time.Second, 10*time.Millisecond, what, cond)
}

func TestExactlyOnceSinkRefusesAShortDuplicateWindow(t *testing.T) {
	srv, _ := outStream(t, 10*time.Second)
	c := newCtx("out", 0, 1, sdk.ExactlyOnce, nil)
	s := eoSink(t, sinkFactory(t, sinkConfig(srv)), c)
	writeRecs(t, s, c, 0, 5)
	must(t, "PreCommit(1)", s.PreCommit(c, 1))
	err := s.Commit(c, 1)
	if !errors.Is(err, sn.ErrDuplicateWindow) || !strings.Contains(err.Error(), "MinDuplicateWindow") {
		t.Fatalf("Commit on a stream keeping ids 10s: got %v, want %v naming MinDuplicateWindow", err, sn.ErrDuplicateWindow)
	}
}

func TestExactlyOnceSinkRefusesGroupByInputs(t *testing.T) {
	srv, _ := outStream(t, 0)
	cfg := sinkConfig(srv)
	cfg.Inputs = []sdk.Input{{Stream: "s", Routing: sdk.GroupBy}}
	err := sinkFactory(t, cfg)().Init(newCtx("out", 0, 1, sdk.ExactlyOnce, nil))
	if err == nil || !strings.Contains(err.Error(), "SinkConfig.Inputs[0]") {
		t.Fatalf("Init: got %v, want an error naming SinkConfig.Inputs[0]", err)
	}
}

func TestTLSAndClientCertificates(t *testing.T) {
	ca := credstest.NewCA(t, "nats-ca")
	server := ca.Node(t, "server")
	client := ca.Client(t, "client")
	srv := natstest.Start(t, natstest.Options{User: "u", Password: "p", TLS: &natstest.TLS{Cert: server.Cert, Key: server.Key, CA: ca.CertFile, VerifyClients: true,
		ClientCert: client.Cert, ClientKey: client.Key}})
	srv.CreateStream(t, jetstream.StreamConfig{Name: "in", Subjects: []string{"in.>"}})
	for _, tc := range []struct {
		name  string
		conn  sn.Connection
		field string // "" for success
	}{
		{"verified", sn.Connection{URL: srv.URL(), User: "u", Password: "p", TLS: &sn.TLS{CAFile: ca.CertFile, CertFile: client.Cert, KeyFile: client.Key}}, ""},
		{"unknown CA", sn.Connection{URL: srv.URL(), User: "u", Password: "p", TLS: &sn.TLS{CertFile: client.Cert, KeyFile: client.Key}}, "Connection.TLS.CAFile"},
		{"no client certificate", sn.Connection{URL: srv.URL(), User: "u", Password: "p", TLS: &sn.TLS{CAFile: ca.CertFile}}, "Connection.TLS"},
		{"bad password", sn.Connection{URL: srv.URL(), User: "u", Password: "x", TLS: &sn.TLS{CAFile: ca.CertFile, CertFile: client.Cert, KeyFile: client.Key}}, "Connection.User and Connection.Password"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := sourceFactory(t, sn.SourceConfig{Name: "src", Output: "recs", Connection: tc.conn, Stream: "in"})
			c := newCtx("src", 0, 1, sdk.ExactlyOnce, nil)
			src := f().(*sn.Source)
			must(t, "Init", src.Init(c))
			defer src.Close(c)
			err := src.Poll(c)
			if tc.field == "" {
				must(t, "Poll", err)
				return
			}
			if !errors.Is(err, sn.ErrAuthentication) || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("Poll: got %v, want %v naming %s", err, sn.ErrAuthentication, tc.field)
			}
		})
	}
}
