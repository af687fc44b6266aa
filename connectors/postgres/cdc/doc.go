// Package cdc is a PostgreSQL change-data-capture source: it reads a
// logical replication slot with the pgoutput plugin (github.com/jackc/
// pglogrepl on pgx) and produces one record per row change (insert,
// update, delete) of the tables in a publication, as JSON (Change),
// keyed by the row's replica identity (the primary key by default), with
// the transaction's commit time as event time.
//
//	f, err := cdc.NewSource(cdc.SourceConfig{
//		Name: "orders-cdc", Output: "orders",
//		URL:  "postgres://cdc:secret@db:5432/shop?sslmode=verify-full&sslrootcert=/etc/ca.pem",
//		Slot: "sluice_orders", CreateSlot: true,
//		Publication: "sluice_orders", CreatePublication: true, Tables: []string{"public.orders"},
//	})
//
// A record passes through it so:
//
//	server ─ Begin, Insert/Update/Delete..., Commit ─ (buffered until the commit)
//	Poll   ─ Produce every change of the transaction ─ State: position = the commit's end LSN
//	barrier N        ─ State: sealed/N = position
//	N complete       ─ standby status update: flush = sealed/N (the slot's confirmed_flush_lsn)
//	restore to N     ─ Commit(N) confirms sealed/N again; the next Poll starts replication at N's position
//
// Transactions come whole and in commit order: the server sends a
// transaction only once it committed (proto_version 1, no streaming of
// transactions in progress), and the source produces all of its changes
// in one Poll, so a checkpoint never splits one. The position is the end
// LSN of the last transaction produced; replication restarted from it
// skips what came before, and the source drops any transaction ending at
// or before it, so after a crash or a rollback nothing is produced twice
// and, as the slot is confirmed only up to a completed checkpoint's
// position, nothing the restored checkpoint lacks was released by the
// server: exactly-once with the runtime's checkpoints. Under
// at-least-once and none the slot is confirmed at the same points (the
// checkpoints the runtime takes for state).
//
// One instance reads the slot (PostgreSQL lets one connection read a slot
// at a time); the source's Metadata asks for one, and instances a
// manifest adds end at once. The WAL from the slot's restart_lsn (the
// oldest transaction still open at the confirmed position) is kept by the
// server until the source confirms past it: a source that stops, or whose
// checkpoints fail, makes the server's disk fill (see
// max_slot_wal_keep_size). docs/connectors.md "PostgreSQL change-data
// capture" has the guarantees and limits.
package cdc
