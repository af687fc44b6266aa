// Package persistence keeps operator state and timers in Pebble.
//
// A node has one DB (one Pebble database under its data directory). Each
// operator instance gets a Store over it: an in-memory overlay of the writes
// it made since its last commit plus a bounded read cache, so that reads see
// the instance's own writes at once and a commit writes many updates in one
// Pebble batch rather than one fsync per record.
//
// # Key layout
//
//	0x01 | uvarint(len(op)) | op | key group (2 bytes, big-endian) | class | key
//
// where class is 's' for state, 't' for timers (the value of a timer is
// its due time in Unix nanoseconds, big-endian) and 'm' for the runtime's
// per-instance bookkeeping (such as its processed-records counter). All the data of one key
// group of one operator is a single contiguous key range, so a key group can
// be exported, shipped and ingested as a unit, and an operator's data can be
// purged with one range deletion. Keys under 0x02 hold node metadata.
//
// # Durability
//
// Store.Commit writes the overlay in one batch and, with sync, waits for the
// WAL to be on disk. What a Store has not committed is lost if the process is
// killed; the runtime commits every instance at least every commit interval
// (200 ms by default) and when it stops.
package persistence
