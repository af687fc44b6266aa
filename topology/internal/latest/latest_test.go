package latest

import "testing"

func TestPublishLatestWins(t *testing.T) {
	ch := make(chan int, 1)
	for i := range 5 {
		Publish(ch, i) // never blocks
	}
	if got := <-ch; got != 4 {
		t.Fatalf("got %d, want the last value 4", got)
	}
	select {
	case v := <-ch:
		t.Fatalf("stale value left: %d", v)
	default:
	}
}
