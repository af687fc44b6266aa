package natstest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestRestartKeepsStore: a stream and its messages survive Stop and Start
// on the same port, and a client cannot connect while it is stopped.
func TestRestartKeepsStore(t *testing.T) {
	srv := Start(t, Options{})
	srv.CreateStream(t, jetstream.StreamConfig{Name: "s", Subjects: []string{"s.>"}})
	nc := srv.Connect(t)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for range 3 {
		if _, err := js.Publish(ctx, "s.a", []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	port := srv.Port()
	srv.Stop()
	if _, err := nats.Connect(srv.URL(), nats.Timeout(time.Second)); err == nil {
		t.Fatal("connected to a stopped server")
	}
	srv.Start()
	if srv.Port() != port {
		t.Fatalf("port after restart: got %d, want %d", srv.Port(), port)
	}
	info := srv.CreateStream(t, jetstream.StreamConfig{Name: "s", Subjects: []string{"s.>"}})
	if info.State.Msgs != 3 {
		t.Fatalf("messages after restart: got %d, want 3", info.State.Msgs)
	}
}

// TestPause: a paused server does not answer; resumed, it does.
func TestPause(t *testing.T) {
	srv := Start(t, Options{Token: "secret"})
	nc := srv.Connect(t)
	srv.Pause()
	if err := nc.FlushTimeout(300 * time.Millisecond); err == nil {
		t.Fatal("a paused server answered a flush")
	}
	srv.Resume()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := nc.FlushTimeout(time.Second)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no answer after resume: %v", err)
		}
	}
}

// TestToken: a client without the token is refused.
func TestToken(t *testing.T) {
	srv := Start(t, Options{Token: "secret"})
	_, err := nats.Connect(srv.URL(), nats.Timeout(2*time.Second), nats.NoReconnect())
	if !errors.Is(err, nats.ErrAuthorization) {
		t.Fatalf("connect without token: got %v, want %v", err, nats.ErrAuthorization)
	}
	srv.Connect(t)
}
