package cdc

import (
	"encoding/binary"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/jackc/pglogrepl"

	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/codec"
	"github.com/sluicehq/sluice/sdk/connect"
)

// State keys of a source: "cdc/lsn/<slot>" (a connect.Positions entry:
// the end LSN of the last transaction produced) and
// "cdc/sealed/<checkpoint, 20 digits>" → the LSN of that checkpoint
// (8 bytes, big endian), written at its barrier and deleted once it was
// confirmed to the server.
const (
	posPrefix    = "cdc/lsn/"
	sealedPrefix = "cdc/sealed/"
)

// burst bounds how long a Poll goes on reading once it produced a
// transaction.
const burst = 5 * time.Millisecond

// Source is the change-data-capture source operator (see SourceConfig and
// the package documentation). The runtime calls its methods on the
// instance's goroutine.
type Source struct {
	cfg SourceConfig

	log       *slog.Logger
	idle      bool // not instance 0: the slot has one reader
	exactly   bool // exactly-once: confirm at completed checkpoints, not at Durable
	positions *connect.Positions[uint64]
	pos       pglogrepl.LSN            // end of the last transaction produced
	sealed    map[uint64]pglogrepl.LSN // checkpoint → its position, not yet confirmed
	confirmed pglogrepl.LSN            // last confirmed to the server
	stream    *stream
	statusAt  time.Time // when the server was last told confirmed
}

var (
	_ sdk.Resumable  = (*Source)(nil)
	_ sdk.Committer  = (*Source)(nil)
	_ sdk.Replayable = (*Source)(nil)
	_ sdk.Closer     = (*Source)(nil)
)

// NewSource checks cfg and returns the factory of a change-data-capture
// source.
func NewSource(cfg SourceConfig) (sdk.Factory, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	return func() sdk.Operator { return &Source{cfg: cfg} }, nil
}

// Metadata implements sdk.Operator: one instance.
func (s *Source) Metadata() sdk.Metadata {
	return sdk.Metadata{Name: s.cfg.Name, Outputs: []string{s.cfg.Output}, Parallelism: 1, KeyGroups: s.cfg.KeyGroups,
		Watermarks: s.cfg.Watermarks}
}

// ResumesFromState implements sdk.Resumable: Poll writes the end LSN of
// the transactions it produces to State in the same attempt, and a new
// instance starts replication there.
func (s *Source) ResumesFromState() {}

// Init reads the position and the sealed checkpoints in State. It does
// not contact the server (a source must start while it is down): the
// first Poll does.
func (s *Source) Init(ctx sdk.Context) error {
	s.log = ctx.Logger()
	s.idle = ctx.Instance().Index != 0
	s.exactly = ctx.Instance().Guarantee == sdk.ExactlyOnce
	s.positions = connect.NewPositions(posPrefix, codec.Uint64())
	s.sealed = map[uint64]pglogrepl.LSN{}
	st := ctx.State()
	if err := s.positions.Load(st); err != nil {
		return fmt.Errorf("postgres cdc %q: %w", s.cfg.Name, err)
	}
	if p, ok := s.positions.Get(s.cfg.Slot); ok {
		s.pos = pglogrepl.LSN(p)
	}
	err := sdk.ScanAllGroups(st, []byte(sealedPrefix), func(key, value []byte) error {
		n, err := strconv.ParseUint(string(key[len(sealedPrefix):]), 10, 64)
		if err != nil || len(value) != 8 {
			return fmt.Errorf("sealed checkpoint %q: %w", key, connect.ErrCorrupt)
		}
		s.sealed[n] = pglogrepl.LSN(binary.BigEndian.Uint64(value))
		return nil
	})
	if err != nil {
		return fmt.Errorf("postgres cdc %q: read the sealed checkpoints: %w", s.cfg.Name, err)
	}
	return nil
}

// Poll produces the transactions committed since the last Poll, each
// whole, in commit order (waiting at most PollTimeout for the first, and
// stopping after MaxPollChanges changes), and writes the end LSN of the
// last to State in the same attempt. While the server cannot be reached
// it returns an error wrapping sdk.ErrTransient and ErrUnavailable; one
// wrapping ErrRefused when the server refuses the source. Instances other
// than the first end at once (sdk.ErrEndOfStream): a slot has one reader.
func (s *Source) Poll(ctx sdk.Context) error {
	if s.idle {
		return sdk.ErrEndOfStream
	}
	what := fmt.Sprintf("postgres cdc %q", s.cfg.Name)
	if s.stream == nil {
		st, err := openStream(ctx, s.cfg, s.pos, s.confirmed)
		if err != nil {
			return s.cfg.Stats.failure(what, err)
		}
		s.stream, s.statusAt = st, time.Now()
		s.cfg.Stats.up()
		s.log.Info("postgres cdc reading", "slot", s.cfg.Slot, "publication", s.cfg.Publication, "from", s.pos, "confirmed", s.confirmed)
	}
	deadline := time.Now().Add(s.cfg.PollTimeout)
	changes := 0
	for changes < s.cfg.MaxPollChanges {
		c, err := s.stream.next(ctx, deadline, s.sendStatus)
		if err != nil {
			s.closeStream()
			return s.cfg.Stats.failure(what+": read slot "+s.cfg.Slot, err)
		}
		if c == nil {
			break
		}
		if c.end <= s.pos {
			continue // produced before: replication restarted behind the position
		}
		if err := s.produce(ctx, c); err != nil {
			return err
		}
		changes += len(c.changes)
		deadline = minTime(deadline, time.Now().Add(burst))
	}
	if time.Since(s.statusAt) >= s.cfg.StatusInterval {
		if err := s.sendStatus(); err != nil {
			s.closeStream()
			return s.cfg.Stats.failure(what+": send status", err)
		}
	}
	return nil
}

