package cdc

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
)

// stream is one replication connection: the checks and set-up before
// START_REPLICATION, then the decoding of pgoutput's messages into whole
// transactions. Used on the instance's goroutine.
type stream struct {
	cfg  SourceConfig
	conn *pgconn.PgConn
	rels map[uint32]*relation
	txn  *txn // the transaction being received; nil between transactions
}

// committed is a transaction received whole.
type committed struct {
	txn
	end pglogrepl.LSN // the end of its commit record
}

// openStream connects, checks the server (wal_level, the publication,
// the slot, creating them if asked) and starts replication from start (0:
// the slot's confirmed position), then tells the server confirmed.
func openStream(ctx context.Context, cfg SourceConfig, start, confirmed pglogrepl.LSN) (*stream, error) {
	pc, err := cfg.connConfig()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.ConnectTimeout)
	defer cancel()
	conn, err := pgconn.ConnectConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	s := &stream{cfg: cfg, conn: conn, rels: map[uint32]*relation{}}
	if err := s.prepare(ctx, pc.Database); err != nil {
		s.close()
		return nil, err
	}
	err = pglogrepl.StartReplication(ctx, conn, cfg.Slot, start, pglogrepl.StartReplicationOptions{
		Mode: pglogrepl.LogicalReplication, PluginArgs: []string{"proto_version '1'", "publication_names '" + cfg.Publication + "'"}})
	if err != nil {
		s.close()
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "55006" { // the slot is active: a previous connection not yet gone
			return nil, fmt.Errorf("start replication from slot %q at %v: %w (another reader holds it)", cfg.Slot, start, errSlotBusy)
		}
		return nil, fmt.Errorf("start replication from slot %q at %v: %w", cfg.Slot, start, err)
	}
	if err := s.status(confirmed); err != nil {
		s.close()
		return nil, fmt.Errorf("send the confirmed position: %w", err)
	}
	return s, nil
}

// errSlotBusy is a slot another connection reads: transient (the
// previous instance's connection ends soon), not a refusal.
var errSlotBusy = errors.New("replication slot in use")

// prepare checks wal_level and creates or checks the publication and the
// slot; a missing one not to be created is refused naming the setting.
func (s *stream) prepare(ctx context.Context, database string) error {
	level, err := s.one(ctx, "SHOW wal_level")
	if err != nil {
		return fmt.Errorf("read wal_level: %w", err)
	}
	if level != "logical" {
		return fmt.Errorf("%w: the server's wal_level is %q; logical replication needs wal_level = logical "+
			"(set it in postgresql.conf, with max_replication_slots and max_wal_senders > 0, and restart the server)", ErrRefused, level)
	}
	n, err := s.one(ctx, "SELECT count(*) FROM pg_publication WHERE pubname = '"+s.cfg.Publication+"'")
	if err != nil {
		return fmt.Errorf("look up publication %q: %w", s.cfg.Publication, err)
	}
	if n == "0" {
		if !s.cfg.CreatePublication {
			return fmt.Errorf("%w: Publication: no publication %q in database %q; create it (CREATE PUBLICATION %s FOR TABLE ...) or set CreatePublication",
				ErrRefused, s.cfg.Publication, database, s.cfg.Publication)
		}
		if err := s.exec(ctx, s.createPublication()); err != nil && !duplicate(err) {
			return fmt.Errorf("create publication %q: %w", s.cfg.Publication, err)
		}
	}
	rows, err := s.rows(ctx, "SELECT plugin, database, slot_type FROM pg_replication_slots WHERE slot_name = '"+s.cfg.Slot+"'")
	if err != nil {
		return fmt.Errorf("look up slot %q: %w", s.cfg.Slot, err)
	}
	if len(rows) == 0 {
		if !s.cfg.CreateSlot {
			return fmt.Errorf("%w: Slot: no replication slot %q; create it (SELECT pg_create_logical_replication_slot('%s', 'pgoutput')) or set CreateSlot",
				ErrRefused, s.cfg.Slot, s.cfg.Slot)
		}
		_, err := pglogrepl.CreateReplicationSlot(ctx, s.conn, s.cfg.Slot, "pgoutput",
			pglogrepl.CreateReplicationSlotOptions{Mode: pglogrepl.LogicalReplication, SnapshotAction: "NOEXPORT_SNAPSHOT"})
		if err != nil && !duplicate(err) {
			return fmt.Errorf("create slot %q: %w", s.cfg.Slot, err)
		}
		return nil
	}
	plugin, db, kind := string(rows[0][0]), string(rows[0][1]), string(rows[0][2])
	switch {
	case kind != "logical" || plugin != "pgoutput":
		return fmt.Errorf("%w: Slot: slot %q is a %s slot of plugin %q; the source needs a logical slot of pgoutput", ErrRefused, s.cfg.Slot, kind, plugin)
	case db != database:
		return fmt.Errorf("%w: Slot: slot %q decodes database %q, but URL names %q", ErrRefused, s.cfg.Slot, db, database)
	}
	return nil
}

// createPublication returns the statement creating the publication.
func (s *stream) createPublication() string {
	if len(s.cfg.Tables) == 0 {
		return "CREATE PUBLICATION " + s.cfg.Publication + " FOR ALL TABLES"
	}
	names := make([]string, len(s.cfg.Tables))
	for i, t := range s.cfg.Tables {
		parts, _ := splitTable(t) // Validate checked them
		names[i] = pgx.Identifier(parts).Sanitize()
	}
	return "CREATE PUBLICATION " + s.cfg.Publication + " FOR TABLE " + strings.Join(names, ", ")
}

