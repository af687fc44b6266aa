// Package flow is the sending side of Sluice's data plane, free of any actor
// machinery: route tables, per-destination output buffers, batching and
// credit-based backpressure. The runtime (package actors) owns one Producer
// per operator instance and one for records entering from outside, and
// implements Dest to carry batches to instances on this node or another.
//
// # A record's path through a Producer
//
// Produce(stream, rec) looks the stream up in the Producer's route Table:
// one Subscription per operator reading it. For each, the subscription's
// routing picks a destination instance (group-by: key → key group →
// instance; shuffle: random; round-robin: next in turn; broadcast: all) and
// the record is appended to the output buffer (Buf) for that destination.
// A buffer leaves as one Batch through Dest.Send when Flush is called for
// it: Flush(false) sends full buffers (BatchSize records, or BatchBytes
// bytes of records: RecordBytes), Flush(true)
// every buffer with records. When to call which is the runtime's rule (see
// actors/instance.go: full buffers after every record, all of them when the
// instance has caught up with its mailbox).
//
// A buffer's records are kept in chunks, one per future batch, sized
// like the last batch that left (so a trickle of records does not pay for
// a full batch each time) and taken from arrays of batches already
// processed: the receiving instance hands a batch's records back with
// Recycle once it is done with them, and a remote destination once it has
// encoded them.
//
// # Credits
//
// A Producer may have Credits unacknowledged batches per destination
// (RemoteCredits, of RemoteBatchSize records, per destination on another
// node: Dest.Remote); Ack
// returns one. A full buffer without credit stays; once a destination's
// buffer holds BufferBatches×BatchSize records (or more than BufferBatches
// full batches, when BatchBytes ends them), Flush reports the Producer
// blocked, and the runtime stops giving it input. So memory per edge is
// bounded by (Credits+BufferBatches)×BatchSize records, RemoteCredits
// and RemoteBatchSize in place of Credits and BatchSize between nodes.
//
// # Layout changes
//
// Every placement or topology change publishes a new Table. A Producer
// adopts it only between attempts (Refresh, called by Begin and on acks,
// bounces and route notices), so an attempt's output is routed under one
// layout and can be rolled back. When a subscription's layout changed (an
// instance moved, the operator was rescaled) the subscription is frozen:
// new records are held, and nothing is sent under the new layout until
// every batch sent under the old one was acknowledged or bounced back.
// Held and bounced records are then routed again, bounced ones first, so
// records of one key keep their order across a move.
//
// # Streams nobody reads
//
// A record produced to a stream that no operator reads in the adopted
// table is held when a newer table has a reader (it is delivered first
// when that table is adopted) or when the Producer holds unread records
// (Config.HoldUnread: durability tracking), else dropped and counted
// through Host.Dropped. Dead letters are never held for want of a reader.
package flow
