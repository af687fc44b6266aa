package fsstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sluicehq/sluice/objstore"
	"github.com/sluicehq/sluice/objstore/internal/exactsize"
)

// tempPrefix starts the names of files being written.
const tempPrefix = objstore.ReservedPrefix + "tmp-"

// copyBufSize is the size of the buffer Put copies through.
const copyBufSize = 1 << 20

var copyBufs = sync.Pool{New: func() any { return new([copyBufSize]byte) }}

// Store is an objstore.Store keeping objects as files under a directory.
// It holds no state besides the path and is safe for concurrent use, also
// by several processes or nodes sharing the directory.
type Store struct {
	root string // absolute, cleaned
}

var (
	_ objstore.Store  = (*Store)(nil)
	_ objstore.Linker = (*Store)(nil)
)

// Open returns a Store keeping objects under dir, which it creates if
// missing. A relative dir is made absolute now.
func Open(dir string) (*Store, error) {
	if dir == "" {
		return nil, errors.New("fsstore: open: empty directory path")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("fsstore: open %s: %w", dir, err)
	}
	if err := os.MkdirAll(abs, 0o777); err != nil {
		return nil, fmt.Errorf("fsstore: open: %w", err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("fsstore: open: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("fsstore: open: %s is not a directory", abs)
	}
	return &Store{root: abs}, nil
}

// Dir returns the absolute path of the root directory.
func (s *Store) Dir() string { return s.root }

func (s *Store) path(key string) string {
	return filepath.Join(s.root, filepath.FromSlash(key))
}

// Put implements objstore.Store: temporary file, fsync, rename, fsync of
// the directory. The copy checks ctx between 1 MiB chunks.
func (s *Store) Put(ctx context.Context, key string, r io.Reader, size int64) (err error) {
	if err := objstore.ValidateKey(key); err != nil {
		return fmt.Errorf("fsstore: put: %w", err)
	}
	defer func() {
		if err != nil {
			err = fmt.Errorf("fsstore: put %q: %w", key, err)
		}
	}()
	src, err := exactsize.Reader(r, size)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	target := s.path(key)
	dir := filepath.Dir(target)
	f, err := s.createTemp(dir)
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()

	buf := copyBufs.Get().(*[copyBufSize]byte)
	n, err := io.CopyBuffer(ctxWriter{ctx, f}, src, buf[:])
	copyBufs.Put(buf)
	if err != nil {
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if n != size { // a seekable reader that shrank after the size check
		return fmt.Errorf("%w: reader ended after %d of %d bytes", objstore.ErrSizeMismatch, n, size)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", tmp, err)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := os.Rename(tmp, target); err != nil {
		return err
	}
	return syncDir(dir)
}

// PutLink implements objstore.Linker: the file is fsynced, hard-linked
// under a temporary name, renamed to the key, and the directory fsynced.
func (s *Store) PutLink(ctx context.Context, key, path string) (err error) {
	if err := objstore.ValidateKey(key); err != nil {
		return fmt.Errorf("fsstore: put link: %w", err)
	}
	defer func() {
		if err != nil {
			err = fmt.Errorf("fsstore: put link %q to %s: %w", key, path, err)
		}
	}()
	src, err := os.Open(path)
	if err != nil {
		return err
	}
	err = src.Sync()
	src.Close()
	if err != nil {
		return err
	}
	target := s.path(key)
	dir := filepath.Dir(target)
	f, err := s.createTemp(dir) // a fresh name, and the directories
	if err != nil {
		return err
	}
	tmp := f.Name()
	f.Close()
	if err := os.Remove(tmp); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := os.Link(path, tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, target); err != nil {
		os.Remove(tmp)
		return err
	}
	return syncDir(dir)
}

// createTemp creates a new temporary file in dir, creating dir (and
// fsyncing new directories' parents) first. A concurrent Delete may prune
// dir or a parent meanwhile (another node sharing the directory, deleting
// in a loop); then it tries again, after a growing pause from the third
// time, so that the two fall out of step.
func (s *Store) createTemp(dir string) (*os.File, error) {
	var last error
	for attempt := range createTempAttempts {
		if attempt >= 2 {
			time.Sleep(time.Duration(attempt) * 50 * time.Microsecond)
		}
		if err := s.mkdirAllSync(dir); errors.Is(err, fs.ErrNotExist) {
			last = err // a parent pruned meanwhile
			continue
		} else if err != nil {
			return nil, err
		}
		var rnd [8]byte
		rand.Read(rnd[:])
		name := filepath.Join(dir, tempPrefix+hex.EncodeToString(rnd[:]))
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, fs.ErrExist) {
			return nil, err
		}
		last = err
	}
	return nil, last
}

// createTempAttempts bounds createTemp's tries (the pauses add up to
// about 0.25 s).
const createTempAttempts = 100

// mkdirAllSync creates dir and its missing parents below the root, and
// fsyncs the parent of each directory it creates, so that a file renamed
// into dir and fsynced is reachable after a crash.
func (s *Store) mkdirAllSync(dir string) error {
	if fi, err := os.Stat(dir); err == nil {
		if !fi.IsDir() {
			return fmt.Errorf("%s is an object, not a directory (a key cannot be a leading path of another)", dir)
		}
		return nil
	}
	rel, err := filepath.Rel(s.root, dir)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return fmt.Errorf("directory %s is not under the store's root %s", dir, s.root)
	}
	cur := s.root
	for part := range strings.SplitSeq(rel, string(filepath.Separator)) {
		parent := cur
		cur = filepath.Join(cur, part)
		err := os.Mkdir(cur, 0o777)
		switch {
		case err == nil:
			if err := syncDir(parent); err != nil {
				return err
			}
		case errors.Is(err, fs.ErrExist):
			if fi, serr := os.Stat(cur); serr == nil && !fi.IsDir() {
				return fmt.Errorf("%s is an object, not a directory (a key cannot be a leading path of another)", cur)
			}
		default:
			return err
		}
	}
	return nil
}

// syncDir fsyncs a directory, making renames and creations in it durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if errors.Is(err, syscall.EINVAL) {
		// Some file systems (a few FUSE ones) cannot fsync directories;
		// their renames are as durable as they get.
		return nil
	}
	if err != nil {
		return fmt.Errorf("fsync directory %s: %w", dir, err)
	}
	return nil
}

