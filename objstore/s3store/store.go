package s3store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/sluicehq/sluice/objstore"
	"github.com/sluicehq/sluice/objstore/internal/exactsize"
)

// Store is an objstore.Store in an S3 bucket. It is safe for concurrent
// use; its connections are pooled and closed when idle.
type Store struct {
	cfg    Config // with defaults
	client *minio.Client
	where  string // "endpoint/bucket/prefix", for errors
}

var _ objstore.Store = (*Store)(nil)

// Open validates cfg, makes a client and checks that the bucket exists and
// the credentials can reach it, so that a wrong setting fails here rather
// than at the first checkpoint.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	host, secure, _ := cfg.endpoint() // validated
	tr, err := minio.DefaultTransport(secure)
	if err != nil {
		return nil, fmt.Errorf("s3store: transport: %w", err)
	}
	tr.DialContext = dialIdle(cfg.IOTimeout)
	tr.TLSHandshakeTimeout = cfg.IOTimeout
	tr.ResponseHeaderTimeout = cfg.IOTimeout
	tr.IdleConnTimeout = min(tr.IdleConnTimeout, cfg.IOTimeout)
	lookup := minio.BucketLookupPath // what S3-compatible services serve
	if cfg.Endpoint == "" {
		lookup = minio.BucketLookupAuto
	}
	client, err := minio.New(host, &minio.Options{
		Creds:        credentials.NewStaticV4(cfg.AccessKeyID, cfg.SecretAccessKey, cfg.SessionToken),
		Secure:       secure,
		Transport:    tr,
		Region:       cfg.Region,
		BucketLookup: lookup,
		MaxRetries:   cfg.MaxRetries,
	})
	if err != nil {
		return nil, fmt.Errorf("s3store: client for %s: %w", host, err)
	}
	scheme := "http"
	if secure {
		scheme = "https"
	}
	s := &Store{cfg: cfg, client: client, where: scheme + "://" + host + "/" + cfg.Bucket + "/" + cfg.Prefix}
	ok, err := client.BucketExists(ctx, cfg.Bucket)
	if err != nil {
		return nil, fmt.Errorf("s3store: open %s: check the bucket: %w", s.where, err)
	}
	if !ok {
		return nil, fmt.Errorf("s3store: open %s: bucket %q does not exist", s.where, cfg.Bucket)
	}
	return s, nil
}

// Put implements objstore.Store. Up to Config.PartSize bytes go in one
// request, more in a multipart upload.
func (s *Store) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	if err := objstore.ValidateKey(key); err != nil {
		return fmt.Errorf("s3store: put: %w", err)
	}
	src, err := exactsize.Reader(r, size)
	if err == nil && size == 0 {
		// minio may send an empty body without reading it: check here
		// that the reader is empty too.
		if _, err = src.Read(make([]byte, 1)); err == io.EOF {
			src, err = bytes.NewReader(nil), nil
		}
	}
	if err != nil {
		return fmt.Errorf("s3store: put %q: %w", key, err)
	}
	body, srcErr := track(src)
	_, err = s.client.PutObject(ctx, s.cfg.Bucket, s.cfg.Prefix+key, body, size, minio.PutObjectOptions{
		ContentType: "application/octet-stream",
		PartSize:    s.cfg.PartSize,
	})
	if err != nil {
		if e := srcErr(); e != nil { // the caller's reader failed, not S3
			return fmt.Errorf("s3store: put %q: read the object: %w (upload: %v)", key, e, err)
		}
		return s.fail(ctx, "put", key, err)
	}
	return nil
}

// Get implements objstore.Store with one GET request, whose response body
// is the reader: a missing object is reported here, not at the first Read,
// and the reader streams the version current at the request. (minio-go's
// Client.GetObject would issue further requests conditional on that
// version, failing reads if the key is replaced meanwhile.)
func (s *Store) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	if err := objstore.ValidateKey(key); err != nil {
		return nil, fmt.Errorf("s3store: get: %w", err)
	}
	body, _, _, err := minio.Core{Client: s.client}.GetObject(ctx, s.cfg.Bucket, s.cfg.Prefix+key, minio.GetObjectOptions{})
	if err != nil {
		return nil, s.fail(ctx, "get", key, err)
	}
	return body, nil
}

// Stat implements objstore.Store.
func (s *Store) Stat(ctx context.Context, key string) (objstore.ObjectInfo, error) {
	if err := objstore.ValidateKey(key); err != nil {
		return objstore.ObjectInfo{}, fmt.Errorf("s3store: stat: %w", err)
	}
	info, err := s.client.StatObject(ctx, s.cfg.Bucket, s.cfg.Prefix+key, minio.StatObjectOptions{})
	if err != nil {
		return objstore.ObjectInfo{}, s.fail(ctx, "stat", key, err)
	}
	return objstore.ObjectInfo{Key: key, Size: info.Size, ModTime: info.LastModified}, nil
}

