package nats

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/sdk"
)

// Under exactly-once the sink publishes on commit. Every record waits in
// the instance's first key group's State until the checkpoint whose
// barrier follows it completes:
//
//	"nats/out/" epoch index → the message (8-byte big-endian numbers)
//	"nats/ck/" epoch        → the checkpoint the epoch was pre-committed for
//	"nats/epoch"            → the epoch records are kept in now
//
// PreCommit(N) closes the current epoch (it now belongs to N) and opens
// the next; Commit(N) publishes every epoch of a checkpoint ≤ N, in
// order, each message with the header Nats-Msg-Id
// "<operator>/<key group>/<checkpoint>/<index>": it hands them to the
// instance's publisher goroutine, which publishes and awaits the acks
// while the instance goes on (publishing would otherwise stall the
// pipeline for as long as a checkpoint's records take to publish); the
// first PreCommit after the acks deletes the epoch, so the checkpoint of
// that barrier no longer holds it. The ids are the same every time an epoch is
// published, so a Commit repeated after a restore (State brings the epoch
// back) is de-duplicated by the server, within the stream's duplicate
// window (SinkConfig.MinDuplicateWindow is checked at start). Records
// after a restored checkpoint were never published (publishing waits for
// completion) and are not in the restored State: nothing to discard.

// State keys of the exactly-once sink.
const (
	outPrefix = "nats/out/"
	ckPrefix  = "nats/ck/"
	epochKey  = "nats/epoch"
)

func outKey(epoch, index uint64) []byte {
	k := append([]byte(outPrefix), make([]byte, 16)...)
	binary.BigEndian.PutUint64(k[len(outPrefix):], epoch)
	binary.BigEndian.PutUint64(k[len(outPrefix)+8:], index)
	return k
}

func epochPrefix(epoch uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte(outPrefix), epoch)
}

func ckKey(epoch uint64) []byte { return binary.BigEndian.AppendUint64([]byte(ckPrefix), epoch) }

// initExactlyOnce reads the current epoch, and the index of its next
// record (its records kept before an instance restart are in State).
func (s *Sink) initExactlyOnce(ctx sdk.Context) error {
	if err := s.cfg.validateExactlyOnce(); err != nil {
		return err
	}
	s.eo = true
	s.group = ctx.Instance().FirstGroup
	s.inflight, s.acked = make(map[uint64]struct{}), make(map[uint64]uint64)
	st := ctx.State()
	v, err := st.Get([]byte(epochKey))
	switch {
	case err == nil && len(v) == 8:
		s.epoch = binary.BigEndian.Uint64(v)
	case err == nil || errors.Is(err, sdk.ErrNotFound):
	default:
		return fmt.Errorf("nats sink %q: read the epoch: %w", s.op, err)
	}
	s.next = 0
	err = st.Scan(epochPrefix(s.epoch), func(key, _ []byte) error {
		s.next = binary.BigEndian.Uint64(key[len(key)-8:]) + 1
		return nil
	})
	if err != nil {
		return fmt.Errorf("nats sink %q: read the records waiting: %w", s.op, err)
	}
	return nil
}

// keep stores rec in the current epoch.
func (s *Sink) keep(ctx sdk.Context, rec sdk.Record) {
	v := binary.AppendUvarint(nil, uint64(len(rec.Key)))
	v = append(v, rec.Key...)
	v = binary.AppendUvarint(v, uint64(len(rec.Headers)))
	for _, h := range rec.Headers {
		v = binary.AppendUvarint(v, uint64(len(h.Key)))
		v = append(v, h.Key...)
		v = binary.AppendUvarint(v, uint64(len(h.Value)))
		v = append(v, h.Value...)
	}
	v = append(v, rec.Value...)
	st := ctx.State()
	if o, ok := st.(sdk.OwnedSetter); ok {
		o.SetOwned(outKey(s.epoch, s.next), v)
	} else {
		st.Set(outKey(s.epoch, s.next), v)
	}
	s.next++
}

// errCorrupt is returned for a kept record that does not decode.
var errCorrupt = errors.New("nats sink: corrupt record in state")

// unkeep decodes a kept record.
func unkeep(v []byte) (sdk.Record, error) {
	var rec sdk.Record
	field := func() ([]byte, bool) {
		n, k := binary.Uvarint(v)
		if k <= 0 || uint64(len(v)-k) < n {
			return nil, false
		}
		f := v[k : k+int(n)]
		v = v[k+int(n):]
		return f, true
	}
	key, ok := field()
	if !ok {
		return rec, errCorrupt
	}
	rec.Key = key
	nh, k := binary.Uvarint(v)
	if k <= 0 || nh > uint64(len(v)) {
		return rec, errCorrupt
	}
	v = v[k:]
	for range nh {
		hk, ok1 := field()
		hv, ok2 := field()
		if !ok1 || !ok2 {
			return rec, errCorrupt
		}
		rec.Headers = append(rec.Headers, sdk.Header{Key: string(hk), Value: string(hv)})
	}
	rec.Value = v
	return rec, nil
}

