package telemetry

import (
	"sync"
	"testing"
)

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
				if s.sample(tc.operator) {
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
		if s.sample("a") {
			a++
		}
		if s.sample("b") {
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
				if s.sample(op) {
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
	s.sample("gen") // creates gen's counter
	if n := testing.AllocsPerRun(1000, func() { s.sample("gen"); s.sample("clicks") }); n > 0 {
		t.Fatalf("%v allocations per decision, want 0", n)
	}
	off := newSampler(Sampling{})
	if n := testing.AllocsPerRun(1000, func() { off.sample("gen") }); n > 0 {
		t.Fatalf("%v allocations per decision with sampling off, want 0", n)
	}
}

func BenchmarkSample(b *testing.B) {
	s := newSampler(Sampling{Every: 1000})
	for b.Loop() {
		s.sample("gen")
	}
}
