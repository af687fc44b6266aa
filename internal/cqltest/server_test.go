package cqltest_test

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"github.com/sluicehq/sluice/internal/cqltest"
)

var events = cqltest.Table{Keyspace: "app", Name: "events", Columns: []cqltest.Column{
	{Name: "k", Type: "text", Kind: cqltest.PartitionKey}, {Name: "i", Type: "bigint", Kind: cqltest.Clustering},
	{Name: "n", Type: "int"}, {Name: "tags", Type: "list<text>"}}}

func session(t *testing.T, s *cqltest.Server, user, pass string) (*gocql.Session, error) {
	t.Helper()
	c := gocql.NewCluster(s.Addr())
	c.Port = s.Port()
	c.ProtoVersion = 4
	c.Keyspace = "app"
	c.Consistency = gocql.LocalQuorum
	c.Timeout = 2 * time.Second
	c.ConnectTimeout = 2 * time.Second
	if user != "" {
		c.Authenticator = gocql.PasswordAuthenticator{Username: user, Password: pass}
	}
	sess, err := c.CreateSession()
	if err == nil {
		t.Cleanup(sess.Close)
	}
	return sess, err
}

func TestUpsertBatchAndSelect(t *testing.T) {
	s := cqltest.Start(t, cqltest.Config{Tables: []cqltest.Table{events}})
	sess, err := session(t, s, "", "")
	if err != nil {
		t.Fatal(err)
	}
	ins := "INSERT INTO app.events (k, i, n, tags) VALUES (?, ?, ?, ?)"
	for range 2 {
		if err := sess.Query(ins, "a", int64(1), 7, []string{"x", "y"}).Exec(); err != nil {
			t.Fatal(err)
		}
	}
	b := sess.NewBatch(gocql.UnloggedBatch)
	for i := range 10 {
		b.Query(ins, "b", int64(i), i, nil)
	}
	if err := sess.ExecuteBatch(b); err != nil {
		t.Fatal(err)
	}
	if err := sess.Query(ins, "a", int64(1), 8, []string{"z"}).Exec(); err != nil {
		t.Fatal(err)
	}
	var n int64
	if err := sess.Query("SELECT count(*) FROM app.events").Scan(&n); err != nil || n != 11 {
		t.Fatalf("count: %d, %v; want 11 rows (a row written twice is one)", n, err)
	}
	var got int
	var tags []string
	if err := sess.Query("SELECT n, tags FROM events WHERE k = ? AND i = ?", "a", int64(1)).Scan(&got, &tags); err != nil || got != 8 || len(tags) != 1 {
		t.Fatalf("row a/1: n %d tags %v, %v; want the last write (8, [z])", got, tags, err)
	}
	if s.Writes() != 13 || s.Batches() != 1 || s.WritesAt(uint16(gocql.LocalQuorum)) != 4 {
		t.Fatalf("writes %d batches %d at LOCAL_QUORUM %d; want 13, 1, 4", s.Writes(), s.Batches(), s.WritesAt(uint16(gocql.LocalQuorum)))
	}
	if c := s.Count("app", "events"); c != 11 {
		t.Fatalf("Count = %d, want 11", c)
	}
}

func TestErrors(t *testing.T) {
	s := cqltest.Start(t, cqltest.Config{Tables: []cqltest.Table{events}})
	sess, err := session(t, s, "", "")
	if err != nil {
		t.Fatal(err)
	}
	var re gocql.RequestError
	err = sess.Query("INSERT INTO app.events (k, i, n) VALUES (?, ?, ?)", nil, int64(1), 1).Exec()
	if !errors.As(err, &re) || re.Code() != gocql.ErrCodeInvalid {
		t.Fatalf("null key: %v, want Invalid", err)
	}
	err = sess.Query("INSERT INTO app.nosuch (k) VALUES (?)", "a").Exec()
	if !errors.As(err, &re) || re.Code() != gocql.ErrCodeInvalid || !strings.Contains(err.Error(), "unconfigured table") {
		t.Fatalf("no table: %v, want Invalid", err)
	}
	err = sess.Query("INSERT INTO app.events k VALUES").Exec()
	if !errors.As(err, &re) || re.Code() != gocql.ErrCodeSyntax {
		t.Fatalf("syntax: %v, want a syntax error", err)
	}
	b := sess.NewBatch(gocql.UnloggedBatch)
	b.Query("INSERT INTO app.events (k, i) VALUES (?, ?)", "ok", int64(1))
	b.Query("INSERT INTO app.events (k, i) VALUES (?, ?)", "", int64(1))
	if err := sess.ExecuteBatch(b); !errors.As(err, &re) || re.Code() != gocql.ErrCodeInvalid || s.Count("app", "events") != 0 {
		t.Fatalf("batch with an empty key: %v, %d rows; want Invalid and nothing applied", err, s.Count("app", "events"))
	}
	sluiceMode(t, s, cqltest.Unavailable)
	var ue *gocql.RequestErrUnavailable
	if err := sess.Query("INSERT INTO app.events (k, i) VALUES (?, ?)", "a", int64(1)).Exec(); !errors.As(err, &ue) {
		t.Fatalf("unavailable: %v", err)
	}
	sluiceMode(t, s, cqltest.TimingOut)
	var we *gocql.RequestErrWriteTimeout
	if err := sess.Query("INSERT INTO app.events (k, i) VALUES (?, ?)", "a", int64(1)).Exec(); !errors.As(err, &we) || s.Count("app", "events") != 1 {
		t.Fatalf("write timeout: %v (%d rows); want the timeout, the row applied", err, s.Count("app", "events"))
	}
}

func sluiceMode(t *testing.T, s *cqltest.Server, m cqltest.Mode) {
	t.Helper()
	if err := s.SetMode(m); err != nil {
		t.Fatal(err)
	}
}

func TestPasswordAuthenticator(t *testing.T) {
	s := cqltest.Start(t, cqltest.Config{Tables: []cqltest.Table{events}, Username: "sluice", Password: "secret"})
	if _, err := session(t, s, "sluice", "wrong"); err == nil || !strings.Contains(err.Error(), "password are incorrect") {
		t.Fatalf("wrong password: %v", err)
	}
	if _, err := session(t, s, "", ""); err == nil {
		t.Fatal("no credentials: connected")
	}
	sess, err := session(t, s, "sluice", "secret")
	if err != nil {
		t.Fatal(err)
	}
	if err := sess.Query("INSERT INTO events (k, i) VALUES (?, ?)", "a", int64(1)).Exec(); err != nil {
		t.Fatal(err)
	}
}

// TestNotACQLFrame: a frame of no protocol version (here a TLS hello) is
// answered with a protocol error and the connection closed, at once, as
// Cassandra does; the server does not wait for the body its bytes would
// announce.
func TestNotACQLFrame(t *testing.T) {
	s := cqltest.Start(t, cqltest.Config{Tables: []cqltest.Table{events}})
	c, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	hello := []byte{0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc} // announces a 16 MB "body"
	if _, err := c.Write(hello); err != nil {
		t.Fatal(err)
	}
	resp, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("reading the answer: %v (want an error frame, then EOF)", err)
	}
	if len(resp) < 13 || resp[0] != 0x84 || resp[4] != 0x00 || binary.BigEndian.Uint32(resp[9:]) != 0x000A {
		t.Fatalf("answer % x, want a v4 ERROR frame with code 0x000A (protocol error)", resp)
	}
}
