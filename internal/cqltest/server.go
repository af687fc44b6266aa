package cqltest

import (
	"bufio"
	"crypto/md5"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Config configures a Server.
type Config struct {
	// Tables are the tables the server holds (created empty).
	Tables []Table
	// Username and Password, when Username is set, make the server ask
	// for them with PasswordAuthenticator (SASL PLAIN), as Cassandra does
	// with authentication on.
	Username, Password string
	// TLS, when set, serves TLS only (client_encryption_options enabled,
	// optional: false).
	TLS *tls.Config
}

// Mode is how the server answers: normally, or one of the outages.
type Mode int

// The modes of SetMode.
const (
	// Normal answers every request.
	Normal Mode = iota
	// Refusing closes every connection and its listener: connecting is
	// refused until the mode changes.
	Refusing
	// Stalled keeps connections open but answers nothing: requests time
	// out, and so does connecting.
	Stalled
	// Unavailable answers writes (INSERT, BATCH) with an Unavailable error
	// (0x1000), as a coordinator short of replicas does.
	Unavailable
	// TimingOut applies writes but answers them with a Write_timeout error
	// (0x1100), as a coordinator whose replicas acknowledged too late
	// does: the client cannot tell whether the write landed.
	TimingOut
)

// Server is a CQL native-protocol v4 server on loopback holding tables in
// memory. It speaks what a driver needs: OPTIONS, STARTUP (with
// PasswordAuthenticator), REGISTER, QUERY, PREPARE, EXECUTE and BATCH of
// INSERTs (an upsert: last write wins per cell by write timestamp) and of
// SELECTs by column equality, and the system tables a driver reads when it
// connects. It is not Cassandra: one node, no replication, no
// consistency levels enforced (they are recorded), no paging, no TTLs.
type Server struct {
	cfg  Config
	addr string

	mu       sync.Mutex
	mode     Mode
	ln       net.Listener
	conns    map[net.Conn]struct{}
	tables   map[string]*table // "ks.name"
	prepared map[string]*stmt  // by id
	cls      map[uint16]int64  // writes by consistency level
	wg       sync.WaitGroup
	closed   bool

	writes   atomic.Int64 // rows applied (INSERTs, in batches or not)
	batches  atomic.Int64
	requests atomic.Int64
}

// New starts a Server on a loopback port picked at run time.
func New(cfg Config) (*Server, error) {
	s := &Server{cfg: cfg, conns: map[net.Conn]struct{}{}, tables: map[string]*table{}, prepared: map[string]*stmt{},
		cls: map[uint16]int64{}}
	for _, t := range cfg.Tables {
		tb, err := newTable(t)
		if err != nil {
			return nil, err
		}
		if _, dup := s.tables[tb.ks+"."+tb.name]; dup {
			return nil, fmt.Errorf("table %s.%s declared twice", tb.ks, tb.name)
		}
		s.tables[tb.ks+"."+tb.name] = tb
	}
	for _, tb := range s.systemTables() {
		s.tables[tb.ks+"."+tb.name] = tb
	}
	ln, err := s.listen("127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s.addr = ln.Addr().String()
	return s, nil
}

// Start is New for a test: it fails t if the server cannot start, and
// closes it when the test ends.
func Start(t testing.TB, cfg Config) *Server {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatalf("cqltest: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

func (s *Server) listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("cqltest: listen on %s: %w", addr, err)
	}
	if s.cfg.TLS != nil {
		ln = tls.NewListener(ln, s.cfg.TLS)
	}
	s.ln = ln
	s.wg.Add(1)
	go s.accept(ln)
	return ln, nil
}

// Addr returns the server's host:port.
func (s *Server) Addr() string { return s.addr }

// Port returns the server's port.
func (s *Server) Port() int {
	_, p, _ := net.SplitHostPort(s.addr)
	n, _ := strconv.Atoi(p)
	return n
}

// SetMode switches the server to mode m (see Mode). Leaving Refusing
// listens again on the same port, which fails if another process took it
// meanwhile.
func (s *Server) SetMode(m Mode) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.New("cqltest: closed")
	}
	old := s.mode
	s.mode = m
	switch {
	case m == Refusing && old != Refusing:
		_ = s.ln.Close()
		for c := range s.conns {
			_ = c.Close()
		}
	case m != Refusing && old == Refusing:
		if _, err := s.listen(s.addr); err != nil {
			s.mode = Refusing
			return err
		}
	}
	return nil
}

func (s *Server) currentMode() Mode {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mode
}

