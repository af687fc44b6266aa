package topology

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// CopyFile is the name of a node's local copy of the topology in its data
// directory (see FileCopy).
const CopyFile = "topology-copy.json"

// LocalCopy keeps the last topology a node has seen, outside the store, so
// that a store that lost its history can be written back (see Guard).
type LocalCopy interface {
	// Load returns the kept topology; ok is false when none was kept.
	Load() (t Topology, ok bool, err error)
	// Save replaces the kept topology with t, durably, before it returns.
	Save(t Topology) error
}

// FileCopy is a LocalCopy in one JSON file, replaced atomically (written
// to a temporary file, synced, renamed) on every Save. The file records
// the store it belongs to, its scope (for Consul, the key of the cluster's
// topology), so that a data directory reused for another cluster does not
// write that cluster's topology into this one. A FileCopy does no locking:
// one process, one user (Guard serialises its calls).
type FileCopy struct {
	path, scope string
}

var _ LocalCopy = (*FileCopy)(nil)

// NewFileCopy returns the copy in the file at path (usually CopyFile in
// the node's data directory) for the store named scope. It touches no
// file until Load or Save.
func NewFileCopy(path, scope string) *FileCopy { return &FileCopy{path: path, scope: scope} }

// copyFile is the file's content.
type copyFile struct {
	Scope    string
	SavedAt  time.Time
	Topology Topology
}

// Load implements LocalCopy. A missing file is no copy; a copy for another
// scope is an error wrapping ErrForeignCopy.
func (c *FileCopy) Load() (Topology, bool, error) {
	b, err := os.ReadFile(c.path)
	if errors.Is(err, fs.ErrNotExist) {
		return Topology{}, false, nil
	}
	if err != nil {
		return Topology{}, false, fmt.Errorf("topology: read local copy: %w", err)
	}
	var f copyFile
	if err := json.Unmarshal(b, &f); err != nil {
		return Topology{}, false, fmt.Errorf("topology: decode local copy %s (delete it if the cluster's store is fine): %w", c.path, err)
	}
	if f.Scope != c.scope {
		return Topology{}, false, fmt.Errorf("%w: %s holds the topology of %q, this node uses %q", ErrForeignCopy, c.path, f.Scope, c.scope)
	}
	return f.Topology, true, nil
}

// Save implements LocalCopy; it creates the directory if needed.
func (c *FileCopy) Save(t Topology) error {
	b, err := json.Marshal(copyFile{Scope: c.scope, SavedAt: time.Now().UTC(), Topology: t})
	if err != nil {
		return fmt.Errorf("topology: encode local copy: %w", err)
	}
	dir := filepath.Dir(c.path)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("topology: local copy: %w", err)
	}
	tmp, err := os.CreateTemp(dir, filepath.Base(c.path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("topology: local copy: %w", err)
	}
	_, err = tmp.Write(b)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), c.path)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("topology: write local copy %s: %w", c.path, err)
	}
	if d, err := os.Open(dir); err == nil { // make the rename durable
		err = d.Sync()
		_ = d.Close()
		if err != nil {
			return fmt.Errorf("topology: sync %s: %w", dir, err)
		}
	}
	return nil
}

// MemoryCopy is a LocalCopy in memory: it guards a process that follows a
// store for its own lifetime only (the Mesos scheduler), which is enough
// never to act on a store that went back while it runs. It is safe for
// concurrent use.
type MemoryCopy struct {
	mu sync.Mutex
	t  Topology
	ok bool
}

var _ LocalCopy = (*MemoryCopy)(nil)

// Load implements LocalCopy.
func (c *MemoryCopy) Load() (Topology, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t.Clone(), c.ok, nil
}

// Save implements LocalCopy.
func (c *MemoryCopy) Save(t Topology) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t, c.ok = t.Clone(), true
	return nil
}
