package status

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sluicehq/sluice/persistence"
)

// Health is a node's account of whether it can take work. A node with too
// little free disk for its state database (below Config.MinFreeDisk) is
// unhealthy and takes no work until twice that is free again: its
// instances stash their input, so producers run out of credit and hold
// their records and sources are not polled; nothing is lost, and
// processing resumes where it stopped. A node whose state database failed
// (a commit that hit a full disk or an I/O error: Pebble cannot go on in
// that process) is unhealthy for good: Fatal is set, Monitor.Failed
// (actors.Node.Failed) is closed, and the process must exit (node.Run in
// sdk/node returns the error) so that it restarts from what was committed
// or, in a cluster, its instances move.
//
// In a cluster an unhealthy node also fails its health check in the
// membership (cluster.HealthReporter: Consul's TTL check turns warning,
// with the reason as output); it stays a member and keeps its instances,
// so nothing is rolled back or moved while it waits for room.
type Health struct {
	// Healthy is false while the node takes no work.
	Healthy bool
	// Reason says why the node is unhealthy ("" when healthy).
	Reason string
	// Fatal means the node cannot recover without a restart.
	Fatal bool
	// Cause classifies Reason: HealthDiskFull, HealthStoreFailed or
	// HealthFenced ("" when healthy).
	Cause HealthCause
	// DiskFree and DiskTotal are the bytes free and in all on the data
	// directory's file system at the last check (0 if it failed).
	DiskFree, DiskTotal uint64
	// Since is when Healthy last changed (the node's start at first).
	Since time.Time
}

// HealthCause says why a node is unhealthy.
type HealthCause string

// The causes of an unhealthy node.
const (
	// HealthDiskFull: the data directory's file system has less free
	// space than Config.MinFreeDisk; the node recovers when there is room.
	HealthDiskFull HealthCause = "disk-full"
	// HealthStoreFailed: a write to the state database failed; the node
	// must restart.
	HealthStoreFailed HealthCause = "store-failed"
	// HealthFenced: the cluster went on without this node (it was paused
	// or cut off for longer than its membership TTL, and the others rolled
	// back and took over its key groups); what it holds is stale, so it
	// must restart, as after a crash (exactly-once; see fence).
	HealthFenced HealthCause = "fenced"
)

// String returns the cause's name.
func (c HealthCause) String() string { return string(c) }

// noSpaceWindow is how long after Pebble's last background ENOSPC (a
// flush or compaction that could not write; Pebble retries them) the node
// counts as out of space.
const noSpaceWindow = 2 * time.Second

// DB is what a Monitor reads of the node's state database;
// persistence.DB implements it.
type DB interface {
	// Failed returns why the database cannot go on, or nil.
	Failed() error
	// LastBackgroundError returns the last error of a background flush or
	// compaction and when it happened.
	LastBackgroundError() (error, time.Time)
}

var _ DB = (*persistence.DB)(nil)

// Node is what a Monitor needs of the node it watches; package actors
// implements it. Its methods are called with the Monitor's lock held (the
// node's Node.mu and operator.mu may be taken under it: LOCKS.md) and
// must not call the Monitor back.
type Node interface {
	// Report publishes the node's health to the cluster membership
	// (reason "" when healthy), if its discovery can.
	Report(reason string)
	// Resume tells every instance on the node that it takes work again.
	Resume()
}

// Monitor keeps a node's Health: it checks the free space on the data
// directory's file system and the state database (Watch, Check), and
// fails the node for good when told (Fence). Safe for concurrent use.
type Monitor struct {
	dataDir string
	minFree uint64
	db      DB
	log     *slog.Logger
	node    Node

	health         atomic.Pointer[Health] // as of the last check
	mu             sync.Mutex             // serialises changes of health (Check, Fence)
	pause          atomic.Bool            // unhealthy: instances hold their input
	failed         chan struct{}          // closed when the node cannot go on: database failed or fenced (Failed)
	spaceErrLogged bool                   // under mu
}

// NewMonitor returns the monitor of a healthy node whose data directory is
// dataDir, which keeps minFree bytes free in reserve (Config.MinFreeDisk;
// 0: none), with its state database db.
func NewMonitor(dataDir string, minFree int64, db DB, log *slog.Logger, node Node) *Monitor {
	m := &Monitor{dataDir: dataDir, minFree: uint64(max(minFree, 0)), db: db, log: log, node: node, failed: make(chan struct{})}
	m.health.Store(&Health{Healthy: true, Since: time.Now()})
	return m
}

// Health returns the node's health as of its last check.
func (m *Monitor) Health() Health {
	if h := m.health.Load(); h != nil {
		return *h
	}
	return Health{Healthy: true}
}

// Failed is closed when the node cannot go on (Health().Fatal): its state
// database failed, or it was fenced; Health().Reason says why.
func (m *Monitor) Failed() <-chan struct{} { return m.failed }

// Paused reports whether instances hold their input (the node is
// unhealthy).
func (m *Monitor) Paused() bool { return m.pause.Load() }

