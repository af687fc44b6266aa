// Package kafka connects Sluice to Apache Kafka with franz-go: a source
// operator that reads topics (Source, SourceConfig), a sink operator that
// writes a topic (Sink, SinkConfig), and a StateLog that keeps operator
// state in compacted changelog topics so that it survives node crashes
// (StateLog, StateLogConfig, for node.Config.StateLog).
//
// A record's path: instance i of a source with P instances reads the
// partitions p with p mod P = i of its topics, decodes each Kafka record
// (SourceConfig.Decode) and produces it to its stream; a sink instance
// encodes each record it receives (SinkConfig.Encode) and hands it to an
// idempotent producer, and before each state commit of its instance
// (sdk.Flusher) waits until the brokers have acknowledged everything.
// Records that do not decode or encode, or that the brokers reject for
// good, go to the operator's dead-letter stream.
//
// Every config has a Security (TLS, SASL PLAIN or SCRAM); brokers that
// refuse the client's credentials or certificate give ErrAuthentication,
// naming the setting to fix. See docs/kafka.md "Secure setup".
//
// # Exactly once
//
// Under sdk.ExactlyOnce (ctx.Instance().Guarantee) the source is
// sdk.Resumable: it resumes every partition from the offset in its
// checkpointed state and commits offsets to its group only after a
// checkpoint completes, for monitoring (sdk.Committer). The sink writes
// the records between two checkpoint barriers in one Kafka transaction of
// a small pool of transactional producers per instance: flushed and
// recorded in State at the barrier (PreCommit), committed when the
// checkpoint completes (Commit) — by its producer, or after a restore by
// EndTxn with the producer id and epoch kept in State — while Init fences
// and so aborts whatever was prepared after the restored checkpoint. A
// read_committed consumer of the topic sees every record once. See
// SinkConfig's Transaction fields and docs/kafka.md "Exactly-once" for the
// state layout and the limits.
//
//	src, err := kafka.NewSource(kafka.SourceConfig{Name: "in", Brokers: brokers,
//		Topics: []string{"words"}, Stream: "words", Parallelism: 3})
//	sink, err := kafka.NewSink(kafka.SinkConfig{Name: "out", Brokers: brokers,
//		Topic: "counts", Inputs: []sdk.Input{{Stream: "counts"}}})
//
// # At least once
//
// With node.Config.AtLeastOnce and CommitDurable (the default), a source
// commits to its consumer group only offsets whose records have had their
// effects made durable downstream (committed state, sink records
// acknowledged by the brokers); see the runtime's durability tracking in
// package actors. With a StateLog as well, a node crash loses no record
// and no committed state: the crashed node's instances start elsewhere
// from their changelogs, moved source instances resume from the group's
// committed offsets, and every source rewinds to its last durable
// position. Records read since then are replayed; those whose effects had
// already been applied are applied again: duplicates.
//
// The duplicates of a crash are bounded by what was in flight. A position
// normally becomes durable a few commit intervals after it was read
// (≈ 0.2–0.6 s with the default 200 ms). After a crash nothing becomes
// durable until the crash is noticed (≈ 3 s with Consul), so a source
// stops reading once what it read has waited SourceConfig.MaxUndurable
// (default 1 s) to become durable. A crash thus replays, per source
// instance, at most about MaxUndurable of what it read (more while it was
// catching up on a backlog, since it then reads faster), plus one Poll
// (MaxPollRecords). In samples/kafka-wordcount's crash test (3 nodes,
// 10,000 records/s, 5 SIGKILLs in 20 s of input, 4 runs) that measured
// 0.5–0.9 s of input per crash on average, 13–24 % of the input (one run
// in eight: 1.9 s per crash, when crashes hit sources catching up).
//
// A planned move (scale, join, graceful leave) replays less: the moved
// source instance resumes from the offsets committed when it was
// released, a commit interval or so behind what it had read.
//
// Without AtLeastOnce (and without exactly-once) use CommitProduced:
// instances resume from positions kept in their own state and records in
// flight when a node crashes may be lost.
package kafka