// Get implements objstore.Store.
func (s *Store) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	if err := objstore.ValidateKey(key); err != nil {
		return nil, fmt.Errorf("fsstore: get: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("fsstore: get %q: %w", key, err)
	}
	f, err := os.Open(s.path(key))
	if err != nil {
		return nil, fmt.Errorf("fsstore: get %q: %w", key, notFound(err))
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("fsstore: get %q: %w", key, err)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("fsstore: get %q: %w (a directory)", key, objstore.ErrNotFound)
	}
	return &ctxFile{ctx: ctx, f: f}, nil
}

// Stat implements objstore.Store.
func (s *Store) Stat(ctx context.Context, key string) (objstore.ObjectInfo, error) {
	if err := objstore.ValidateKey(key); err != nil {
		return objstore.ObjectInfo{}, fmt.Errorf("fsstore: stat: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return objstore.ObjectInfo{}, fmt.Errorf("fsstore: stat %q: %w", key, err)
	}
	fi, err := os.Stat(s.path(key))
	if err != nil {
		return objstore.ObjectInfo{}, fmt.Errorf("fsstore: stat %q: %w", key, notFound(err))
	}
	if !fi.Mode().IsRegular() {
		return objstore.ObjectInfo{}, fmt.Errorf("fsstore: stat %q: %w (a directory)", key, objstore.ErrNotFound)
	}
	return objstore.ObjectInfo{Key: key, Size: fi.Size(), ModTime: fi.ModTime()}, nil
}

// Delete implements objstore.Store. It also removes the parent directories
// the object leaves empty, up to the root.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := objstore.ValidateKey(key); err != nil {
		return fmt.Errorf("fsstore: delete: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("fsstore: delete %q: %w", key, err)
	}
	p := s.path(key)
	fi, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) || (err == nil && fi.IsDir()) {
		return nil // no object: a directory is not one
	}
	if err != nil {
		return fmt.Errorf("fsstore: delete %q: %w", key, err)
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("fsstore: delete %q: %w", key, err)
	}
	// Prune empty parents; os.Remove fails on a non-empty one, which ends
	// the walk. A Put racing to create a file in one retries (createTemp).
	for d := filepath.Dir(p); d != s.root && strings.HasPrefix(d, s.root); d = filepath.Dir(d) {
		if os.Remove(d) != nil {
			break
		}
	}
	return nil
}

// List implements objstore.Store. It walks only the directory the prefix
// names up to its last slash, and skips temporary files.
func (s *Store) List(ctx context.Context, prefix string) ([]objstore.ObjectInfo, error) {
	if err := objstore.ValidatePrefix(prefix); err != nil {
		return nil, fmt.Errorf("fsstore: list: %w", err)
	}
	base := prefix[:strings.LastIndex(prefix, "/")+1] // "" or ends in "/"
	start := filepath.Join(s.root, filepath.FromSlash(base))
	var out []objstore.ObjectInfo
	err := filepath.WalkDir(start, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
				return nil // gone meanwhile, or the prefix names an object's path
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if p == start {
			return nil
		}
		if strings.HasPrefix(d.Name(), objstore.ReservedPrefix) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		rel, err := filepath.Rel(s.root, p)
		if err != nil {
			return err
		}
		key := filepath.ToSlash(rel)
		if d.IsDir() {
			if dk := key + "/"; !strings.HasPrefix(dk, prefix) && !strings.HasPrefix(prefix, dk) {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !strings.HasPrefix(key, prefix) {
			return nil
		}
		fi, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil // deleted meanwhile
		}
		if err != nil {
			return err
		}
		out = append(out, objstore.ObjectInfo{Key: key, Size: fi.Size(), ModTime: fi.ModTime()})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("fsstore: list %q: %w", prefix, err)
	}
	slices.SortFunc(out, func(a, b objstore.ObjectInfo) int { return strings.Compare(a.Key, b.Key) })
	if out == nil {
		out = []objstore.ObjectInfo{}
	}
	return out, nil
}

// notFound turns "no such file" (also for a path through an object, which
// is ENOTDIR) into ErrNotFound, keeping the cause in the message.
func notFound(err error) error {
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return fmt.Errorf("%w (%v)", objstore.ErrNotFound, err)
	}
	return err
}

// ctxWriter fails writes once ctx is done, so a long copy stops.
type ctxWriter struct {
	ctx context.Context
	w   io.Writer
}

func (w ctxWriter) Write(p []byte) (int, error) {
	if err := w.ctx.Err(); err != nil {
		return 0, err
	}
	return w.w.Write(p)
}

// ctxFile is the reader Get returns: reads fail once ctx is done.
type ctxFile struct {
	ctx context.Context
	f   *os.File
}

func (r *ctxFile) Read(p []byte) (int, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, err
	}
	return r.f.Read(p)
}

func (r *ctxFile) Close() error { return r.f.Close() }