// Watch checks the node's health every interval until ctx ends; it blocks
// until then.
func (m *Monitor) Watch(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		m.Check()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Check updates the node's health from its database and the free space on
// its data directory's file system, and acts on a change: it pauses the
// instances, or resumes them (Node.Resume), and reports the health to the
// membership (Node.Report).
func (m *Monitor) Check() {
	m.mu.Lock()
	defer m.mu.Unlock()
	prev := m.Health()
	if prev.Fatal {
		return // for good
	}
	next := prev
	sp, err := persistence.DiskSpace(m.dataDir)
	if err != nil {
		if !m.spaceErrLogged {
			m.log.Warn("cannot read the free disk space; not checking it", "err", err)
			m.spaceErrLogged = true
		}
	} else {
		next.DiskFree, next.DiskTotal = sp.Free, sp.Total
	}
	min := m.minFree
	bgErr, bgAt := m.db.LastBackgroundError()
	noSpace := bgErr != nil && errors.Is(bgErr, syscall.ENOSPC) && time.Since(bgAt) < noSpaceWindow
	switch {
	case m.db.Failed() != nil:
		next.Healthy, next.Fatal, next.Cause = false, true, HealthStoreFailed
		next.Reason = strings.TrimPrefix(m.db.Failed().Error(), "persistence: ") + "; the node must restart"
	case noSpace:
		// The reserve was not enough (or is off): Pebble cannot write its
		// files and retries; commits will stall once its memtables are full.
		next.Healthy, next.Cause = false, HealthDiskFull
		next.Reason = fmt.Sprintf("disk full: the state database cannot write its files on %s (%s free of %s); taking no work until it can",
			m.dataDir, bytesText(next.DiskFree), bytesText(next.DiskTotal))
	case err != nil || (min == 0 && !prev.Healthy && prev.Cause == HealthDiskFull):
		if min == 0 && !prev.Healthy {
			next.Healthy, next.Cause, next.Reason = true, "", "" // no reserve to wait for: Pebble writes again
		}
	case min == 0:
	case sp.Free < min:
		// Unhealthy below the reserve, and until twice it is free (no
		// flapping); the reason says how much is free now.
		next.Healthy, next.Cause = false, HealthDiskFull
		next.Reason = fmt.Sprintf("disk full: %s free of %s on %s, below the %s kept in reserve; taking no work until %s are free",
			bytesText(sp.Free), bytesText(sp.Total), m.dataDir, bytesText(min), bytesText(2*min))
	case !prev.Healthy && sp.Free < 2*min:
		next.Healthy, next.Cause = false, HealthDiskFull
		next.Reason = fmt.Sprintf("waiting for disk space: %s free of %s on %s, more than the %s reserve but taking no work until %s are free (twice the reserve, so as not to stop again at once)",
			bytesText(sp.Free), bytesText(sp.Total), m.dataDir, bytesText(min), bytesText(2*min))
	case !prev.Healthy:
		next.Healthy, next.Cause, next.Reason = true, "", ""
	}
	if next.Healthy != prev.Healthy {
		next.Since = time.Now()
	}
	m.health.Store(&next)
	switch {
	case next.Fatal:
		m.pause.Store(true)
		m.log.Error("node failed: it takes no more work and must restart", "reason", next.Reason)
		m.node.Report(next.Reason)
		close(m.failed)
	case prev.Healthy && !next.Healthy:
		m.pause.Store(true)
		m.log.Error("node unhealthy: it takes no work until there is room again", "reason", next.Reason,
			"free", sp.Free, "min_free", min)
		m.node.Report(next.Reason)
	case !prev.Healthy && next.Healthy:
		m.pause.Store(false)
		m.log.Info("node healthy again: taking work", "free", sp.Free, "unhealthy_for", next.Since.Sub(prev.Since).Round(time.Millisecond))
		m.node.Report("")
		m.node.Resume()
	}
}

// Fence fails the node for good (HealthFenced): it takes no more work,
// and Failed is closed so that its owner exits the process and it restarts
// clean. Its instances' state and output are stale: the receivers of its
// batches already drop them (an older rollback generation), and its sinks
// commit nothing more (see ckpt.Checkpointer.missedRollback).
func (m *Monitor) Fence(reason string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	prev := m.Health()
	if prev.Fatal {
		return // failed already
	}
	next := prev
	next.Healthy, next.Fatal, next.Cause, next.Since = false, true, HealthFenced, time.Now()
	next.Reason = reason + "; the node must restart"
	m.health.Store(&next)
	m.pause.Store(true)
	m.log.Error("node fenced: it takes no more work and must restart", "reason", next.Reason)
	m.node.Report(next.Reason)
	close(m.failed)
}

// bytesText formats a byte count for people: "12.3 MiB".
func bytesText(b uint64) string {
	const unit = 1024
	if b < unit {
		return fmt.Sprintf("%d B", b)
	}
	div, exp := uint64(unit), 0
	for v := b / unit; v >= unit && exp < 5; v /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(b)/float64(div), "KMGTPE"[exp])
}
