package telemetry

import (
	"sync"
	"sync/atomic"
	"testing"
)

// sample reports whether operator's next record starts a trace: a
// reservation of one record.
func sample(s *sampler, operator string) bool {
	first, every := s.reserve(operator, 1)
	return every > 0 && first == 0
}

// TestReservationsSampleOneInN checks that reservations of any sizes, from
// concurrent instances, sample exactly the records a record-by-record
// count would: every Nth of the operator's, the first included.
func TestReservationsSampleOneInN(t *testing.T) {
	s := newSampler(Sampling{Every: 10})
	var sampled atomic.Int64
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range 200 {
				n := []int{1, 7, 64, 3}[(g+r)%4]
				first, every := s.reserve("gen", n)
				if every != 10 {
					t.Errorf("reserve: every = %d, want 10", every)
					return
				}
				for off := first; off < n; off += every {
					sampled.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	// 4 goroutines × 50 × (1+7+64+3) = 15,000 records, reserved in
	// blocks that partition the operator's count.
	total := 4 * 50 * (1 + 7 + 64 + 3)
	if got := sampled.Load(); got != int64(total/10) {
		t.Fatalf("sampled %d of %d records, want %d", got, total, total/10)
	}
	// Sequentially, the decisions are exactly every 10th position.
	seq := newSampler(Sampling{Every: 10})
	var pos []int
	at := 0
	for r := range 100 {
		n := []int{1, 7, 64, 3, 10, 20}[r%6]
		first, every := seq.reserve("gen", n)
		for off := first; off < n; off += every {
			pos = append(pos, at+off)
		}
		at += n
	}
	for j, p := range pos {
		if p != 10*j {
			t.Fatalf("sampled positions %v…, want 0, 10, 20, …", pos[:min(len(pos), j+2)])
		}
	}
	if want := (at + 9) / 10; len(pos) != want {
		t.Fatalf("sampled %d of %d records, want %d", len(pos), at, want)
	}
	if first, every := seq.reserve("gen", 0); first != 0 || every != 0 {
		t.Fatalf("reserve of 0 records = %d, %d, want 0, 0", first, every)
	}
}

func TestSamplingDecisions(t *testing.T) {
	for _, tc := range []struct {
		name     string
		sampling Sampling
		operator string
		records  int
		want     []int // indexes of the sampled records
	}{
		{"one in four, first included", Sampling{Every: 4}, "gen", 10, []int{0, 4, 8}},
		{"every record", Sampling{Every: 1}, "gen", 3, []int{0, 1, 2}},
		{"off", Sampling{Every: 0}, "gen", 100, nil},
		{"override", Sampling{Every: 1000, Operators: map[string]int{"gen": 3}}, "gen", 7, []int{0, 3, 6}},
		{"override turns one operator off", Sampling{Every: 1, Operators: map[string]int{"gen": 0}}, "gen", 5, nil},
		{"override turns one operator on", Sampling{Every: 0, Operators: map[string]int{"gen": 2}}, "gen", 5, []int{0, 2, 4}},
		{"others keep the global rate", Sampling{Every: 2, Operators: map[string]int{"gen": 0}}, "clicks", 5, []int{0, 2, 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSampler(tc.sampling)
			var got []int
			for i := range tc.records {
				if sample(s, tc.operator) {
					got = append(got, i)
				}
			}
			if len(got) != len(tc.want) {
				t.Fatalf("sampled %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("sampled %v, want %v", got, tc.want)
				}
			}
		})
	}
}

func TestSamplingCountsPerOperator(t *testing.T) {
	s := newSampler(Sampling{Every: 10})
	a, b := 0, 0
	for range 100 {
		if sample(s, "a") {
			a++
		}
		if sample(s, "b") {
			b++
		}
	}
	if a != 10 || b != 10 {
		t.Fatalf("sampled %d of a's and %d of b's 100 records, want 10 each", a, b)
	}
}

func TestSamplingIsExactUnderConcurrency(t *testing.T) {
	s := newSampler(Sampling{Every: 100})
	var wg sync.WaitGroup
	counts := make([]int, 8)
	for g := range counts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			op := "gen"
			if g%2 == 1 {
				op = "other"
			}
			for range 10_000 {
				if sample(s, op) {
					counts[g]++
				}
			}
		}()
	}
	wg.Wait()
	total := 0
	for _, n := range counts {
		total += n
	}
	if total != 800 {
		t.Fatalf("sampled %d of 80000 records, want exactly 800", total)
	}
}

func TestSamplingDoesNotAllocate(t *testing.T) {
	s := newSampler(Sampling{Every: 1000, Operators: map[string]int{"clicks": 10}})
	s.reserve("gen", 64) // creates gen's counter
	if n := testing.AllocsPerRun(1000, func() { s.reserve("gen", 64); s.reserve("clicks", 64) }); n > 0 {
		t.Fatalf("%v allocations per decision, want 0", n)
	}
	off := newSampler(Sampling{})
	if n := testing.AllocsPerRun(1000, func() { off.reserve("gen", 64) }); n > 0 {
		t.Fatalf("%v allocations per decision with sampling off, want 0", n)
	}
}

// BenchmarkReserve measures one reservation, of a source instance's
// block of records (the runtime's is 64).
func BenchmarkReserve(b *testing.B) {
	s := newSampler(Sampling{Every: 1000})
	for b.Loop() {
		s.reserve("gen", 64)
	}
}