// Close stops the server and closes every connection.
func (s *Server) Close() {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		_ = s.ln.Close()
		for c := range s.conns {
			_ = c.Close()
		}
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// Writes returns the rows written (each INSERT, in a batch or not,
// including those answered with a Write_timeout).
func (s *Server) Writes() int64 { return s.writes.Load() }

// Batches returns the BATCH requests applied.
func (s *Server) Batches() int64 { return s.batches.Load() }

// Requests returns the requests answered.
func (s *Server) Requests() int64 { return s.requests.Load() }

// WritesAt returns the writes (INSERTs and BATCHes) received at
// consistency level cl (the protocol's code: 0x0006 LOCAL_QUORUM, …).
func (s *Server) WritesAt(cl uint16) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cls[cl]
}

// Count returns the rows of table ks.name.
func (s *Server) Count(ks, name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if tb := s.tables[ks+"."+name]; tb != nil {
		return len(tb.rows)
	}
	return -1
}

func (s *Server) accept(ln net.Listener) {
	defer s.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		if s.closed || s.ln != ln {
			s.mu.Unlock()
			_ = c.Close()
			continue
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go s.serve(c)
	}
}

// conn is one client connection's state.
type conn struct {
	s        *Server
	c        net.Conn
	w        *bufio.Writer
	started  bool // STARTUP done (and authenticated)
	authing  bool
	keyspace string
}

func (s *Server) serve(c net.Conn) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		_ = c.Close()
	}()
	cn := &conn{s: s, c: c, w: bufio.NewWriter(c)}
	r := bufio.NewReaderSize(c, 64<<10)
	for {
		h, err := readHeader(r)
		if err != nil {
			return
		}
		if h.version&0x80 != 0 || h.version < 1 || h.version > 5 {
			// Not a request frame of any protocol version (such as a TLS
			// ClientHello, 0x16): Cassandra answers with a protocol error
			// in v4 and closes the connection, without reading a body.
			e := errorf(codeProtocol, "Invalid or unsupported protocol version (%d)", h.version)
			h.version = 4
			_, _ = c.Write(e.body().frame(h, opError))
			return
		}
		body := make([]byte, h.length)
		if _, err := io.ReadFull(r, body); err != nil {
			return
		}
		if s.currentMode() == Stalled {
			continue // never answered: the client times out
		}
		op, w := cn.handle(h, body)
		s.requests.Add(1)
		if _, err := cn.w.Write(w.frame(h, op)); err != nil {
			return
		}
		if r.Buffered() == 0 {
			if err := cn.w.Flush(); err != nil {
				return
			}
		}
	}
}

// handle answers one request: the response's opcode and body.
func (cn *conn) handle(h header, body []byte) (byte, *writer) {
	if h.version&0x7f != 4 {
		return opError, errorf(codeProtocol, "Invalid or unsupported protocol version (%d); supported versions are (4/v4)", h.version&0x7f).body()
	}
	if h.flags&0x01 != 0 {
		return opError, errorf(codeProtocol, "compression is not supported").body()
	}
	r := &reader{b: body}
	if h.flags&0x04 != 0 { // custom payload: a [bytes map], ignored
		for range r.short() {
			r.string()
			r.value()
		}
	}
	var w writer
	switch h.op {
	case opOptions:
		w.short(2)
		w.string("CQL_VERSION")
		w.stringList([]string{"3.4.4"})
		w.string("COMPRESSION")
		w.stringList(nil)
		return opSupported, &w
	case opStartup:
		opts := r.stringMap()
		if r.err != nil {
			return opError, errorf(codeProtocol, "STARTUP: %v", r.err).body()
		}
		if opts["CQL_VERSION"] == "" {
			return opError, errorf(codeProtocol, "CQL_VERSION is mandatory").body()
		}
		if cn.s.cfg.Username != "" {
			cn.authing = true
			w.string("org.apache.cassandra.auth.PasswordAuthenticator")
			return opAuthenticate, &w
		}
		cn.started = true
		return opReady, &w
	case opAuthResponse:
		if !cn.authing {
			return opError, errorf(codeProtocol, "unexpected AUTH_RESPONSE").body()
		}
		tok := r.value()
		user, pass, ok := plain(tok.b)
		if !ok || user != cn.s.cfg.Username || pass != cn.s.cfg.Password {
			return opError, errorf(codeBadCreds, "Provided username %s and/or password are incorrect", user).body()
		}
		cn.authing, cn.started = false, true
		w.int(-1)
		return opAuthSuccess, &w
	}
	if !cn.started {
		return opError, errorf(codeProtocol, "unexpected message %#x before STARTUP and authentication", h.op).body()
	}
	var err *cqlError
	switch h.op {
	case opRegister:
		return opReady, &w
	case opQuery:
		q := r.longString()
		p := r.params()
		if r.err != nil {
			return opError, errorf(codeProtocol, "QUERY: %v", r.err).body()
		}
		var st *stmt
		if st, err = parse(q); err == nil {
			err = cn.exec(st, p, &w)
		}
	case opPrepare:
		q := r.longString()
		if r.err != nil {
			return opError, errorf(codeProtocol, "PREPARE: %v", r.err).body()
		}
		err = cn.prepare(q, &w)
	case opExecute:
		id := r.shortBytes()
		p := r.params()
		if r.err != nil {
			return opError, errorf(codeProtocol, "EXECUTE: %v", r.err).body()
		}
		cn.s.mu.Lock()
		st := cn.s.prepared[string(id)]
		cn.s.mu.Unlock()
		if st == nil {
			var e writer
			e.shortBytes(id)
			err = &cqlError{code: codeUnprepared, msg: "Prepared query with ID " + fmt.Sprintf("%x", id) + " not found", extra: e.b}
		} else {
			err = cn.exec(st, p, &w)
		}
	case opBatch:
		err = cn.batch(r, &w)
	default:
		err = errorf(codeProtocol, "unknown opcode %#x", h.op)
	}
	if err != nil {
		return opError, err.body()
	}
	return opResult, &w
}