// List implements objstore.Store, ListObjectsV2 page by page. Objects
// under the prefix whose names are not valid keys (such as the "dir/"
// markers some consoles create) are left out.
func (s *Store) List(ctx context.Context, prefix string) ([]objstore.ObjectInfo, error) {
	if err := objstore.ValidatePrefix(prefix); err != nil {
		return nil, fmt.Errorf("s3store: list: %w", err)
	}
	out := []objstore.ObjectInfo{}
	for obj := range s.client.ListObjectsIter(ctx, s.cfg.Bucket, minio.ListObjectsOptions{
		Prefix:    s.cfg.Prefix + prefix,
		Recursive: true,
		MaxKeys:   s.cfg.ListPageSize,
	}) {
		if obj.Err != nil {
			return nil, s.fail(ctx, "list", prefix, obj.Err)
		}
		key := strings.TrimPrefix(obj.Key, s.cfg.Prefix)
		if objstore.ValidateKey(key) != nil {
			continue
		}
		out = append(out, objstore.ObjectInfo{Key: key, Size: obj.Size, ModTime: obj.LastModified})
	}
	// The iterator ends quietly when ctx is done: the listing is then cut.
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("s3store: list %q: %w", prefix, err)
	}
	slices.SortFunc(out, func(a, b objstore.ObjectInfo) int { return strings.Compare(a.Key, b.Key) })
	return out, nil
}

// Delete implements objstore.Store.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := objstore.ValidateKey(key); err != nil {
		return fmt.Errorf("s3store: delete: %w", err)
	}
	err := s.client.RemoveObject(ctx, s.cfg.Bucket, s.cfg.Prefix+key, minio.RemoveObjectOptions{})
	if err != nil && !isNotFound(err) {
		return s.fail(ctx, "delete", key, err)
	}
	return nil
}

// fail wraps an error of op on key: ErrNotFound for a missing object,
// ctx's error when ctx is done, else the cause with where it happened.
func (s *Store) fail(ctx context.Context, op, key string, err error) error {
	switch cerr := ctx.Err(); {
	case cerr != nil && !errors.Is(err, cerr):
		return fmt.Errorf("s3store: %s %q: %w (%v)", op, key, cerr, err)
	case cerr != nil:
		return fmt.Errorf("s3store: %s %q: %w", op, key, err)
	case isNotFound(err):
		return fmt.Errorf("s3store: %s %q: %w (%v)", op, key, objstore.ErrNotFound, err)
	}
	return fmt.Errorf("s3store: %s %q in %s: %w", op, key, s.where, err)
}

// isNotFound reports whether err is S3's answer for a missing object (not
// a missing bucket, which is a setting to fix).
func isNotFound(err error) bool {
	var resp minio.ErrorResponse
	if !errors.As(err, &resp) {
		return false
	}
	return resp.Code == "NoSuchKey" || (resp.StatusCode == http.StatusNotFound && resp.Code != "NoSuchBucket")
}

// track wraps the reader minio reads the object from, keeping its first
// error so that Put reports the caller's reader failing as such. An
// *io.SectionReader stays an io.ReaderAt and io.Seeker (minio reads those
// in parallel parts and re-reads them on retries).
func track(r io.Reader) (io.Reader, func() error) {
	t := &tracker{}
	if sr, ok := r.(*io.SectionReader); ok {
		return &trackedSection{SectionReader: sr, t: t}, t.get
	}
	return &trackedReader{r: r, t: t}, t.get
}

type tracker struct {
	mu  sync.Mutex
	err error
}

func (t *tracker) note(err error) error {
	if err != nil && err != io.EOF {
		t.mu.Lock()
		if t.err == nil {
			t.err = err
		}
		t.mu.Unlock()
	}
	return err
}

func (t *tracker) get() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.err
}

type trackedReader struct {
	r io.Reader
	t *tracker
}

func (r *trackedReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	return n, r.t.note(err)
}

type trackedSection struct {
	*io.SectionReader
	t *tracker
}

func (r *trackedSection) Read(p []byte) (int, error) {
	n, err := r.SectionReader.Read(p)
	return n, r.t.note(err)
}

func (r *trackedSection) ReadAt(p []byte, off int64) (int, error) {
	n, err := r.SectionReader.ReadAt(p, off)
	return n, r.t.note(err)
}
