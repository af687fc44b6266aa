package topology

import (
	"fmt"
	"slices"
	"strings"

	"github.com/sluicehq/sluice/internal/core"
)

// Cycles in the stream graph are refused rather than supported as declared
// feedback edges: a record on a cycle is processed again and again (an
// operator that reads and writes one stream looped at 80 k records/s), and
// the runtime has nothing to bound it with — no iteration count or time to
// live on records, credit-based backpressure that deadlocks when a cycle
// fills up (ARCHITECTURE.md), and durable acks (at-least-once) that wait
// for everything downstream of a source position, which on a cycle never
// ends. Iterative jobs keep their loop state in operator state and timers.

// Cycle is a closed path in the stream graph of a topology: an operator
// writes a stream another reads, and so on back to the first. An
// operator's dead-letter stream counts as one of its outputs.
type Cycle struct {
	// Path alternates operators and streams, starting and ending with the
	// same operator: ["echo", "nums", "echo"].
	Path []string
	// Operators and Streams are every operator and stream of the part of
	// the graph where Path lies whose operators all reach each other (a
	// strongly connected component), sorted: each is on some cycle.
	Operators, Streams []string
}

// String returns the path as "echo → nums → echo".
func (c Cycle) String() string { return strings.Join(c.Path, " → ") }

// CycleError reports a change that makes an operator part of a cycle in
// the stream graph. It unwraps to the *core.MetadataError naming the
// operator and its input that closes the cycle, so callers that answer
// metadata errors as bad requests (the control API) do so.
type CycleError struct {
	// Operator is the operator deployed (or scaled or seeded).
	Operator string
	// Field is its input that closes the cycle: "inputs[0].stream".
	Field string
	// Cycle is the shortest cycle through Operator.
	Cycle Cycle
}

// Error returns e.g. `operator "echo": inputs[0].stream: closes a cycle in
// the stream graph: echo → nums → echo; ...`.
func (e *CycleError) Error() string { return e.Unwrap().Error() }

// Unwrap returns the error as a *core.MetadataError.
func (e *CycleError) Unwrap() error {
	return &core.MetadataError{Operator: e.Operator, Field: e.Field, Problem: fmt.Sprintf(
		"closes a cycle in the stream graph: %s; an operator must not read a stream it writes (its dead letters included), "+
			"directly or through other operators: remove this input or an output on the cycle", e.Cycle)}
}

// Cycles returns the cycles of t's stream graph: one for each group of
// operators that reach each other through streams (a strongly connected
// component of two or more operators, or one operator reading what it
// writes), each starting at the group's first operator in t.Operators and
// in that order. Deploy, DeployAll, Scale and Seed refuse to make an
// operator part of a cycle, but a topology stored before they did may hold
// one: the graph view flags it with Cycles.
func (t Topology) Cycles() []Cycle {
	g := newGraph(t)
	var out []Cycle
	for _, comp := range g.components() {
		first := comp[0]
		path, ok := g.cycleThrough(first)
		if !ok {
			continue // a single operator that does not read what it writes
		}
		c := Cycle{Path: path}
		in := make(map[int]bool, len(comp))
		for _, i := range comp {
			in[i] = true
			c.Operators = append(c.Operators, g.names[i])
		}
		streams := map[string]bool{}
		for _, i := range comp {
			for _, e := range g.edges[i] {
				if in[e.to] {
					streams[e.stream] = true
				}
			}
		}
		for s := range streams {
			c.Streams = append(c.Streams, s)
		}
		slices.Sort(c.Operators)
		slices.Sort(c.Streams)
		out = append(out, c)
	}
	return out
}

// checkCycles returns a *CycleError if any of the named operators is on a
// cycle of t's stream graph.
func (t Topology) checkCycles(names []string) error {
	g := newGraph(t)
	for _, name := range names {
		i, ok := g.index[name]
		if !ok {
			continue
		}
		path, ok := g.cycleThrough(i)
		if !ok {
			continue
		}
		field := "inputs"
		last := path[len(path)-2] // the stream the operator reads to close the cycle
		for j, in := range t.Operators[i].Meta.Inputs {
			if in.Stream == last {
				field = fmt.Sprintf("inputs[%d].stream", j)
				break
			}
		}
		return &CycleError{Operator: name, Field: field, Cycle: Cycle{Path: path}}
	}
	return nil
}

