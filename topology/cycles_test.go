package topology

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/core"
)

// op returns a spec reading ins (shuffle) and writing outs.
func op(name string, ins []string, outs ...string) OperatorSpec {
	s := spec(name, 1)
	for _, in := range ins {
		s.Meta.Inputs = append(s.Meta.Inputs, core.Input{Stream: in})
	}
	s.Meta.Outputs = outs
	return s
}

func in(streams ...string) []string { return streams }

func TestDeployRefusesCycles(t *testing.T) {
	cases := []struct {
		name    string
		before  []OperatorSpec // deployed first, one by one
		deploy  OperatorSpec
		wantErr string // the whole error; "" when accepted
		field   string
	}{
		{
			name:    "reads what it writes",
			deploy:  op("echo", in("nums"), "nums"),
			wantErr: `operator "echo": inputs[0].stream: closes a cycle in the stream graph: echo → nums → echo; an operator must not read a stream it writes (its dead letters included), directly or through other operators: remove this input or an output on the cycle`,
			field:   "inputs[0].stream",
		},
		{
			name:    "through two other operators",
			before:  []OperatorSpec{op("a", in("x"), "y"), op("b", in("y"), "z")},
			deploy:  op("c", in("w", "z"), "x"),
			wantErr: `operator "c": inputs[1].stream: closes a cycle in the stream graph: c → x → a → y → b → z → c; an operator must not read a stream it writes (its dead letters included), directly or through other operators: remove this input or an output on the cycle`,
			field:   "inputs[1].stream",
		},
		{
			name:   "redeploy closing a cycle",
			before: []OperatorSpec{op("a", in("x"), "y"), op("b", in("y"))},
			deploy: op("b", in("y"), "x"),
			field:  "inputs[0].stream",
		},
		{
			name:   "reads its own dead letters",
			deploy: op("retry", in("jobs", "retry.deadletter"), "done"),
			field:  "inputs[1].stream",
		},
		{
			name:   "through another operator's dead letters",
			before: []OperatorSpec{op("a", in("x"), "y")},
			deploy: op("fix", in("a.deadletter"), "x"),
			field:  "inputs[0].stream",
		},
		{name: "a chain", before: []OperatorSpec{op("a", in("x"), "y")}, deploy: op("b", in("y"), "z")},
		{
			name:   "a diamond",
			before: []OperatorSpec{op("src", nil, "x"), op("l", in("x"), "y"), op("r", in("x"), "z")},
			deploy: op("join", in("y", "z"), "out"),
		},
		{name: "two writers of one stream", before: []OperatorSpec{op("a", nil, "x")}, deploy: op("b", nil, "x")},
		{name: "reads another's dead letters", before: []OperatorSpec{op("a", in("x"), "y")}, deploy: op("dlq", in("a.deadletter"), "alerts")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var tp Topology
			for _, s := range tc.before {
				var err error
				if tp, _, err = tp.Deploy(s, now); err != nil {
					t.Fatalf("deploy %s: %v", s.Meta.Name, err)
				}
			}
			next, _, err := tp.Deploy(tc.deploy, now)
			if tc.field == "" {
				if err != nil {
					t.Fatalf("got %v, want it deployed", err)
				}
				if cs := next.Cycles(); len(cs) != 0 {
					t.Fatalf("accepted, and Cycles reports %v", cs)
				}
				return
			}
			var ce *CycleError
			var me *core.MetadataError
			if !errors.As(err, &ce) || !errors.As(err, &me) {
				t.Fatalf("got %v, want a *CycleError that is a *core.MetadataError", err)
			}
			if me.Operator != tc.deploy.Meta.Name || me.Field != tc.field {
				t.Errorf("error on %s of %s, want %s of %s", me.Field, me.Operator, tc.field, tc.deploy.Meta.Name)
			}
			if tc.wantErr != "" && err.Error() != tc.wantErr {
				t.Errorf("got  %s\nwant %s", err, tc.wantErr)
			}
			if p := ce.Cycle.Path; p[0] != tc.deploy.Meta.Name || p[len(p)-1] != tc.deploy.Meta.Name {
				t.Errorf("cycle %v does not start and end with %s", p, tc.deploy.Meta.Name)
			}
			if next.Version != tp.Version {
				t.Errorf("a refused deploy changed the version to %d", next.Version)
			}
		})
	}
}