// produce produces the records of c and writes its end as the position.
func (s *Source) produce(ctx sdk.Context, c *committed) error {
	var n int64
	for _, ch := range c.changes {
		rec, err := ch.record(c.xid, c.end, c.commitTime)
		if err != nil {
			return fmt.Errorf("postgres cdc %q: %w", s.cfg.Name, err)
		}
		if err := ctx.Produce(s.cfg.Output, rec); err != nil {
			return fmt.Errorf("postgres cdc %q: %w", s.cfg.Name, err)
		}
		n += int64(len(rec.Value))
	}
	if err := s.positions.Set(ctx.State(), s.cfg.Slot, uint64(c.end)); err != nil {
		return fmt.Errorf("postgres cdc %q: %w", s.cfg.Name, err)
	}
	s.pos = c.end
	st := s.cfg.Stats
	st.changes.Add(int64(len(c.changes)))
	st.transactions.Add(1)
	st.bytes.Add(n)
	st.produced.Store(uint64(c.end))
	return nil
}

// PreCommit implements sdk.Committer: checkpoint holds the position
// produced so far; State keeps it until Commit confirms it.
func (s *Source) PreCommit(ctx sdk.Context, checkpoint uint64) error {
	if s.idle || s.pos == 0 {
		return nil
	}
	s.sealed[checkpoint] = s.pos
	ctx.State().Set(sealedKey(checkpoint), binary.BigEndian.AppendUint64(nil, uint64(s.pos)))
	return nil
}

// Commit implements sdk.Committer: checkpoint is complete (or restored),
// so the server may forget what came before its position: the slot's
// confirmed_flush_lsn moves there (now if connected, else when the next
// Poll connects). Idempotent.
func (s *Source) Commit(ctx sdk.Context, checkpoint uint64) error {
	var lsn pglogrepl.LSN
	for n, p := range s.sealed {
		if n <= checkpoint {
			lsn = max(lsn, p)
			delete(s.sealed, n)
			ctx.State().Delete(sealedKey(n))
		}
	}
	s.confirm(lsn)
	return nil
}

// confirm moves the confirmed position to lsn if it is further, telling
// the server now if connected (else the next Poll connects and tells it).
func (s *Source) confirm(lsn pglogrepl.LSN) {
	if lsn <= s.confirmed {
		return
	}
	s.confirmed = lsn
	if s.stream != nil {
		if err := s.sendStatus(); err != nil {
			s.closeStream()
			s.log.Warn("postgres cdc: confirm a position; the next Poll reconnects", "slot", s.cfg.Slot, "lsn", lsn, "error", err)
		}
	}
}

// Position implements sdk.Replayable (at-least-once): the end LSN of the
// last transaction produced.
func (s *Source) Position() any { return s.pos }

// Durable implements sdk.Replayable: under at-least-once, everything
// produced up to pos has its effects durable downstream, so the slot is
// confirmed there. Under exactly-once only completed checkpoints confirm
// (Commit).
func (s *Source) Durable(_ sdk.Context, pos any) {
	lsn, ok := pos.(pglogrepl.LSN)
	if ok && !s.exactly {
		s.confirm(lsn)
	}
}

// Rewind implements sdk.Replayable (at-least-once, after a node crash):
// the next Poll starts replication again at the confirmed position.
func (s *Source) Rewind(ctx sdk.Context) error {
	if s.exactly || s.idle {
		return nil
	}
	s.closeStream()
	s.pos = s.confirmed
	if err := s.positions.Set(ctx.State(), s.cfg.Slot, uint64(s.pos)); err != nil {
		return fmt.Errorf("postgres cdc %q: rewind: %w", s.cfg.Name, err)
	}
	return nil
}

func sealedKey(checkpoint uint64) []byte {
	return fmt.Appendf(nil, "%s%020d", sealedPrefix, checkpoint)
}

// sendStatus tells the server the confirmed position.
func (s *Source) sendStatus() error {
	if err := s.stream.status(s.confirmed); err != nil {
		return err
	}
	s.statusAt = time.Now()
	s.cfg.Stats.confirmed.Store(uint64(s.confirmed))
	s.cfg.Stats.statuses.Add(1)
	return nil
}

func (s *Source) closeStream() {
	if s.stream != nil {
		s.stream.close()
		s.stream = nil
	}
}

// Close implements sdk.Closer: the replication connection ends, which
// releases the slot for the next reader.
func (s *Source) Close(sdk.Context) error {
	s.closeStream()
	return nil
}

// ProcessRecord implements sdk.Operator; a source has no inputs.
func (s *Source) ProcessRecord(sdk.Context, sdk.Record) error { return nil }

// ProcessTimer implements sdk.Operator.
func (s *Source) ProcessTimer(sdk.Context, string, time.Time) error { return nil }

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