// graph is the operators of a topology and the streams between them.
type graph struct {
	names []string       // operator names, in topology order
	index map[string]int // name → position
	edges [][]edge       // per operator, the edges out of it, in a fixed order
}

// edge is operator → operator through a stream the first writes and the
// second reads.
type edge struct {
	stream string
	to     int
}

func newGraph(t Topology) graph {
	g := graph{index: make(map[string]int, len(t.Operators)), edges: make([][]edge, len(t.Operators))}
	readers := map[string][]int{}
	for i, op := range t.Operators {
		g.names = append(g.names, op.Meta.Name)
		g.index[op.Meta.Name] = i
		for _, in := range op.Meta.Inputs {
			if !slices.Contains(readers[in.Stream], i) {
				readers[in.Stream] = append(readers[in.Stream], i)
			}
		}
	}
	for i, op := range t.Operators {
		outs := append(slices.Clone(op.Meta.Outputs), core.DeadLetterStream(op.Meta.Name))
		seen := map[string]bool{}
		for _, s := range outs {
			if seen[s] {
				continue
			}
			seen[s] = true
			for _, r := range readers[s] {
				g.edges[i] = append(g.edges[i], edge{stream: s, to: r})
			}
		}
	}
	return g
}

// cycleThrough returns the shortest cycle through operator start (fewest
// streams; the first found in edge order among equals) as a path, or
// false if there is none.
func (g graph) cycleThrough(start int) ([]string, bool) {
	type step struct {
		from   int
		stream string
	}
	prev := make(map[int]step, len(g.names))
	queue := []int{start}
	var closing *step // the edge back into start
	for len(queue) > 0 && closing == nil {
		cur := queue[0]
		queue = queue[1:]
		for _, e := range g.edges[cur] {
			if e.to == start {
				closing = &step{from: cur, stream: e.stream}
				break
			}
			if _, seen := prev[e.to]; !seen {
				prev[e.to] = step{from: cur, stream: e.stream}
				queue = append(queue, e.to)
			}
		}
	}
	if closing == nil {
		return nil, false
	}
	// Walk back from the closing edge to start, then reverse.
	rev := []string{g.names[start], closing.stream}
	for at := closing.from; at != start; at = prev[at].from {
		rev = append(rev, g.names[at], prev[at].stream)
	}
	rev = append(rev, g.names[start])
	slices.Reverse(rev)
	return rev, true
}

// components returns the strongly connected components of the graph
// (Tarjan's algorithm, iterative), each sorted by topology order, in the
// order of their first operator.
func (g graph) components() [][]int {
	n := len(g.names)
	index, low := make([]int, n), make([]int, n)
	onStack := make([]bool, n)
	for i := range index {
		index[i] = -1
	}
	var comps [][]int
	var st []int // Tarjan's stack
	next := 0
	type frame struct{ v, edge int }
	for root := 0; root < n; root++ {
		if index[root] >= 0 {
			continue
		}
		call := []frame{{v: root}}
		index[root], low[root] = next, next
		next++
		st = append(st, root)
		onStack[root] = true
		for len(call) > 0 {
			f := &call[len(call)-1]
			if f.edge < len(g.edges[f.v]) {
				w := g.edges[f.v][f.edge].to
				f.edge++
				switch {
				case index[w] < 0:
					index[w], low[w] = next, next
					next++
					st = append(st, w)
					onStack[w] = true
					call = append(call, frame{v: w})
				case onStack[w]:
					low[f.v] = min(low[f.v], index[w])
				}
				continue
			}
			v := f.v
			call = call[:len(call)-1]
			if len(call) > 0 {
				parent := call[len(call)-1].v
				low[parent] = min(low[parent], low[v])
			}
			if low[v] == index[v] {
				var comp []int
				for {
					w := st[len(st)-1]
					st = st[:len(st)-1]
					onStack[w] = false
					comp = append(comp, w)
					if w == v {
						break
					}
				}
				slices.Sort(comp)
				comps = append(comps, comp)
			}
		}
	}
	slices.SortFunc(comps, func(a, b []int) int { return a[0] - b[0] })
	return comps
}
