package persistence

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func open(t *testing.T, dir string) *DB {
	t.Helper()
	db, err := Open(dir, Options{StoreCacheEntries: 64})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func mustGet(t *testing.T, s *Store, kg int, k string) (string, bool) {
	t.Helper()
	v, ok, err := s.Get(kg, []byte(k))
	if err != nil {
		t.Fatalf("Get(%d, %q): %v", kg, k, err)
	}
	return string(v), ok
}

func TestStoreReadYourWritesAndCommit(t *testing.T) {
	dir := t.TempDir()
	db := open(t, dir)
	s := db.NewStore("count")
	s.Set(3, []byte("a"), []byte("1"))
	s.Set(3, []byte("empty"), nil)
	if v, ok := mustGet(t, s, 3, "a"); !ok || v != "1" {
		t.Fatalf("Get a = %q,%v, want 1,true", v, ok)
	}
	if _, ok := mustGet(t, s, 4, "a"); ok {
		t.Fatal("key visible in another key group")
	}
	if v, ok := mustGet(t, s, 3, "empty"); !ok || v != "" {
		t.Fatalf("Get empty = %q,%v, want \"\",true", v, ok)
	}
	if err := s.Commit(true); err != nil {
		t.Fatal(err)
	}
	s.Delete(3, []byte("a"))
	if _, ok := mustGet(t, s, 3, "a"); ok {
		t.Fatal("deleted key still visible")
	}
	if err := s.Commit(true); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db2 := open(t, dir)
	s2 := db2.NewStore("count")
	if _, ok := mustGet(t, s2, 3, "a"); ok {
		t.Fatal("deleted key back after reopen")
	}
	if v, ok := mustGet(t, s2, 3, "empty"); !ok || v != "" {
		t.Fatalf("after reopen Get empty = %q,%v, want \"\",true", v, ok)
	}
	if _, ok := mustGet(t, db2.NewStore("other"), 3, "empty"); ok {
		t.Fatal("state leaked to another operator")
	}
}

func TestStoreUncommittedLostOnReopen(t *testing.T) {
	dir := t.TempDir()
	db := open(t, dir)
	s := db.NewStore("op")
	s.Set(0, []byte("k"), []byte("committed"))
	if err := s.Commit(true); err != nil {
		t.Fatal(err)
	}
	s.Set(0, []byte("k"), []byte("uncommitted"))
	_ = db.Close()
	v, _ := mustGet(t, open(t, dir).NewStore("op"), 0, "k")
	if v != "committed" {
		t.Fatalf("after reopen got %q, want committed", v)
	}
}

func TestStoreRollback(t *testing.T) {
	db := open(t, t.TempDir())
	s := db.NewStore("op")
	s.Set(1, []byte("x"), []byte("1"))
	s.Begin()
	s.Set(1, []byte("x"), []byte("2"))
	s.Set(1, []byte("x"), []byte("3"))
	s.Set(1, []byte("y"), []byte("new"))
	s.Delete(1, []byte("x"))
	s.SetTimer(1, "t", time.Unix(5, 0))
	s.Rollback()
	if v, ok := mustGet(t, s, 1, "x"); !ok || v != "1" {
		t.Fatalf("after rollback x = %q,%v, want 1,true", v, ok)
	}
	if _, ok := mustGet(t, s, 1, "y"); ok {
		t.Fatal("after rollback y exists")
	}
	timers, err := s.Timers(0, 4)
	if err != nil || len(timers) != 0 {
		t.Fatalf("after rollback timers = %v, %v; want none", timers, err)
	}
}

// TestReadModifyWriteAfterSlotsGo checks the Get-then-Set fast path (the
// slot Get used last) when that slot has left the cache between the two:
// rolled back, evicted, dropped or discarded. A write to a slot no longer
// in the cache would be lost to reads, or committed twice.
func TestReadModifyWriteAfterSlotsGo(t *testing.T) {
	db := open(t, t.TempDir()) // a cache of 64 entries
	s := db.NewStore("op")
	commit := func() {
		t.Helper()
		if err := s.Commit(false); err != nil {
			t.Fatal(err)
		}
	}
	want := func(k, v string) {
		t.Helper()
		if got, ok := mustGet(t, s, 0, k); !ok || got != v {
			t.Fatalf("%s = %q,%v, want %q", k, got, ok, v)
		}
	}

	// Rolled back: the attempt created the slot.
	s.Begin()
	s.Set(0, []byte("a"), []byte("1"))
	s.Rollback()
	s.Set(0, []byte("a"), []byte("2"))
	want("a", "2")
	commit()

	// Evicted by a commit between Get and Set: 100 writes fill the cache
	// past its limit, and the commit evicts clean slots in map order, so
	// over the rounds "a" is evicted in some.
	for round := range 20 {
		for i := range 100 {
			s.Set(0, []byte(fmt.Sprint("k", round, "-", i)), []byte("x"))
		}
		mustGet(t, s, 0, "a")
		commit()
		v := fmt.Sprint("r", round)
		s.Set(0, []byte("a"), []byte(v))
		want("a", v)
		commit()
	}

	// Dropped, then discarded.
	mustGet(t, s, 0, "a")
	s.DropCache()
	s.Set(0, []byte("a"), []byte("4"))
	want("a", "4")
	commit()
	mustGet(t, s, 0, "a")
	s.Discard()
	s.Set(0, []byte("a"), []byte("5"))
	want("a", "5")
	commit()

	// Read back from Pebble alone.
	s2 := db.NewStore("op")
	if got, ok := mustGet(t, s2, 0, "a"); !ok || got != "5" {
		t.Fatalf("committed a = %q,%v, want 5", got, ok)
	}
	if got, ok := mustGet(t, s2, 0, "k19-99"); !ok || got != "x" {
		t.Fatalf("committed k19-99 = %q,%v, want x", got, ok)
	}
}

func TestStoreScanMergesOverlay(t *testing.T) {
	db := open(t, t.TempDir())
	s := db.NewStore("op")
	for _, k := range []string{"a1", "a3", "a5", "b1"} {
		s.Set(2, []byte(k), []byte("c-"+k))
	}
	s.Set(7, []byte("a0"), []byte("c-a0"))
	s.Set(9, []byte("a9"), []byte("outside"))
	if err := s.Commit(false); err != nil {
		t.Fatal(err)
	}
	s.Set(2, []byte("a2"), []byte("d-a2")) // new, uncommitted
	s.Set(2, []byte("a3"), []byte("d-a3")) // overwrite
	s.Delete(2, []byte("a5"))              // delete committed
	s.Set(2, []byte("a6"), []byte("d-a6")) // after all committed
	s.Set(2, []byte("zz"), []byte("no"))   // other prefix
	var got []string
	err := s.Scan(0, 8, []byte("a"), func(kg int, k, v []byte) error {
		got = append(got, fmt.Sprintf("%d/%s=%s", kg, k, v))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := "2/a1=c-a1 2/a2=d-a2 2/a3=d-a3 2/a6=d-a6 7/a0=c-a0"
	if strings.Join(got, " ") != want {
		t.Fatalf("scan got %v\nwant %v", strings.Join(got, " "), want)
	}
	stop := errors.New("stop")
	n := 0
	if err := s.Scan(0, 8, nil, func(int, []byte, []byte) error { n++; return stop }); !errors.Is(err, stop) || n != 1 {
		t.Fatalf("scan with stopping fn: err=%v calls=%d, want stop after 1", err, n)
	}
}

func TestTimersPersist(t *testing.T) {
	dir := t.TempDir()
	db := open(t, dir)
	s := db.NewStore("op")
	at := time.Unix(1700000000, 123)
	s.SetTimer(3, "w1", at)
	s.SetTimer(5, "w2", at.Add(time.Second))
	s.SetTimer(5, "gone", at)
	s.DeleteTimer(5, "gone")
	s.Set(3, []byte("w1"), []byte("state, not a timer"))
	if err := s.Commit(true); err != nil {
		t.Fatal(err)
	}
	_ = db.Close()
	timers, err := open(t, dir).NewStore("op").Timers(0, 256)
	if err != nil {
		t.Fatal(err)
	}
	if len(timers) != 2 || timers[0].Key != "w1" || !timers[0].At.Equal(at) || timers[0].Group != 3 || timers[1].Key != "w2" {
		t.Fatalf("timers = %+v", timers)
	}
}

func TestCacheBoundedAndCorrect(t *testing.T) {
	db := open(t, t.TempDir())
	s := db.NewStore("op")
	for i := 0; i < 1000; i++ {
		s.Set(0, []byte(fmt.Sprint(i)), []byte(fmt.Sprint(i*2)))
		if i%100 == 0 {
			if err := s.Commit(false); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := s.Commit(false); err != nil {
		t.Fatal(err)
	}
	if len(s.slots) > 64 {
		t.Fatalf("cache has %d entries, want ≤ 64", len(s.slots))
	}
	for i := 0; i < 1000; i++ {
		if v, ok := mustGet(t, s, 0, fmt.Sprint(i)); !ok || v != fmt.Sprint(i*2) {
			t.Fatalf("key %d = %q,%v", i, v, ok)
		}
	}
	s.DropCache()
	if v, _ := mustGet(t, s, 0, "999"); v != "1998" {
		t.Fatalf("after DropCache got %q", v)
	}
}

func TestPurgeOperatorAndClosed(t *testing.T) {
	db := open(t, t.TempDir())
	a, ab := db.NewStore("a"), db.NewStore("ab")
	a.Set(0, []byte("k"), []byte("v"))
	ab.Set(0, []byte("k"), []byte("v"))
	if err := a.Commit(true); err != nil {
		t.Fatal(err)
	}
	if err := ab.Commit(true); err != nil {
		t.Fatal(err)
	}
	if err := db.PurgeOperator("a"); err != nil {
		t.Fatal(err)
	}
	a.DropCache()
	ab.DropCache()
	if _, ok := mustGet(t, a, 0, "k"); ok {
		t.Fatal("purged state still there")
	}
	if _, ok := mustGet(t, ab, 0, "k"); !ok {
		t.Fatal("purging a removed ab's state")
	}
	_ = db.Close()
	_ = db.Close()
	a.Set(0, []byte("x"), []byte("y"))
	if err := a.Commit(true); !errors.Is(err, ErrClosed) {
		t.Fatalf("commit after close: %v, want ErrClosed", err)
	}
}

func TestEventTimersKeySpaceOfTheirOwn(t *testing.T) {
	dir := t.TempDir()
	db := open(t, dir)
	s := db.NewStore("op")
	at := time.Unix(1700000000, 0)
	s.SetTimer(3, "w", at)
	s.SetEventTimer(3, "w", at.Add(time.Minute)) // same key, other kind
	s.SetEventTimer(4, "x", at)
	s.SetEventTimer(4, "gone", at)
	s.DeleteEventTimer(4, "gone")
	if err := s.Commit(true); err != nil {
		t.Fatal(err)
	}
	// Deleting the processing-time timer leaves the event-time one.
	s.DeleteTimer(3, "w")
	if err := s.Commit(true); err != nil {
		t.Fatal(err)
	}
	_ = db.Close()
	db = open(t, dir)
	st := db.NewStore("op")
	proc, err := st.Timers(0, 256)
	if err != nil || len(proc) != 0 {
		t.Fatalf("processing-time timers = %+v (err %v), want none", proc, err)
	}
	ev, err := st.EventTimers(0, 256)
	if err != nil {
		t.Fatal(err)
	}
	want := []Timer{{Group: 3, Key: "w", At: at.Add(time.Minute)}, {Group: 4, Key: "x", At: at}}
	if len(ev) != 2 || ev[0].Group != 3 || ev[0].Key != "w" || !ev[0].At.Equal(want[0].At) || ev[1].Key != "x" || !ev[1].At.Equal(at) {
		t.Fatalf("event timers = %+v, want %+v", ev, want)
	}
	// They move with their key group.
	dst := open(t, t.TempDir())
	err = db.ExportGroups("op", 4, 5, 1<<20, func(kvs []KV) error { return dst.ImportGroups("op", 4, 5, true, kvs) })
	if err != nil {
		t.Fatal(err)
	}
	moved, err := dst.NewStore("op").EventTimers(0, 256)
	if err != nil || len(moved) != 1 || moved[0].Key != "x" || moved[0].Group != 4 {
		t.Fatalf("moved event timers = %+v (err %v), want x in group 4", moved, err)
	}
}

// An asynchronous commit: while it is in flight the Store serves its writes
// from its cache (whatever the cache's bound), and a write made meanwhile
// stays for the next commit; then Pebble has them. One that fails leaves
// its writes uncommitted, and the next commit writes them.
func TestCommitAsync(t *testing.T) {
	db := open(t, t.TempDir()) // a cache of 64 entries
	s := db.NewStore("count")
	k := func(i int) []byte { return []byte(fmt.Sprint("k", i)) }
	for i := range 200 {
		s.Set(1, k(i), []byte(fmt.Sprint(i)))
	}
	// The commit's goroutine waits for db.mu: in flight until unlock. A
	// failure while it is held unlocks it first (Close needs it).
	locked := false
	lock := func() { db.mu.Lock(); locked = true }
	unlock := func() { locked = false; db.mu.Unlock() }
	t.Cleanup(func() {
		if locked {
			unlock()
		}
	})
	lock()
	if err := s.CommitAsync(false); err != nil {
		t.Fatal(err)
	}
	if n := s.Pending(); n != 0 {
		t.Fatalf("%d writes pending after CommitAsync, want 0", n)
	}
	for i := range 200 { // from the cache: a read from Pebble would wait for db.mu
		if v, ok := mustGet(t, s, 1, string(k(i))); !ok || v != fmt.Sprint(i) {
			t.Fatalf("in flight: k%d = %q,%v, want %d", i, v, ok, i)
		}
	}
	s.Set(1, k(0), []byte("new"))
	for i := range 100 { // new keys make the cache evict: not what is in flight
		s.Set(2, k(i), []byte("y"))
	}
	pinned := 0
	for _, sl := range s.slots {
		if sl.pinned {
			pinned++
		}
	}
	if pinned != 200 {
		t.Fatalf("%d of the 200 writes in flight left in the cache, want all", pinned)
	}
	unlock()
	if err := s.Wait(); err != nil {
		t.Fatal(err)
	}
	if n := s.Pending(); n != 101 {
		t.Fatalf("%d writes pending after the commit landed, want 101 (k0 written again, 100 new)", n)
	}
	fresh := db.NewStore("count")
	for i := range 200 {
		if v, ok := mustGet(t, fresh, 1, string(k(i))); !ok || v != fmt.Sprint(i) {
			t.Fatalf("landed: k%d = %q,%v in Pebble, want %d", i, v, ok, i)
		}
	}
	if len(s.slots) > 64+s.Pending() { // uncommitted writes stay whatever the bound
		t.Fatalf("cache has %d entries after the commit landed, want ≤ 64 + %d pending", len(s.slots), s.Pending())
	}

	s.Set(1, k(5), []byte("x"))
	lock()
	if err := s.CommitAsync(false); err != nil {
		t.Fatal(err)
	}
	db.closed = true // the commit fails
	unlock()
	if err := s.Wait(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Wait after a failed commit: %v, want ErrClosed", err)
	}
	if n := s.Pending(); n != 102 {
		t.Fatalf("%d writes pending after a failed commit, want 102 (k0, k5 and 100 new)", n)
	}
	lock()
	db.closed = false
	unlock()
	if err := s.Commit(false); err != nil {
		t.Fatal(err)
	}
	fresh = db.NewStore("count")
	for key, want := range map[int]string{0: "new", 5: "x"} {
		if v, _ := mustGet(t, fresh, 1, string(k(key))); v != want {
			t.Fatalf("after the retry: k%d = %q in Pebble, want %q", key, v, want)
		}
	}
}

// TestSetOwnedKeepsTheValue: SetOwned stores the caller's slice itself (no
// copy, so no allocation but the caller's), reads, commits and rolls back
// like Set, and a nil value is an empty one, not a deletion.
func TestSetOwnedKeepsTheValue(t *testing.T) {
	dir := t.TempDir()
	db := open(t, dir)
	s := db.NewStore("op")
	v := []byte("1")
	s.SetOwned(2, []byte("k"), v)
	if got, _, _ := s.Get(2, []byte("k")); &got[0] != &v[0] {
		t.Fatal("SetOwned stored a copy")
	}
	s.SetOwned(2, []byte("nil"), nil)
	if got, ok := mustGet(t, s, 2, "nil"); !ok || got != "" {
		t.Fatalf("Get nil = %q,%v, want \"\",true", got, ok)
	}
	if allocs := testing.AllocsPerRun(100, func() { s.SetOwned(2, []byte("k"), v) }); allocs != 0 {
		t.Fatalf("SetOwned of a cached key allocates %v times, want 0", allocs)
	}
	if err := s.Commit(true); err != nil {
		t.Fatal(err)
	}
	s.Begin()
	s.SetOwned(2, []byte("k"), []byte("2"))
	s.Rollback()
	if got, ok := mustGet(t, s, 2, "k"); !ok || got != "1" {
		t.Fatalf("after rollback k = %q,%v, want 1,true", got, ok)
	}
	_ = db.Close()
	if got, ok := mustGet(t, open(t, dir).NewStore("op"), 2, "k"); !ok || got != "1" {
		t.Fatalf("after reopen k = %q,%v, want 1,true", got, ok)
	}
}

// BenchmarkCommitAsync measures what an asynchronous commit of 10,000
// dirty keys costs the instance's goroutine (the time until CommitAsync
// returns), the periodic commit of a word count's counter: the instance
// processes nothing meanwhile.
func BenchmarkCommitAsync(b *testing.B) {
	db, err := Open(b.TempDir(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	s := db.NewStore("count")
	keys := make([][]byte, 10_000)
	for i := range keys {
		keys[i] = []byte(fmt.Sprint("k", i))
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		if err := s.Wait(); err != nil {
			b.Fatal(err)
		}
		for kg, k := range keys {
			s.SetOwned(kg%256, k, []byte{byte(i)})
		}
		b.StartTimer()
		if err := s.CommitAsync(false); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if err := s.Wait(); err != nil {
		b.Fatal(err)
	}
}

// TestStoreScanSeesWritesBetweenScans: the overlay a scan merges is indexed
// by key group as scans go (dirtyIn); writes after a scan, an undone
// attempt, a commit and timers (another class) must all show as they are.
func TestStoreScanSeesWritesBetweenScans(t *testing.T) {
	db := open(t, t.TempDir())
	s := db.NewStore("op")
	scan := func(kg int) string {
		t.Helper()
		var got []string
		if err := s.Scan(kg, kg+1, nil, func(_ int, k, v []byte) error {
			got = append(got, string(k)+"="+string(v))
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return strings.Join(got, " ")
	}
	check := func(kg int, want string) {
		t.Helper()
		if got := scan(kg); got != want {
			t.Fatalf("scan of key group %d = %q, want %q", kg, got, want)
		}
	}
	s.Set(1, []byte("a"), []byte("1"))
	s.Set(2, []byte("b"), []byte("1"))
	check(1, "a=1")
	s.Set(1, []byte("c"), []byte("1")) // after the index was built
	s.SetTimer(1, "t", time.Unix(1, 0))
	check(1, "a=1 c=1")
	check(2, "b=1")
	s.Begin()
	s.Set(1, []byte("d"), []byte("undone"))
	s.Set(1, []byte("a"), []byte("undone"))
	check(1, "a=undone c=1 d=undone")
	s.Rollback()
	check(1, "a=1 c=1")
	if err := s.Commit(false); err != nil {
		t.Fatal(err)
	}
	s.Set(1, []byte("e"), []byte("2"))
	s.Delete(1, []byte("c"))
	check(1, "a=1 e=2")
	if err := s.CommitAsync(false); err != nil {
		t.Fatal(err)
	}
	s.Set(2, []byte("f"), []byte("3"))
	check(1, "a=1 e=2")
	check(2, "b=1 f=3")
}
