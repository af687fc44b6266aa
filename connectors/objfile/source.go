package objfile

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/sluicehq/sluice/objstore"
	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/codec"
	"github.com/sluicehq/sluice/sdk/connect"
)

// SourceConfig describes a bounded source reading the files under a
// prefix (what the sink wrote, for a backfill): JSON lines, and Parquet
// files (keys ending in ".parquet"), whose rows it reads as JSON objects.
type SourceConfig struct {
	// Name is the operator's name; Stream its output stream. One
	// instance reads.
	Name, Stream string
	// Store holds the files; Prefix ("" or ending in "/") selects them.
	// Keys under Prefix+PendingPrefix (default "_pending/") are skipped.
	Store         objstore.Store
	Prefix        string
	PendingPrefix string
}

// NewSource checks cfg and returns the factory of a bounded source: it
// reads the objects under Prefix in key order, one object per Poll, each
// line a record (its value without the '\n'), and ends once it has read
// the last object listed. Its position in State is the key of the last
// object read, so after a restore it reads on from the next one (an
// object put meanwhile with a smaller key is not read).
func NewSource(cfg SourceConfig) (sdk.Factory, error) {
	switch {
	case cfg.Name == "" || cfg.Stream == "":
		return nil, fmt.Errorf("%w: source %q: Name and Stream are required", ErrConfig, cfg.Name)
	case cfg.Store == nil:
		return nil, fmt.Errorf("%w: source %q: Store: required", ErrConfig, cfg.Name)
	case cfg.Prefix != "" && (!strings.HasSuffix(cfg.Prefix, "/") || objstore.ValidatePrefix(cfg.Prefix) != nil):
		return nil, fmt.Errorf("%w: source %q: Prefix: must be empty or a valid key prefix ending in \"/\"", ErrConfig, cfg.Name)
	}
	if cfg.PendingPrefix == "" {
		cfg.PendingPrefix = DefaultPendingPrefix
	}
	return connect.NewSource(connect.SourceConfig[string]{
		Name: cfg.Name, Stream: cfg.Stream, Parallelism: 1,
		Position: codec.String(), StateKey: "objfile/pos/",
		Open: func(sdk.Context) (connect.Reader[string], error) {
			return &reader{cfg: cfg, f: &files{cfg: SinkConfig{Store: cfg.Store, Stats: new(Stats)}}}, nil
		},
	})
}

// reader is the source's connect.Reader; f gives it the store calls.
type reader struct {
	cfg SourceConfig
	f   *files
}

// Read implements connect.Reader: it reads the first object after last.
func (r *reader) Read(_ sdk.Context, _ string, last string) ([]sdk.Record, string, error) {
	objs, err := r.f.list(r.cfg.Prefix)
	if err != nil {
		return nil, last, fmt.Errorf("list %q: %w: %w", r.cfg.Prefix, sdk.ErrTransient, err)
	}
	for _, o := range objs {
		if o.Key <= last || strings.HasPrefix(o.Key, r.cfg.Prefix+r.cfg.PendingPrefix) {
			continue
		}
		data, err := r.f.get(o.Key)
		if err != nil {
			return nil, last, fmt.Errorf("read %s: %w: %w", o.Key, sdk.ErrTransient, err)
		}
		if strings.HasSuffix(o.Key, FormatParquet.ext()) {
			recs, err := parquetRecords(data)
			if err != nil {
				return nil, last, fmt.Errorf("read %s: %w", o.Key, err)
			}
			return recs, o.Key, nil
		}
		var recs []sdk.Record
		for line := range bytes.Lines(data) {
			recs = append(recs, sdk.Record{Value: bytes.TrimSuffix(line, []byte("\n"))})
		}
		return recs, o.Key, nil
	}
	return nil, last, sdk.ErrEndOfStream
}
