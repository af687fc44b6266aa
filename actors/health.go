package actors

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"time"

	"github.com/sluicehq/sluice/cluster"
	"github.com/sluicehq/sluice/persistence"
)

// Health is a node's account of whether it can take work. A node with too
// little free disk for its state database (below Config.MinFreeDisk) is
// unhealthy and takes no work until twice that is free again: its
// instances stash their input, so producers run out of credit and hold
// their records and sources are not polled; nothing is lost, and
// processing resumes where it stopped. A node whose state database failed
// (a commit that hit a full disk or an I/O error: Pebble cannot go on in
// that process) is unhealthy for good: Fatal is set, Node.Failed is
// closed, and the process must exit (node.Run returns the error) so that
// it restarts from what was committed or, in a cluster, its instances move.
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

// resumeMsg tells an instance that the node takes work again.
type resumeMsg struct{}

// Health returns the node's health as of its last check (every
// Config.DiskCheckInterval). Safe for concurrent use.
func (n *Node) Health() Health {
	if h := n.health.Load(); h != nil {
		return *h
	}
	return Health{Healthy: true}
}

// Failed is closed when the node cannot go on (Health().Fatal): its state
// database failed, or it was fenced; Health().Reason says why. The owner of
// the node should exit the process: Stop cannot complete cleanly then.
func (n *Node) Failed() <-chan struct{} { return n.failed }

// paused reports whether instances hold their input (the node is
// unhealthy).
func (n *Node) paused() bool { return n.pause.Load() }

// watchHealth checks the node's health every DiskCheckInterval until ctx
// ends.
func (n *Node) watchHealth(ctx context.Context) {
	t := time.NewTicker(n.cfg.DiskCheckInterval)
	defer t.Stop()
	for {
		n.checkHealth()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// checkHealth updates the node's health from its database and the free
// space on its data directory's file system, and acts on a change.
func (n *Node) checkHealth() {
	n.healthMu.Lock()
	defer n.healthMu.Unlock()
	prev := n.Health()
	if prev.Fatal {
		return // for good
	}
	next := prev
	sp, err := persistence.DiskSpace(n.cfg.DataDir)
	if err != nil {
		if !n.spaceErrLogged {
			n.log.Warn("cannot read the free disk space; not checking it", "err", err)
			n.spaceErrLogged = true
		}
	} else {
		next.DiskFree, next.DiskTotal = sp.Free, sp.Total
	}
	min := uint64(max(n.cfg.MinFreeDisk, 0))
	bgErr, bgAt := n.db.LastBackgroundError()
	noSpace := bgErr != nil && errors.Is(bgErr, syscall.ENOSPC) && time.Since(bgAt) < noSpaceWindow
	switch {
	case n.db.Failed() != nil:
		next.Healthy, next.Fatal, next.Cause = false, true, HealthStoreFailed
		next.Reason = strings.TrimPrefix(n.db.Failed().Error(), "persistence: ") + "; the node must restart"
	case noSpace:
		// The reserve was not enough (or is off): Pebble cannot write its
		// files and retries; commits will stall once its memtables are full.
		next.Healthy, next.Cause = false, HealthDiskFull
		next.Reason = fmt.Sprintf("disk full: the state database cannot write its files on %s (%s free of %s); taking no work until it can",
			n.cfg.DataDir, bytesText(next.DiskFree), bytesText(next.DiskTotal))
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
			bytesText(sp.Free), bytesText(sp.Total), n.cfg.DataDir, bytesText(min), bytesText(2*min))
	case !prev.Healthy && sp.Free < 2*min:
		next.Healthy, next.Cause = false, HealthDiskFull
		next.Reason = fmt.Sprintf("waiting for disk space: %s free of %s on %s, more than the %s reserve but taking no work until %s are free (twice the reserve, so as not to stop again at once)",
			bytesText(sp.Free), bytesText(sp.Total), n.cfg.DataDir, bytesText(min), bytesText(2*min))
	case !prev.Healthy:
		next.Healthy, next.Cause, next.Reason = true, "", ""
	}
	if next.Healthy != prev.Healthy {
		next.Since = time.Now()
	}
	n.health.Store(&next)
	switch {
	case next.Fatal:
		n.pause.Store(true)
		n.log.Error("node failed: it takes no more work and must restart", "reason", next.Reason)
		n.reportHealth(next.Reason)
		close(n.failed)
	case prev.Healthy && !next.Healthy:
		n.pause.Store(true)
		n.log.Error("node unhealthy: it takes no work until there is room again", "reason", next.Reason,
			"free", sp.Free, "min_free", min)
		n.reportHealth(next.Reason)
	case !prev.Healthy && next.Healthy:
		n.pause.Store(false)
		n.log.Info("node healthy again: taking work", "free", sp.Free, "unhealthy_for", next.Since.Sub(prev.Since).Round(time.Millisecond))
		n.reportHealth("")
		for _, inst := range n.instances() {
			n.system.Root.Send(inst.pid, resumeMsg{})
		}
	}
}

// fence fails the node for good (HealthFenced): it takes no more work,
// and Failed is closed so that its owner exits the process and it restarts
// clean. Its instances' state and output are stale: the receivers of its
// batches already drop them (an older rollback generation), and its sinks
// commit nothing more (see ckpt.Checkpointer.missedRollback).
func (n *Node) fence(reason string) {
	n.healthMu.Lock()
	defer n.healthMu.Unlock()
	prev := n.Health()
	if prev.Fatal {
		return // failed already
	}
	next := prev
	next.Healthy, next.Fatal, next.Cause, next.Since = false, true, HealthFenced, time.Now()
	next.Reason = reason + "; the node must restart"
	n.health.Store(&next)
	n.pause.Store(true)
	n.log.Error("node fenced: it takes no more work and must restart", "reason", next.Reason)
	n.reportHealth(next.Reason)
	close(n.failed)
}

// reportHealth publishes the node's health to the cluster membership, if
// its discovery can (cluster.HealthReporter).
func (n *Node) reportHealth(reason string) {
	if n.cfg.Cluster == nil {
		return
	}
	if hr, ok := n.cfg.Cluster.Discovery.(cluster.HealthReporter); ok {
		hr.SetHealth(reason)
	}
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