// PreCommit implements sdk.Committer: under exactly-once the records
// since the last barrier (in State already) become checkpoint's, and the
// next records go to a new epoch. It does nothing otherwise (Flush makes
// publishes durable).
func (s *Sink) PreCommit(ctx sdk.Context, checkpoint uint64) error {
	if !s.eo {
		return nil
	}
	st := ctx.State()
	s.deleteAcked(st)
	if s.next == 0 {
		return nil
	}
	st.Set(ckKey(s.epoch), binary.BigEndian.AppendUint64(nil, checkpoint))
	s.epoch++
	s.next = 0
	st.Set([]byte(epochKey), binary.BigEndian.AppendUint64(nil, s.epoch))
	return nil
}

// Commit implements sdk.Committer: under exactly-once it hands every
// epoch pre-committed for checkpoint or before, in order, with
// deterministic message ids, to the instance's publisher (publisher.go),
// which publishes it and awaits the acks while the instance goes on; the
// next PreCommit deletes the acknowledged epochs from State. A Commit
// repeated (after a restore) publishes the same ids again, which the
// server drops as duplicates. It returns the failure of an earlier
// epoch's publishing (the servers unreachable), which the next Commit
// publishes again; a Commit waits only when the publisher's queue is
// full.
func (s *Sink) Commit(ctx sdk.Context, checkpoint uint64) error {
	if !s.eo {
		return nil
	}
	failed := s.collect()
	type due struct{ epoch, ck uint64 }
	var dues []due
	st := ctx.State()
	err := st.Scan([]byte(ckPrefix), func(key, value []byte) error {
		if len(key) == len(ckPrefix)+8 && len(value) == 8 {
			e := binary.BigEndian.Uint64(key[len(ckPrefix):])
			_, busy := s.inflight[e]
			_, done := s.acked[e]
			if ck := binary.BigEndian.Uint64(value); ck <= checkpoint && !busy && !done {
				dues = append(dues, due{e, ck})
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("nats sink %q: read pre-committed checkpoints: %w", s.op, err)
	}
	if len(dues) > 0 {
		if err := s.connect(ctx); err != nil {
			return err
		}
		s.startPublisher()
	}
	slices.SortFunc(dues, func(a, b due) int { return cmp.Compare(a.epoch, b.epoch) })
	for _, d := range dues {
		batch, err := s.readEpoch(st, d.epoch, d.ck)
		if err != nil {
			return err
		}
		if err := s.pub.enqueue(ctx, batch); err != nil {
			return fmt.Errorf("nats sink %q: commit checkpoint %d: %w", s.op, d.ck, err)
		}
		s.inflight[d.epoch] = struct{}{}
	}
	return failed
}

// readEpoch reads the records of epoch (pre-committed for checkpoint ck)
// as messages with their ids.
func (s *Sink) readEpoch(st sdk.State, epoch, ck uint64) (epochBatch, error) {
	b := epochBatch{epoch: epoch, ck: ck}
	prefix := fmt.Sprintf("%s/%d/%d/", s.op, s.group, ck)
	err := st.Scan(epochPrefix(epoch), func(key, value []byte) error {
		rec, err := unkeep(slices.Clone(value))
		if err != nil {
			return fmt.Errorf("%w: %x", err, key)
		}
		m := s.message(rec)
		if m.Header == nil {
			m.Header = make(natsgo.Header, 1)
		}
		index := binary.BigEndian.Uint64(key[len(key)-8:])
		m.Header[jetstream.MsgIDHeader] = []string{prefix + strconv.FormatUint(index, 10)}
		b.msgs = append(b.msgs, m)
		b.last = index
		return nil
	})
	if err != nil {
		return b, fmt.Errorf("nats sink %q: read checkpoint %d's records: %w", s.op, ck, err)
	}
	return b, nil
}

// collect takes the publisher's results: acknowledged epochs wait in
// s.acked for the next PreCommit to delete them; failed ones may be
// published again. It returns the failures, joined.
func (s *Sink) collect() error {
	if s.pub == nil {
		return nil
	}
	var errs []error
	for _, r := range s.pub.results() {
		delete(s.inflight, r.epoch)
		if r.err != nil {
			errs = append(errs, fmt.Errorf("nats sink %q: commit checkpoint %d: %w", s.op, r.ck, r.err))
			continue
		}
		s.acked[r.epoch] = r.last
	}
	return errors.Join(errs...)
}

// deleteAcked deletes the acknowledged epochs from State.
func (s *Sink) deleteAcked(st sdk.State) {
	s.collect() // failures are reported by Commit, which publishes them again
	for e, last := range s.acked {
		for i := uint64(0); i <= last; i++ {
			st.Delete(outKey(e, i))
		}
		st.Delete(ckKey(e))
	}
	clear(s.acked)
}
