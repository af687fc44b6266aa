package cassandra

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gocql/gocql"

	"github.com/sluicehq/sluice/sdk"
)

// MapFunc turns a record into the values of SinkConfig.Columns, in that
// order: any Go value gocql marshals into the column's type, nil for a
// null, or gocql.UnsetValue to leave the column as it is. An error sends
// the record to the dead-letter stream. It must be deterministic: a record
// replayed after a restore must give the same row.
type MapFunc func(sdk.Record) ([]any, error)

// SinkConfig configures a Cassandra sink. Zero fields take the defaults
// documented on them (DefaultSinkConfig fills them in).
type SinkConfig struct {
	// Name is the operator's name; required.
	Name string
	// Inputs are the streams the sink reads; required.
	Inputs []sdk.Input
	// Parallelism is the number of instances; 0 means 1. Rows of one
	// primary key written by several instances race (last write
	// timestamp wins): keep 1, or route the input group-by on the key.
	Parallelism int
	// KeyGroups is the operator's number of key groups; 0 is the
	// runtime's default.
	KeyGroups int

	// Hosts are the contact points, "host" or "host:port"; required. The
	// driver discovers the other nodes from them.
	Hosts []string
	// Port is the native protocol port of hosts given without one; 0
	// means 9042.
	Port int
	// Keyspace and Table name the table written; required. Both must
	// exist (the sink creates nothing). Names are case-sensitive, as
	// system_schema stores them (lower case unless created quoted).
	Keyspace, Table string
	// Columns are the columns written, in the order Map returns values;
	// required. They must include every primary key column (partition key
	// and clustering columns, read from the table's schema at start).
	Columns []string
	// Map turns a record into the row's values; nil means the JSON mode:
	// the record's value is a JSON object whose fields named like Columns
	// give the values (see the package documentation).
	Map MapFunc
	// Consistency is the consistency level of the writes ("ONE",
	// "LOCAL_QUORUM", "QUORUM", "ALL", "EACH_QUORUM", …); "" means
	// LOCAL_QUORUM.
	Consistency string
	// Username and Password log in with PasswordAuthenticator; both or
	// neither.
	Username, Password string
	// TLS, when set, encrypts the connections (the cluster's
	// client_encryption_options).
	TLS *TLSConfig

	// BatchRows is the most rows of one partition sent in one unlogged
	// batch (rows of different partitions are sent separately, at once);
	// 0 means 50. Keep batches under the cluster's
	// batch_size_fail_threshold_in_kb (50 KiB by default).
	BatchRows int
	// Concurrency is the most writes (statements or batches) in flight
	// per instance; 0 means 16.
	Concurrency int
	// MaxBufferedRows bounds the rows (distinct primary keys) held
	// between flushes; beyond it ProcessRecord writes them at once, and
	// while that fails waits for the cluster (backpressure). 0 means
	// 100,000.
	MaxBufferedRows int
	// WriteTimeout bounds one flush (every write of it, retries
	// included), and is the driver's per-request timeout; 0 means 10 s.
	WriteTimeout time.Duration
	// ConnectTimeout bounds connecting to a host; 0 means 5 s.
	ConnectTimeout time.Duration
	// ReconnectInterval is how often the driver tries hosts it lost
	// again; 0 means 1 s.
	ReconnectInterval time.Duration
	// CloseTimeout bounds Close's last flush; 0 means 10 s.
	CloseTimeout time.Duration
	// Metrics, when set, counts what every instance of the sink does
	// (rows, bytes, errors) and shows an outage while it lasts.
	Metrics *Metrics
}

// TLSConfig sets the connections' TLS. Empty fields take Go's defaults.
type TLSConfig struct {
	// CAFile is the PEM file of the CA that signs the nodes'
	// certificates; "" means the system's roots.
	CAFile string
	// CertFile and KeyFile are a client certificate and its key (PEM
	// files), for clusters that require them
	// (require_client_auth: true); both or neither.
	CertFile, KeyFile string
	// ServerName is the name the nodes' certificates must carry; "" means
	// each host's name or address as given (or discovered).
	ServerName string
	// InsecureSkipVerify accepts any certificate: encryption without
	// authentication of the nodes. For tests only.
	InsecureSkipVerify bool
}

