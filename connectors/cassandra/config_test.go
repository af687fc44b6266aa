package cassandra_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/connectors/cassandra"
	"github.com/sluicehq/sluice/sdk"
)

func TestValidateNamesTheField(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	ok := cassandra.SinkConfig{Name: "store", Inputs: []sdk.Input{{Stream: "in"}}, Hosts: []string{"127.0.0.1:9042", "cass2"},
		Keyspace: "app", Table: "events", Columns: []string{"k", "n"}}
	for _, tc := range []struct {
		field string
		edit  func(*cassandra.SinkConfig)
	}{
		{"Name", func(c *cassandra.SinkConfig) { c.Name = "" }},
		{"Inputs", func(c *cassandra.SinkConfig) { c.Inputs = nil }},
		{"Inputs[0].Stream", func(c *cassandra.SinkConfig) { c.Inputs = []sdk.Input{{}} }},
		{"Hosts", func(c *cassandra.SinkConfig) { c.Hosts = nil }},
		{"Hosts[1]", func(c *cassandra.SinkConfig) { c.Hosts = []string{"a", "b:notaport"} }},
		{"Hosts[0]", func(c *cassandra.SinkConfig) { c.Hosts = []string{""} }},
		{"Port", func(c *cassandra.SinkConfig) { c.Port = 70000 }},
		{"Keyspace", func(c *cassandra.SinkConfig) { c.Keyspace = "" }},
		{"Table", func(c *cassandra.SinkConfig) { c.Table = "" }},
		{"Columns", func(c *cassandra.SinkConfig) { c.Columns = nil }},
		{"Columns[1]", func(c *cassandra.SinkConfig) { c.Columns = []string{"k", "k"} }},
		{"Columns[0]", func(c *cassandra.SinkConfig) { c.Columns = []string{""} }},
		{"Consistency", func(c *cassandra.SinkConfig) { c.Consistency = "SERIAL" }},
		{"Username", func(c *cassandra.SinkConfig) { c.Password = "secret" }},
		{"TLS.CAFile", func(c *cassandra.SinkConfig) { c.TLS = &cassandra.TLSConfig{CAFile: filepath.Join(dir, "none.pem")} }},
		{"TLS.CAFile", func(c *cassandra.SinkConfig) { c.TLS = &cassandra.TLSConfig{CAFile: notPEM} }},
		{"TLS.CertFile", func(c *cassandra.SinkConfig) { c.TLS = &cassandra.TLSConfig{CertFile: notPEM} }},
		{"BatchRows", func(c *cassandra.SinkConfig) { c.BatchRows = -1 }},
		{"Concurrency", func(c *cassandra.SinkConfig) { c.Concurrency = -1 }},
		{"MaxBufferedRows", func(c *cassandra.SinkConfig) { c.MaxBufferedRows = -1 }},
		{"WriteTimeout", func(c *cassandra.SinkConfig) { c.WriteTimeout = -time.Second }},
	} {
		t.Run(tc.field, func(t *testing.T) {
			c := ok
			tc.edit(&c)
			_, err := cassandra.NewSink(c)
			var ce *cassandra.ConfigError
			if !errors.As(err, &ce) || !errors.Is(err, cassandra.ErrConfig) {
				t.Fatalf("got %v, want a *ConfigError", err)
			}
			if ce.Field != tc.field {
				t.Fatalf("error names %q (%v), want %q", ce.Field, err, tc.field)
			}
			if strings.Contains(err.Error(), "secret") {
				t.Fatalf("error shows the password: %v", err)
			}
		})
	}
	if _, err := cassandra.NewSink(ok); err != nil {
		t.Fatalf("good config refused: %v", err)
	}
	lower := ok
	lower.Consistency = "local_one"
	if _, err := cassandra.NewSink(lower); err != nil {
		t.Fatalf("consistency in lower case refused: %v", err)
	}
}
