// Package nats connects Sluice to NATS JetStream with nats.go's jetstream
// package: a source operator that reads a stream (Source, SourceConfig)
// and a sink operator that publishes to a subject (Sink, SinkConfig).
//
// A record's path: instance i of a source with P instances reads the
// subjects j of SourceConfig.Subjects with j mod P = i (the whole stream
// when there are none, with one instance) through an ordered consumer,
// and produces each message as a record: key from SourceConfig.KeyHeader
// or the subject, value the data, headers carried (plus nats-subject and
// nats-sequence), event time the message's timestamp. Poll writes the
// stream sequence of the last message of each subject filter to State
// ("nats/seq/<stream>/<filter>") in the same attempt, and a new instance
// resumes after it, skipping what a filter already produced (so a
// rescale that moves filters between instances loses and repeats
// nothing). A sink instance publishes each record to SinkConfig.Subject
// (or "<Subject>.<key>" with SubjectFromKey), its headers as NATS headers.
//
// # Guarantees
//
// Under sdk.ExactlyOnce the source is sdk.Resumable (above) and the sink
// publishes on commit: a record is kept in the instance's State until the
// checkpoint whose barrier follows it completes, then published with
// Nats-Msg-Id "<operator>/<key group>/<checkpoint>/<index>". A commit
// repeated after a restore publishes the same ids, which the server drops
// as duplicates within the stream's duplicate window: the window
// (StreamConfig.Duplicates, 2 min by default) must exceed the worst time
// from a checkpoint's completion to the end of a recovery, and the sink
// refuses a stream whose window is shorter than
// SinkConfig.MinDuplicateWindow (1 min). Counts read from the output
// stream then see every record once. The exactly-once sink's inputs may
// not be group-by.
//
// Without exactly-once the sink publishes asynchronously and waits for
// every ack before the instance's state commits (sdk.Flusher), sending
// failed publishes again; the source still resumes from the positions in
// its committed state. The source is not sdk.Replayable (the runtime
// never rewinds it), so a crash may lose what was in flight downstream
// of a committed position, or repeat what followed it: NATS pipelines
// that must not lose or repeat run exactly-once.
//
// # Errors and health
//
// The servers are contacted at the first Poll or publish, not in Init. A
// wrong Connection.URL or an outage is transient (sdk.ErrTransient,
// ErrUnavailable): Poll reports it for as long as it lasts ("servers
// unavailable for 4.2s"), which the instance's status shows
// (TransientErrors, LastError), and the client reconnects for ever.
// Refused credentials or certificates are ErrAuthentication, naming the
// setting to fix; a missing stream is ErrNoStream naming the field.
// Stats, shared by a connector's instances, counts messages, bytes,
// errors, duplicates, outages and the source's lag (the messages of its
// subjects in the stream after the last one produced).
//
//	src, err := nats.NewSource(nats.SourceConfig{Name: "in", Output: "words",
//		Connection: nats.Connection{URL: "tls://nats:4222", CredsFile: "app.creds",
//			TLS: &nats.TLS{CAFile: "ca.pem"}},
//		Stream: "WORDS", Subjects: []string{"words.>"}})
//	sink, err := nats.NewSink(nats.SinkConfig{Name: "out", Inputs: []sdk.Input{{Stream: "counts"}},
//		Connection: nats.Connection{URL: "tls://nats:4222"}, Subject: "counts", SubjectFromKey: true,
//		Stream: "COUNTS"})
package nats
