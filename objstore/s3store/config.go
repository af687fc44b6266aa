package s3store

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/minio/minio-go/v7/pkg/s3utils"

	"github.com/sluicehq/sluice/objstore"
)

// Config says where objects go and how the client behaves. Zero values
// mean the defaults, filled in by DefaultConfig's values.
type Config struct {
	// Endpoint is the S3 service's URL, "http://host:port" (no TLS) or
	// "https://host[:port]", with no path. Empty means AWS S3; then
	// buckets are addressed virtual-host style, else path style.
	Endpoint string
	// Bucket holds the objects; it must exist. Required.
	Bucket string
	// Prefix is put before every key: "" or a key prefix ending in "/"
	// ("jobs/7/"), so several stores can share a bucket.
	Prefix string
	// Region is the bucket's region; empty asks the service (one request,
	// cached).
	Region string

	// AccessKeyID and SecretAccessKey are required; SessionToken is for
	// temporary credentials.
	AccessKeyID     string
	SecretAccessKey string
	SessionToken    string

	// PartSize is the size of the parts of a multipart upload, and the
	// largest object put in one request (default 16 MiB, at least 5 MiB).
	PartSize uint64
	// IOTimeout bounds each step that can hang: connecting, the TLS
	// handshake, and any read or write on a connection that makes no
	// progress, including the wait for a response (default 30s).
	IOTimeout time.Duration
	// MaxRetries is how many times a request is tried in all (default 3;
	// 1 disables retries).
	MaxRetries int
	// ListPageSize is how many keys List asks for per request (default
	// and S3's maximum 1000).
	ListPageSize int
}

// Defaults.
const (
	DefaultPartSize     = 16 << 20
	DefaultIOTimeout    = 30 * time.Second
	DefaultMaxRetries   = 3
	DefaultListPageSize = 1000
	minPartSize         = 5 << 20 // S3's smallest part but the last
)

// DefaultConfig returns a Config with every tunable at its default.
func DefaultConfig() Config {
	return Config{
		PartSize:     DefaultPartSize,
		IOTimeout:    DefaultIOTimeout,
		MaxRetries:   DefaultMaxRetries,
		ListPageSize: DefaultListPageSize,
	}
}

// withDefaults returns c with zero values replaced by the defaults.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.PartSize == 0 {
		c.PartSize = d.PartSize
	}
	if c.IOTimeout == 0 {
		c.IOTimeout = d.IOTimeout
	}
	if c.MaxRetries == 0 {
		c.MaxRetries = d.MaxRetries
	}
	if c.ListPageSize == 0 {
		c.ListPageSize = d.ListPageSize
	}
	return c
}

// Validate checks c (zero values being defaults), naming the first bad
// field and what it should be.
func (c Config) Validate() error {
	c = c.withDefaults()
	if _, _, err := c.endpoint(); err != nil {
		return err
	}
	switch {
	case c.Bucket == "":
		return errors.New("s3store: Bucket is empty")
	case s3utils.CheckValidBucketNameStrict(c.Bucket) != nil:
		return fmt.Errorf("s3store: Bucket %q: %v", c.Bucket, s3utils.CheckValidBucketNameStrict(c.Bucket))
	case c.Prefix != "" && !strings.HasSuffix(c.Prefix, "/"):
		return fmt.Errorf("s3store: Prefix %q must be empty or end in \"/\"", c.Prefix)
	case c.AccessKeyID == "" || c.SecretAccessKey == "":
		return errors.New("s3store: AccessKeyID and SecretAccessKey are required")
	case c.PartSize < minPartSize:
		return fmt.Errorf("s3store: PartSize %d is below S3's minimum part size %d", c.PartSize, minPartSize)
	case c.IOTimeout < 0:
		return fmt.Errorf("s3store: IOTimeout %v is negative", c.IOTimeout)
	case c.MaxRetries < 0:
		return fmt.Errorf("s3store: MaxRetries %d is negative", c.MaxRetries)
	case c.ListPageSize < 0 || c.ListPageSize > 1000:
		return fmt.Errorf("s3store: ListPageSize %d is not in 1..1000", c.ListPageSize)
	}
	if c.Prefix != "" {
		if err := objstore.ValidatePrefix(c.Prefix); err != nil {
			return fmt.Errorf("s3store: Prefix: %w", err)
		}
	}
	return nil
}

// endpoint returns minio's host[:port] and whether to use TLS.
func (c Config) endpoint() (host string, secure bool, err error) {
	if c.Endpoint == "" {
		return "s3.amazonaws.com", true, nil
	}
	if !strings.HasPrefix(c.Endpoint, "http://") && !strings.HasPrefix(c.Endpoint, "https://") {
		return "", false, fmt.Errorf("s3store: Endpoint %q: scheme must be http or https (http://host:port, https://host)", c.Endpoint)
	}
	u, err := url.Parse(c.Endpoint)
	if err != nil {
		return "", false, fmt.Errorf("s3store: Endpoint %q: %w", c.Endpoint, err)
	}
	switch {
	case u.Host == "":
		return "", false, fmt.Errorf("s3store: Endpoint %q: no host", c.Endpoint)
	case u.User != nil:
		return "", false, fmt.Errorf("s3store: Endpoint %q: credentials do not go in the URL (use AccessKeyID/SecretAccessKey)", c.Endpoint)
	case u.Path != "" && u.Path != "/", u.RawQuery != "", u.Fragment != "":
		return "", false, fmt.Errorf("s3store: Endpoint %q: must have no path, query or fragment", c.Endpoint)
	}
	return u.Host, u.Scheme == "https", nil
}
