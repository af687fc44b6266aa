// Package postgres is a PostgreSQL sink on pgx: each record becomes a row
// of a table, inserted, or upserted (INSERT … ON CONFLICT (KeyColumns) DO
// UPDATE) when SinkConfig.KeyColumns are set.
//
// A record's columns come from SinkConfig.Map (values in Columns order),
// or, without one, from the record's value as a JSON object (a field per
// column, converted for the column's type). A record that does not map
// goes to the dead-letter stream. Rows are written in batches with COPY;
// upserts COPY into a temporary staging table and upsert from there, the
// last row of each key in a batch winning.
//
//	f, err := postgres.NewSink(postgres.SinkConfig{
//		Name: "store", Inputs: []sdk.Input{{Stream: "counts"}},
//		URL:  "postgres://sluice:secret@db:5432/app?sslmode=verify-full&sslrootcert=/etc/ca.pem",
//		Table: "counts", Columns: []string{"word", "n"}, KeyColumns: []string{"word"},
//	})
//
// Guarantees (docs/connectors.md "PostgreSQL"):
//
//   - Exactly-once: rows wait in the instance's State until their
//     checkpoint completes; Commit then writes them in one transaction
//     with a progress row (sink, origin) → checkpoint in ProgressTable,
//     and skips what that row says is written. Inserts and upserts alike
//     land once. Rows are visible one checkpoint after they arrive.
//   - At-least-once: rows are written when BatchRows are buffered and at
//     every Flush, before the runtime counts them durable. After a crash
//     replayed records are written again: upserts converge (idempotent),
//     plain inserts may be duplicated.
//   - None: as at-least-once, but rows buffered at a crash are lost.
//
// Why not PREPARE TRANSACTION: a prepared transaction keeps its row locks
// until COMMIT PREPARED, which comes at the checkpoint's completion on the
// instance's goroutine; the next checkpoint's transaction upserting the
// same key on that goroutine would wait for those locks, and so for
// itself. Keeping the rows in State needs no lock across checkpoints, no
// max_prepared_transactions, and no orphaned transactions to resolve after
// a restore.
//
// Health: a failed write returns an error wrapping sdk.ErrTransient, and
// ErrUnavailable while the server cannot be reached (it says for how
// long), which the runtime shows in the instance's status; ErrRefused when
// the server refuses for good (credentials, a missing table or column).
// SinkConfig.Metrics counts rows, bytes and errors and reports an outage
// while it lasts.
package postgres
