// Package natstest runs a real nats-server with JetStream for tests.
//
// [Start] launches nats-server v2.15.3 on 127.0.0.1 with a client port and
// a monitoring port picked at run time, JetStream on and its store in
// t.TempDir(), and returns once the monitoring endpoint's /healthz says
// the server and JetStream are ready. Options add authentication (user
// and password, or a token) and TLS (server certificate, optionally
// requiring client certificates). The server's output goes to a log file
// whose tail is printed when the test fails; a cleanup kills its process
// group.
//
//	srv := natstest.Start(t, natstest.Options{})
//	nc := srv.Connect(t)          // a client, closed at cleanup
//	srv.CreateStream(t, jetstream.StreamConfig{Name: "in", Subjects: []string{"in.>"}})
//	...
//	srv.Stop()   // NATS down: connections refused
//	srv.Start()  // back on the same port with the same store (streams and messages kept)
//	srv.Pause()  // NATS hung: connections accepted, never answered
//	srv.Resume()
//
// The binary is found by [Binary]: $SLUICE_NATS_BIN, else the cache
// scripts/ensure-tool.sh fills, else built by that script. A test that
// cannot find it fails; it never skips.
package natstest

import "github.com/sluicehq/sluice/internal/proctest"

// TB is the part of testing.TB that this package uses (proctest.TB).
type TB = proctest.TB
