// Package cassandra is a Cassandra sink on gocql: each record becomes a
// row of one table, written with INSERT, which in Cassandra is an upsert
// (a row written twice is the same row).
//
// A record's columns come from SinkConfig.Map (values in Columns order),
// or, without one, from the record's value as a JSON object: each column
// takes the field of its name, converted for the column's type (numbers
// for the integer, floating-point, decimal and varint types, true/false
// for boolean, strings for text, uuid, timeuuid, inet and date, RFC 3339
// strings or milliseconds for timestamp, base64 strings for blob, arrays
// for lists and sets, objects for maps; a string's contents or another
// value's JSON text for text). A missing field leaves the column unset (as
// it was; no tombstone), null writes a null. A record that does not map,
// whose values do not fit their columns, or whose primary key is missing
// goes to the dead-letter stream. Columns must include the table's
// primary key, read from system_schema at start.
//
//	f, err := cassandra.NewSink(cassandra.SinkConfig{
//		Name: "store", Inputs: []sdk.Input{{Stream: "counts"}},
//		Hosts: []string{"cass1:9042", "cass2:9042"}, Keyspace: "app", Table: "counts",
//		Columns: []string{"word", "n"}, Username: "sluice", Password: secret,
//		TLS: &cassandra.TLSConfig{CAFile: "/etc/sluice/cassandra-ca.pem"},
//	})
//
// Rows are buffered, one per primary key (a later record of a key merges
// into its row), and written at each flush: the rows of one partition in
// unlogged batches of at most BatchRows, the batches and single rows
// Concurrency at a time.
//
// Guarantees (docs/connectors.md "Cassandra"):
//
//   - Exactly-once ("effectively once"): PreCommit, at each checkpoint's
//     barrier, writes every buffered row and returns once all are
//     acknowledged at Consistency, so the rows of a completed checkpoint
//     are in the table. Rows are visible as soon as they are written,
//     before their checkpoint completes; after a rollback the replayed
//     records write the same rows again, which leaves the table as one
//     write would (idempotent upserts by primary key). Commit has nothing
//     to do. Nothing waits in State, so the sink can be rescaled and its
//     input routed group-by.
//   - At-least-once: rows are written at every Flush (before the runtime
//     counts them durable); replays after a crash write them again, with
//     the same result.
//   - None: as at-least-once, but rows buffered at a crash are lost.
//
// Write timestamps. Cassandra keeps, per cell, the write with the highest
// timestamp, so the timestamps decide what a replay leaves. Every request
// carries one chosen by the sink (a driver retry is then the same write):
// the rows written at a barrier take the checkpoint's id as their
// timestamp (ids are the coordinator's clock in ns, taken in µs, and only
// grow, across rollbacks too), and any later than the last used. So the
// rows a replay writes at its barrier supersede whatever an aborted
// attempt wrote at a barrier of its own, whatever the clocks of the
// sink's hosts say, and a row never goes back to an older value. Neither
// event time nor a per-record sequence would do: records of one key may
// carry the same event time or go back in it (later updates would lose
// or tie), and a sequence restored with the checkpoint numbers replayed
// records again from where it was, so a replay whose input interleaves
// differently writes other values at the same timestamps as the aborted
// attempt (ties are broken by comparing values, not by order). Between
// barriers (MaxBufferedRows reached; every flush under the other
// guarantees) the timestamp is the host's clock, after the last used: a
// replay over such early writes of an aborted attempt is right only if
// the host's clock is within the recovery time of the coordinator's.
//
// Health: a failed write returns an error wrapping sdk.ErrTransient, and
// ErrUnavailable while no host answers (it says for how long), which the
// runtime shows in the instance's status; ErrRefused when the cluster
// refuses for good (credentials, certificate, a missing keyspace, table or
// column). SinkConfig.Metrics counts rows, bytes and errors and reports
// an outage while it lasts.
//
// Tested only at the protocol level, against internal/cqltest (a CQL
// native-protocol v4 server written for the tests), not against
// Cassandra.
package cassandra