// duplicate reports an object that exists already (created meanwhile).
func duplicate(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "42710"
}

func (s *stream) rows(ctx context.Context, sql string) ([][][]byte, error) {
	res, err := s.conn.Exec(ctx, sql).ReadAll()
	if err != nil {
		return nil, err
	}
	if len(res) == 0 {
		return nil, nil
	}
	return res[0].Rows, nil
}

func (s *stream) exec(ctx context.Context, sql string) error {
	_, err := s.conn.Exec(ctx, sql).ReadAll()
	return err
}

// one returns the one value sql selects.
func (s *stream) one(ctx context.Context, sql string) (string, error) {
	rows, err := s.rows(ctx, sql)
	if err != nil {
		return "", err
	}
	if len(rows) != 1 || len(rows[0]) != 1 {
		return "", fmt.Errorf("%s: %d rows, want one value", sql, len(rows))
	}
	return string(rows[0][0]), nil
}

// status tells the server that everything before confirmed is done with:
// the slot's confirmed_flush_lsn moves there, and the server may recycle
// the WAL before it. 0 confirms nothing (the server ignores it).
func (s *stream) status(confirmed pglogrepl.LSN) error {
	return pglogrepl.SendStandbyStatusUpdate(context.Background(), s.conn, pglogrepl.StandbyStatusUpdate{
		WALWritePosition: confirmed, WALFlushPosition: confirmed, WALApplyPosition: confirmed})
}

// next returns the next transaction the server sends, waiting until
// deadline (nil, nil when none came); a transaction may take several
// calls. replyTo is called when the server asks for a status.
func (s *stream) next(ctx context.Context, deadline time.Time, replyTo func() error) (*committed, error) {
	for {
		rctx, cancel := context.WithDeadline(ctx, deadline)
		msg, err := s.conn.ReceiveMessage(rctx)
		cancel()
		if err != nil {
			if pgconn.Timeout(err) && ctx.Err() == nil {
				return nil, nil
			}
			return nil, fmt.Errorf("receive: %w", err)
		}
		switch msg := msg.(type) {
		case *pgproto3.CopyData:
			c, err := s.copyData(msg.Data, replyTo)
			if c != nil || err != nil {
				return c, err
			}
		case *pgproto3.ErrorResponse:
			return nil, fmt.Errorf("replication: %w", pgconn.ErrorResponseToPgError(msg))
		case *pgproto3.CopyDone:
			return nil, fmt.Errorf("the server ended replication: %w", errConnLost)
		}
	}
}

// copyData handles one message of the replication stream.
func (s *stream) copyData(data []byte, replyTo func() error) (*committed, error) {
	if len(data) == 0 {
		return nil, nil
	}
	switch data[0] {
	case pglogrepl.PrimaryKeepaliveMessageByteID:
		ka, err := pglogrepl.ParsePrimaryKeepaliveMessage(data[1:])
		if err != nil {
			return nil, fmt.Errorf("%w: keepalive: %w", ErrProtocol, err)
		}
		if ka.ReplyRequested {
			if err := replyTo(); err != nil {
				return nil, fmt.Errorf("answer a keepalive: %w", err)
			}
		}
		return nil, nil
	case pglogrepl.XLogDataByteID:
		x, err := pglogrepl.ParseXLogData(data[1:])
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrProtocol, err)
		}
		return s.decode(x.WALData)
	}
	return nil, nil
}

// decode takes one pgoutput message; at a commit it returns the
// transaction.
func (s *stream) decode(wal []byte) (*committed, error) {
	m, err := pglogrepl.Parse(wal)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrProtocol, err)
	}
	rel := func(id uint32) (*relation, error) {
		if r, ok := s.rels[id]; ok && s.txn != nil {
			return r, nil
		}
		return nil, fmt.Errorf("%w: a change of relation %d outside a transaction or before its Relation message", ErrProtocol, id)
	}
	switch m := m.(type) {
	case *pglogrepl.RelationMessage:
		s.rels[m.RelationID] = newRelation(m)
	case *pglogrepl.BeginMessage:
		s.txn = &txn{xid: m.Xid, commitTime: m.CommitTime}
	case *pglogrepl.InsertMessage:
		r, err := rel(m.RelationID)
		if err != nil {
			return nil, err
		}
		s.txn.changes = append(s.txn.changes, change{rel: r, op: Insert, tuple: m.Tuple})
	case *pglogrepl.UpdateMessage:
		r, err := rel(m.RelationID)
		if err != nil {
			return nil, err
		}
		s.txn.changes = append(s.txn.changes, change{rel: r, op: Update, tuple: m.NewTuple, oldKey: m.OldTuple})
	case *pglogrepl.DeleteMessage:
		r, err := rel(m.RelationID)
		if err != nil {
			return nil, err
		}
		s.txn.changes = append(s.txn.changes, change{rel: r, op: Delete, oldKey: m.OldTuple,
			full: m.OldTupleType == pglogrepl.DeleteMessageTupleTypeOld})
	case *pglogrepl.CommitMessage:
		if s.txn == nil {
			return nil, fmt.Errorf("%w: a commit outside a transaction", ErrProtocol)
		}
		c := &committed{txn: *s.txn, end: m.TransactionEndLSN}
		c.commitTime = m.CommitTime
		s.txn = nil
		return c, nil
	}
	// Type, Origin, Truncate and logical decoding messages carry no row
	// change the source delivers.
	return nil, nil
}

// close ends the connection (the server releases the slot).
func (s *stream) close() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = s.conn.Close(ctx)
}
