package persistence

import (
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// compactionGate is the DB's Pebble compaction scheduler: Pebble's own
// policy (as many compactions as the DB asks for without permission),
// except that it grants none until released: once pebble.Open has
// returned, or with Options.HoldCompactions at DB.ReleaseCompactions or
// the first write stall.
//
// pebble.Open waits for every running compaction before it scans for
// obsolete files, and the flush of the write-ahead log it replays lets one
// start at once: after a SIGKILL with a backlog in L0 (26 files, a
// 100 MB L0→L5 compaction), Open took 1.3 s, 1.15 s of it waiting for that
// compaction; held, the same compaction runs after Open, in the
// background.
//
// Pebble calls it from its own goroutines. Lock order: Pebble's DB mutexes
// before mu (Pebble's rule for schedulers); granting (calling into the DB)
// happens without mu held.
type compactionGate struct {
	db pebble.DBForCompaction // set by Register, before any other call

	mu           sync.Mutex
	held         bool // no grants until release
	unregistered bool
	granting     bool // one grant loop at a time; cond signals its end
	cond         *sync.Cond
	running      int           // compactions granted and not done
	lastAllowed  int           // the DB's allowance when last sampled
	started      bool          // the granter runs
	poke         chan struct{} // wakes the granter; buffered, 1
	stop         chan struct{} // closed by Unregister
	stopped      chan struct{} // closed when the granter returns
}

var (
	_ pebble.CompactionScheduler   = (*compactionGate)(nil)
	_ pebble.CompactionGrantHandle = (*compactionGate)(nil)
)

// grantInterval is how often the granter samples the DB's allowance, as
// Pebble's default scheduler does: a flush can raise it without a call.
const grantInterval = 100 * time.Millisecond

func newCompactionGate() *compactionGate {
	g := &compactionGate{held: true, poke: make(chan struct{}, 1), stop: make(chan struct{}), stopped: make(chan struct{})}
	g.cond = sync.NewCond(&g.mu)
	return g
}

// Register implements pebble.CompactionScheduler.
func (g *compactionGate) Register(_ int, db pebble.DBForCompaction) { g.db = db }

// release lets compactions run from now on and starts the granter, which
// Unregister stops. It may be called any number of times, from any
// goroutine, holding Pebble's locks or not (it does not call into the DB).
func (g *compactionGate) release() {
	g.mu.Lock()
	g.held = false
	if !g.unregistered && !g.started {
		g.started = true
		go g.granter()
	}
	g.mu.Unlock()
	g.wake()
}

// Unregister implements pebble.CompactionScheduler: it stops the granter
// and waits for a grant in progress.
func (g *compactionGate) Unregister() {
	g.mu.Lock()
	started := g.started
	g.unregistered = true
	g.mu.Unlock()
	if started {
		close(g.stop)
		<-g.stopped
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for g.granting {
		g.cond.Wait()
	}
}

// TrySchedule implements pebble.CompactionScheduler.
func (g *compactionGate) TrySchedule() (bool, pebble.CompactionGrantHandle) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.held || g.unregistered {
		return false, nil
	}
	g.lastAllowed = g.db.GetAllowedWithoutPermission()
	if g.lastAllowed > g.running {
		g.running++
		return true, g
	}
	return false, nil
}

// UpdateGetAllowedWithoutPermission implements pebble.CompactionScheduler.
func (g *compactionGate) UpdateGetAllowedWithoutPermission() {
	g.mu.Lock()
	allowed := g.db.GetAllowedWithoutPermission()
	raised := allowed > g.lastAllowed
	g.lastAllowed = allowed
	g.mu.Unlock()
	if raised {
		g.wake()
	}
}

// Started, MeasureCPU and CumulativeStats implement
// pebble.CompactionGrantHandle: the gate paces nothing.
func (g *compactionGate) Started()                                          {}
func (g *compactionGate) MeasureCPU(pebble.CompactionGoroutineKind)         {}
func (g *compactionGate) CumulativeStats(pebble.CompactionGrantHandleStats) {}

// Done implements pebble.CompactionGrantHandle (Pebble calls it without
// holding its locks) and grants the next compaction waiting.
func (g *compactionGate) Done() {
	g.mu.Lock()
	g.running--
	g.mu.Unlock()
	g.grant()
}

func (g *compactionGate) wake() {
	select {
	case g.poke <- struct{}{}:
	default:
	}
}

// granter grants waiting compactions when woken and every grantInterval.
func (g *compactionGate) granter() {
	defer close(g.stopped)
	t := time.NewTicker(grantInterval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-g.poke:
		case <-g.stop:
			return
		}
		g.grant()
	}
}

// grant starts as many waiting compactions as the DB allows.
func (g *compactionGate) grant() {
	g.mu.Lock()
	for g.granting {
		g.cond.Wait()
	}
	if g.held || g.unregistered {
		g.mu.Unlock()
		return
	}
	g.lastAllowed = g.db.GetAllowedWithoutPermission()
	n := g.lastAllowed - g.running
	if n <= 0 {
		g.mu.Unlock()
		return
	}
	g.granting = true
	g.mu.Unlock()
	for ; n > 0; n-- {
		if waiting, _ := g.db.GetWaitingCompaction(); !waiting {
			break
		}
		g.mu.Lock()
		g.running++ // before Schedule: the compaction may be done before it returns
		g.mu.Unlock()
		if !g.db.Schedule(g) {
			g.mu.Lock()
			g.running--
			g.mu.Unlock()
			break
		}
	}
	g.mu.Lock()
	g.granting = false
	g.cond.Broadcast()
	g.mu.Unlock()
}