// plain splits a SASL PLAIN token: [authzid] NUL user NUL password.
func plain(b []byte) (user, pass string, ok bool) {
	var parts [][]byte
	start := 0
	for i, c := range b {
		if c == 0 {
			parts = append(parts, b[start:i])
			start = i + 1
		}
	}
	parts = append(parts, b[start:])
	if len(parts) != 3 {
		return "", "", false
	}
	return string(parts[1]), string(parts[2]), true
}

func (cn *conn) prepare(q string, w *writer) *cqlError {
	st, err := parse(q)
	if err != nil {
		return err
	}
	if st.kind == stmtUse {
		return errorf(codeInvalid, "USE cannot be prepared")
	}
	cn.s.mu.Lock()
	defer cn.s.mu.Unlock()
	tb, err := cn.table(st)
	if err != nil {
		return err
	}
	sum := md5.Sum([]byte(cn.keyspace + "\x00" + q))
	id := sum[:]
	// Resolve the table now: the id names it.
	if st.keyspace == "" {
		st.keyspace = tb.ks
	}
	cn.s.prepared[string(id)] = st
	w.int(resultPrepared)
	w.shortBytes(id)
	var names []string
	var types []*cqlType
	var pk []int
	switch st.kind {
	case stmtInsert:
		cols, err := tb.columns(st.cols)
		if err != nil {
			return err
		}
		for _, i := range cols {
			names = append(names, tb.cols[i].Name)
			types = append(types, tb.cols[i].typ)
		}
		for _, p := range tb.pk {
			for k, i := range cols {
				if i == p {
					pk = append(pk, k)
				}
			}
		}
	case stmtSelect:
		for _, c := range st.where {
			if c.bind < 0 {
				continue
			}
			i, ok := tb.idx[c.col]
			if !ok {
				return errorf(codeInvalid, "Undefined column name %s", c.col)
			}
			names = append(names, tb.cols[i].Name)
			types = append(types, tb.cols[i].typ)
		}
	}
	tb.spec(w, names, types, pk, true, false)
	if st.kind == stmtSelect {
		rn, rt, err := resultColumns(tb, st)
		if err != nil {
			return err
		}
		tb.spec(w, rn, rt, nil, false, false)
	} else {
		w.int(0x0004)
		w.int(0)
	}
	return nil
}

// table resolves st's table; the caller holds s.mu.
func (cn *conn) table(st *stmt) (*table, *cqlError) {
	ks := st.keyspace
	if ks == "" {
		ks = cn.keyspace
	}
	if ks == "" {
		return nil, errorf(codeInvalid, "No keyspace has been specified. USE a keyspace, or explicitly specify keyspace.tablename")
	}
	tb := cn.s.tables[ks+"."+st.table]
	if tb == nil {
		return nil, errorf(codeInvalid, "unconfigured table %s", st.table)
	}
	return tb, nil
}

func resultColumns(tb *table, st *stmt) ([]string, []*cqlType, *cqlError) {
	if st.count {
		return []string{"count"}, []*cqlType{{name: "bigint"}}, nil
	}
	cols, err := tb.columns(st.cols)
	if err != nil {
		return nil, nil, err
	}
	names := make([]string, len(cols))
	types := make([]*cqlType, len(cols))
	for k, i := range cols {
		names[k], types[k] = tb.cols[i].Name, tb.cols[i].typ
	}
	return names, types, nil
}

