package cassandra_test

import (
	"testing"
	"time"

	"github.com/gocql/gocql"

	"github.com/sluicehq/sluice/connectors/cassandra"
	"github.com/sluicehq/sluice/internal/cqltest"
	"github.com/sluicehq/sluice/sdk"
)

// events is the table of the tests: a row per (k, i).
var events = cqltest.Table{Keyspace: "app", Name: "events", Columns: []cqltest.Column{
	{Name: "k", Type: "text", Kind: cqltest.PartitionKey}, {Name: "i", Type: "bigint", Kind: cqltest.Clustering},
	{Name: "n", Type: "int"}, {Name: "score", Type: "double"}, {Name: "ok", Type: "boolean"},
	{Name: "at", Type: "timestamp"}, {Name: "id", Type: "uuid"}, {Name: "tags", Type: "list<text>"},
	{Name: "attrs", Type: "map<text, int>"}, {Name: "doc", Type: "text"}, {Name: "price", Type: "decimal"}}}

func start(t *testing.T, cfg cqltest.Config) *cqltest.Server {
	t.Helper()
	if cfg.Tables == nil {
		cfg.Tables = []cqltest.Table{events}
	}
	return cqltest.Start(t, cfg)
}

func baseConfig(s *cqltest.Server) cassandra.SinkConfig {
	return cassandra.SinkConfig{Name: "store", Inputs: []sdk.Input{{Stream: "in"}}, Hosts: []string{s.Addr()},
		Keyspace: "app", Table: "events", Columns: []string{"k", "i", "n", "score", "ok", "at", "id", "tags", "attrs", "doc", "price"},
		WriteTimeout: 2 * time.Second, ConnectTimeout: 2 * time.Second, ReconnectInterval: 200 * time.Millisecond}
}

func mustSink(t *testing.T, cfg cassandra.SinkConfig) sdk.Factory {
	t.Helper()
	f, err := cassandra.NewSink(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// session is a test's own client of s.
func session(t *testing.T, s *cqltest.Server) *gocql.Session {
	t.Helper()
	c := gocql.NewCluster(s.Addr())
	c.ProtoVersion = 4
	c.Timeout = 5 * time.Second
	sess, err := c.CreateSession()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sess.Close)
	return sess
}