// DefaultSinkConfig returns cfg with its zero fields set to their
// defaults.
func DefaultSinkConfig(cfg SinkConfig) SinkConfig {
	orDefault(&cfg.Parallelism, 1)
	orDefault(&cfg.Port, 9042)
	orDefault(&cfg.BatchRows, 50)
	orDefault(&cfg.Concurrency, 16)
	orDefault(&cfg.MaxBufferedRows, 100_000)
	orDefault(&cfg.WriteTimeout, 10*time.Second)
	orDefault(&cfg.ConnectTimeout, 5*time.Second)
	orDefault(&cfg.ReconnectInterval, time.Second)
	orDefault(&cfg.CloseTimeout, 10*time.Second)
	orDefault(&cfg.Consistency, "LOCAL_QUORUM")
	return cfg
}

// orDefault sets *v to d if it is the zero value.
func orDefault[T comparable](v *T, d T) {
	var zero T
	if *v == zero {
		*v = d
	}
}

// Validate checks cfg without contacting the cluster (it reads the TLS
// files); the error is a *ConfigError naming the field.
func (c SinkConfig) Validate() error {
	bad := func(field, format string, args ...any) error {
		return &ConfigError{Field: field, Reason: fmt.Sprintf(format, args...)}
	}
	switch {
	case c.Name == "":
		return bad("Name", "required")
	case len(c.Inputs) == 0:
		return bad("Inputs", "must name at least one stream")
	case c.Parallelism < 0:
		return bad("Parallelism", "%d is negative", c.Parallelism)
	case len(c.Hosts) == 0:
		return bad("Hosts", `required: the contact points, e.g. ["cass1:9042", "cass2:9042"]`)
	case c.Port < 0 || c.Port > 65535:
		return bad("Port", "%d is not a port", c.Port)
	case c.Keyspace == "":
		return bad("Keyspace", "required")
	case c.Table == "":
		return bad("Table", "required")
	case len(c.Columns) == 0:
		return bad("Columns", "must name at least one column (every primary key column among them)")
	case (c.Username == "") != (c.Password == ""):
		return bad("Username", "Username and Password go together: set both or neither")
	}
	for _, n := range []struct {
		field string
		v     int64
	}{
		{"BatchRows", int64(c.BatchRows)}, {"Concurrency", int64(c.Concurrency)}, {"MaxBufferedRows", int64(c.MaxBufferedRows)},
		{"WriteTimeout", int64(c.WriteTimeout)}, {"ConnectTimeout", int64(c.ConnectTimeout)},
		{"ReconnectInterval", int64(c.ReconnectInterval)}, {"CloseTimeout", int64(c.CloseTimeout)},
	} {
		if n.v < 0 {
			return bad(n.field, "is negative")
		}
	}
	for i, in := range c.Inputs {
		if in.Stream == "" {
			return bad(fmt.Sprintf("Inputs[%d].Stream", i), "required")
		}
	}
	for i, h := range c.Hosts {
		if err := checkHost(h); err != nil {
			return bad(fmt.Sprintf("Hosts[%d]", i), "%v", err)
		}
	}
	for i, col := range c.Columns {
		if col == "" {
			return bad(fmt.Sprintf("Columns[%d]", i), "empty")
		}
		if slices.Index(c.Columns, col) != i {
			return bad(fmt.Sprintf("Columns[%d]", i), "%q is named twice", col)
		}
	}
	if c.Consistency != "" {
		if _, err := parseConsistency(c.Consistency); err != nil {
			return bad("Consistency", "%v", err)
		}
	}
	if c.TLS != nil {
		if _, err := c.TLS.config(); err != nil {
			return err
		}
	}
	return nil
}

