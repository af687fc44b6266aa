package nats

import (
	"context"
	"errors"
	"fmt"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// dial connects to c's servers as name, with h's handlers, and returns the
// connection with its JetStream context (jsOpts added). A connection
// reconnects for ever once established; a failed first connection is
// classified by h.connectError.
func dial(c Connection, name string, h *health, jsOpts ...jetstream.JetStreamOpt) (*natsgo.Conn, jetstream.JetStream, error) {
	opts := []natsgo.Option{
		natsgo.Name(name),
		natsgo.Timeout(c.ConnectTimeout),
		natsgo.MaxReconnects(-1),
		natsgo.ReconnectWait(c.ReconnectWait),
		natsgo.ReconnectJitter(c.ReconnectWait/4, c.ReconnectWait/4),
		natsgo.ReconnectBufSize(-1), // publishes fail while down instead of piling up in memory
	}
	switch {
	case c.User != "":
		opts = append(opts, natsgo.UserInfo(c.User, c.Password))
	case c.Token != "":
		opts = append(opts, natsgo.Token(c.Token))
	case c.CredsFile != "":
		opts = append(opts, natsgo.UserCredentials(c.CredsFile))
	}
	if t := c.TLS; t != nil {
		opts = append(opts, natsgo.Secure())
		if t.CAFile != "" {
			opts = append(opts, natsgo.RootCAs(t.CAFile))
		}
		if t.CertFile != "" {
			opts = append(opts, natsgo.ClientCert(t.CertFile, t.KeyFile))
		}
	}
	opts = append(opts, h.options()...)
	nc, err := natsgo.Connect(c.URL, opts...)
	if err != nil {
		return nil, nil, h.connectError(name, err)
	}
	js, err := jetstream.New(nc, jsOpts...)
	if err != nil {
		nc.Close()
		return nil, nil, fmt.Errorf("%s: jetstream: %w", name, err)
	}
	return nc, js, nil
}

// streamInfo returns the info of stream, naming field if it does not
// exist.
func streamInfo(ctx context.Context, js jetstream.JetStream, stream, field string, timeout time.Duration) (*jetstream.StreamInfo, error) {
	sctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	st, err := js.Stream(sctx, stream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, fmt.Errorf("%w: %s %q", ErrNoStream, field, stream)
	}
	if err != nil {
		return nil, fmt.Errorf("%s %q: %w", field, stream, err)
	}
	return st.CachedInfo(), nil
}
