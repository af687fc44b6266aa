package actors

import (
	"sync/atomic"
	"testing"
	"time"
)

func goSpawn(f func()) { go f() }

func TestTickerSendsUntilStopped(t *testing.T) {
	sent := make(chan struct{}, 16)
	tk := startTicker(goSpawn, time.Millisecond, func() {
		select {
		case sent <- struct{}{}:
		default:
		}
	})
	deadline := time.After(10 * time.Second)
	for n := 0; n < 3; n++ {
		select {
		case <-sent:
		case <-deadline:
			t.Fatalf("got %d ticks in 10s, want 3", n)
		}
	}
	tk.stop()
	select {
	case <-tk.done:
	default:
		t.Fatal("stop returned while the ticker's goroutine still runs")
	}
	tk.stop() // twice: returns at once
	var none *ticker
	none.stop() // nil: an actor stopped before it started one
}

func TestTickerStopWaitsForASendInProgress(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	var calls atomic.Int32
	var returned atomic.Bool
	tk := startTicker(goSpawn, time.Millisecond, func() {
		if calls.Add(1) != 1 {
			return
		}
		close(entered)
		<-release
		returned.Store(true)
	})
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("no tick in 10s")
	}
	stopped := make(chan struct{})
	go func() {
		tk.stop()
		close(stopped)
	}()
	close(release)
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("stop did not return in 10s")
	}
	if !returned.Load() {
		t.Fatal("stop returned before the send in progress did")
	}
}