// exec runs a QUERY or EXECUTE of st with p.
func (cn *conn) exec(st *stmt, p params, w *writer) *cqlError {
	if st.kind == stmtUse {
		cn.s.mu.Lock()
		defer cn.s.mu.Unlock()
		for _, tb := range cn.s.tables {
			if tb.ks == st.keyspace {
				cn.keyspace = st.keyspace
				w.int(0x0003)
				w.string(st.keyspace)
				return nil
			}
		}
		return errorf(codeInvalid, "Keyspace '%s' does not exist", st.keyspace)
	}
	if len(p.values) != st.binds {
		return errorf(codeInvalid, "There were %d markers(?) in CQL but %d bound variables", st.binds, len(p.values))
	}
	if st.kind == stmtInsert {
		return cn.write([]*stmt{st}, [][]value{p.values}, p.consistency, p.timestamp, w)
	}
	cn.s.mu.Lock()
	defer cn.s.mu.Unlock()
	tb, err := cn.table(st)
	if err != nil {
		return err
	}
	names, types, err := resultColumns(tb, st)
	if err != nil {
		return err
	}
	rows, err := tb.match(st.where, p.values)
	if err != nil {
		return err
	}
	w.int(resultRows)
	tb.spec(w, names, types, nil, false, p.skipMeta)
	if st.count {
		w.int(1)
		w.bytes(bigintValue(int64(len(rows))))
		return nil
	}
	cols, _ := tb.columns(st.cols)
	w.int(int32(len(rows)))
	for _, row := range rows {
		for _, i := range cols {
			w.bytes(row[i].b)
		}
	}
	return nil
}

// write checks every INSERT of a request (one, or a batch's), then
// applies them all, or none if one is invalid, as Cassandra does.
func (cn *conn) write(sts []*stmt, vals [][]value, cl uint16, ts int64, w *writer) *cqlError {
	cn.s.mu.Lock()
	defer cn.s.mu.Unlock()
	cn.s.cls[cl]++
	tbs := make([]*table, len(sts))
	cols := make([][]int, len(sts))
	for k, st := range sts {
		if st.kind != stmtInsert {
			return errorf(codeInvalid, "Invalid statement in batch: only UPDATE, INSERT and DELETE statements are allowed.")
		}
		tb, err := cn.table(st)
		if err != nil {
			return err
		}
		c, err := tb.columns(st.cols)
		if err != nil {
			return err
		}
		if err := tb.checkInsert(c, vals[k]); err != nil {
			return err
		}
		tbs[k], cols[k] = tb, c
	}
	mode := cn.s.mode
	if mode == Unavailable {
		return unavailable(cl)
	}
	if ts == 0 {
		ts = time.Now().UnixMicro()
	}
	for k := range sts {
		tbs[k].insert(cols[k], vals[k], ts)
	}
	cn.s.writes.Add(int64(len(sts)))
	if len(sts) > 1 {
		cn.s.batches.Add(1)
	}
	if mode == TimingOut {
		kind := "SIMPLE"
		if len(sts) > 1 {
			kind = "UNLOGGED_BATCH"
		}
		return writeTimeout(cl, kind)
	}
	w.int(resultVoid)
	return nil
}

// batch runs a BATCH request (§4.1.7).
func (cn *conn) batch(r *reader, w *writer) *cqlError {
	typ := r.byte()
	n := int(r.short())
	sts := make([]*stmt, 0, n)
	vals := make([][]value, 0, n)
	for range n {
		var st *stmt
		switch r.byte() {
		case 0:
			q := r.longString()
			var err *cqlError
			if st, err = parse(q); err != nil {
				return err
			}
		case 1:
			id := r.shortBytes()
			cn.s.mu.Lock()
			st = cn.s.prepared[string(id)]
			cn.s.mu.Unlock()
			if st == nil {
				var e writer
				e.shortBytes(id)
				return &cqlError{code: codeUnprepared, msg: fmt.Sprintf("Prepared query with ID %x not found", id), extra: e.b}
			}
		default:
			return errorf(codeProtocol, "BATCH: bad query kind")
		}
		nv := int(r.short())
		v := make([]value, nv)
		for i := range v {
			v[i] = r.value()
		}
		if r.err == nil && nv != st.binds {
			return errorf(codeInvalid, "There were %d markers(?) in CQL but %d bound variables", st.binds, nv)
		}
		sts, vals = append(sts, st), append(vals, v)
	}
	cl := r.short()
	flags := r.byte()
	if flags&flagSerial != 0 {
		r.short()
	}
	var ts int64
	if flags&flagTimestamp != 0 {
		ts = r.long()
	}
	if r.err != nil {
		return errorf(codeProtocol, "BATCH: %v", r.err)
	}
	if typ == 2 {
		return errorf(codeInvalid, "Cannot include non-counter statement in a counter batch")
	}
	return cn.write(sts, vals, cl, ts, w)
}