// checkHost reports a contact point that is neither "host" nor
// "host:port".
func checkHost(h string) error {
	if h == "" || strings.TrimSpace(h) != h {
		return fmt.Errorf("%q: want host or host:port", h)
	}
	host, port, err := net.SplitHostPort(h)
	if err != nil {
		if strings.Contains(err.Error(), "missing port") {
			return nil
		}
		return fmt.Errorf("%q: %v", h, err)
	}
	if n, err := strconv.Atoi(port); host == "" || err != nil || n <= 0 || n > 65535 {
		return fmt.Errorf("%q: want host or host:port", h)
	}
	return nil
}

var consistencies = []string{"ANY", "ONE", "TWO", "THREE", "QUORUM", "ALL", "LOCAL_QUORUM", "EACH_QUORUM", "LOCAL_ONE"}

// parseConsistency parses a write consistency level (SERIAL and
// LOCAL_SERIAL are for reads and conditional writes only).
func parseConsistency(s string) (gocql.Consistency, error) {
	s = strings.ToUpper(s)
	if !slices.Contains(consistencies, s) {
		return 0, fmt.Errorf("%q is none of %s", s, strings.Join(consistencies, ", "))
	}
	return gocql.ParseConsistencyWrapper(s)
}

// config builds the tls.Config; the error names the field.
func (t *TLSConfig) config() (*tls.Config, error) {
	bad := func(field string, err error) error {
		return &ConfigError{Field: "TLS." + field, Reason: err.Error()}
	}
	tc := &tls.Config{ServerName: t.ServerName, InsecureSkipVerify: t.InsecureSkipVerify, MinVersion: tls.VersionTLS12}
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, bad("CAFile", err)
		}
		tc.RootCAs = x509.NewCertPool()
		if !tc.RootCAs.AppendCertsFromPEM(pem) {
			return nil, bad("CAFile", fmt.Errorf("%s holds no PEM certificate", t.CAFile))
		}
	}
	if (t.CertFile == "") != (t.KeyFile == "") {
		return nil, bad("CertFile", fmt.Errorf("TLS.CertFile and TLS.KeyFile go together: set both or neither"))
	}
	if t.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, bad("CertFile", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}

// cluster returns the driver's configuration of c (validated and
// defaulted).
func (c SinkConfig) cluster(log *slog.Logger) (*gocql.ClusterConfig, error) {
	cc := gocql.NewCluster(c.Hosts...)
	cc.Logger = driverLog{log}
	cc.Port = c.Port
	cc.ProtoVersion = 4
	cc.Consistency, _ = parseConsistency(c.Consistency)
	cc.Timeout = c.WriteTimeout
	cc.WriteTimeout = c.WriteTimeout
	cc.ConnectTimeout = c.ConnectTimeout
	cc.ReconnectInterval = c.ReconnectInterval
	cc.ReconnectionPolicy = &gocql.ExponentialReconnectionPolicy{MaxRetries: 1 << 20,
		InitialInterval: 100 * time.Millisecond, MaxInterval: c.ReconnectInterval}
	// The sink retries a failed flush itself (every write carries its
	// timestamp, so a repeat is the same write); the driver tries each
	// write once, on the next host of the policy if a host fails.
	cc.RetryPolicy = &gocql.SimpleRetryPolicy{NumRetries: 1}
	if c.Username != "" {
		cc.Authenticator = gocql.PasswordAuthenticator{Username: c.Username, Password: c.Password}
	}
	if c.TLS != nil {
		tc, err := c.TLS.config()
		if err != nil {
			return nil, err
		}
		cc.SslOpts = &gocql.SslOptions{Config: tc, EnableHostVerification: !c.TLS.InsecureSkipVerify}
	}
	return cc, nil
}

// driverLog sends the driver's messages (reconnection attempts, mostly)
// to the instance's logger, at debug level: the sink reports outages
// itself.
type driverLog struct{ log *slog.Logger }

func (d driverLog) Print(v ...any) { d.log.Debug("gocql: " + fmt.Sprint(v...)) }
func (d driverLog) Printf(format string, v ...any) {
	d.log.Debug("gocql: " + fmt.Sprintf(format, v...))
}
func (d driverLog) Println(v ...any) { d.log.Debug("gocql: " + fmt.Sprint(v...)) }