func TestDeployAllChecksTheEndResult(t *testing.T) {
	var tp Topology
	tp, _, err := tp.DeployAll([]OperatorSpec{op("a", in("x"), "y"), op("b", in("y"), "z")}, now)
	if err != nil {
		t.Fatal(err)
	}
	// a cycle in one change: refused, nothing changes
	if same, _, err := tp.DeployAll([]OperatorSpec{op("c", in("z"), "w"), op("d", in("w"), "x")}, now); err == nil || same.Version != tp.Version {
		t.Fatalf("a change closing a → y → b → z → c → w → d → x → a: err %v, version %d; want refused", err, same.Version)
	} else if !strings.Contains(err.Error(), "c → w → d → x → a → y → b → z → c") {
		t.Fatalf("error does not name the cycle: %v", err)
	}
	// a rewiring that would be a cycle half-way but is none at the end
	rewired := []OperatorSpec{op("a", in("z"), "y"), op("b", in("w"), "z")}
	if _, _, err := tp.Deploy(rewired[0], now); err == nil {
		t.Fatal("deploying the first half alone was not refused: the test proves nothing")
	}
	next, _, err := tp.DeployAll(rewired, now)
	if err != nil {
		t.Fatalf("a rewiring with no cycle at the end: %v", err)
	}
	if next.Version != tp.Version+1 || len(next.Cycles()) != 0 {
		t.Fatalf("version %d, cycles %v", next.Version, next.Cycles())
	}
}

func TestSeedAndValidateRefuseCycles(t *testing.T) {
	prog := []OperatorSpec{op("gen", nil, "nums"), op("echo", in("nums"), "nums")}
	var ce *CycleError
	if _, _, err := (Topology{}).Seed(prog, now); !errors.As(err, &ce) || ce.Operator != "echo" {
		t.Fatalf("seeding a program with a cycle: %v, want a *CycleError on echo", err)
	}
	if err := stored(prog...).Validate(); !errors.As(err, &ce) || ce.Cycle.String() != "echo → nums → echo" {
		t.Fatalf("Validate of a topology with a cycle: %v, want echo → nums → echo", err)
	}
	if err := stored(prog[0]).Validate(); err != nil {
		t.Fatalf("Validate without the cycle: %v", err)
	}
}

// stored returns a topology as an older version may have stored it,
// without the checks of Deploy.
func stored(specs ...OperatorSpec) Topology {
	tp := Topology{Version: 7}
	for _, s := range specs {
		s.Meta = s.Meta.WithDefaults()
		tp.Operators = append(tp.Operators, s)
	}
	return tp
}

func TestCyclesOfAStoredTopology(t *testing.T) {
	tp := stored(
		op("src", nil, "x"),
		op("a", in("x", "back"), "y"),
		op("b", in("y"), "back", "out"),
		op("c", in("y"), "back"),
		op("echo", in("nums"), "nums"),
		op("sink", in("out", "a.deadletter")),
	)
	got := tp.Cycles()
	want := []Cycle{
		{Path: []string{"a", "y", "b", "back", "a"}, Operators: []string{"a", "b", "c"}, Streams: []string{"back", "y"}},
		{Path: []string{"echo", "nums", "echo"}, Operators: []string{"echo"}, Streams: []string{"nums"}},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d cycles %v, want %v", len(got), got, want)
	}
	for i := range want {
		if !slices.Equal(got[i].Path, want[i].Path) || !slices.Equal(got[i].Operators, want[i].Operators) || !slices.Equal(got[i].Streams, want[i].Streams) {
			t.Errorf("cycle %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
	if err := tp.Validate(); err == nil {
		t.Error("Validate accepts the stored cycles")
	}

	// Changes to other operators go on; scaling one on a cycle is refused;
	// killing one breaks its cycle.
	if _, _, err := tp.Deploy(op("other", in("out")), now); err != nil {
		t.Errorf("deploying an operator off the cycles: %v", err)
	}
	var ce *CycleError
	if _, err := tp.Scale("b", 3, now); !errors.As(err, &ce) || ce.Cycle.String() != "b → back → a → y → b" {
		t.Errorf("scaling b: %v, want the cycle b → back → a → y → b", err)
	}
	killed, err := tp.Kill("echo", false)
	if err != nil || len(killed.Cycles()) != 1 {
		t.Errorf("after killing echo: %v, %v; want one cycle left", killed.Cycles(), err)
	}
	if (Topology{}).Cycles() != nil || stored(op("a", nil, "x"), op("b", in("x"))).Cycles() != nil {
		t.Error("cycles in an acyclic topology")
	}
}
