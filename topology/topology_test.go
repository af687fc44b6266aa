package topology

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/core"
)

func spec(name string, par int, inputs ...string) OperatorSpec {
	m := core.Metadata{Name: name, Parallelism: par}
	for _, in := range inputs {
		m.Inputs = append(m.Inputs, core.Input{Stream: in, Routing: core.GroupBy})
	}
	return OperatorSpec{Kind: name, Meta: m}
}

var now = time.Unix(1700000000, 0)

func TestDeployScaleKillRedeploy(t *testing.T) {
	var tp Topology
	tp, created, err := tp.Deploy(spec("count", 2, "words"), now)
	if err != nil || !created || tp.Version != 1 || tp.Operators[0].Epoch != 0 || tp.Operators[0].Meta.KeyGroups != 256 {
		t.Fatalf("deploy: %+v created=%v err=%v", tp, created, err)
	}
	tp, err = tp.Scale("count", 5, now)
	if err != nil || tp.Version != 2 || tp.Operators[0].Epoch != 1 || tp.Operators[0].Meta.Parallelism != 5 {
		t.Fatalf("scale: %+v err=%v", tp.Operators[0], err)
	}
	if same, _ := tp.Scale("count", 5, now); same.Version != tp.Version {
		t.Fatal("scaling to the current parallelism changed the topology")
	}
	if _, err := tp.Scale("nope", 1, now); !errors.Is(err, ErrUnknownOperator) {
		t.Fatalf("scale unknown: %v, want ErrUnknownOperator", err)
	}
	changed := spec("count", 5, "words", "more")
	tp, created, err = tp.Deploy(changed, now)
	if err != nil || created || tp.Operators[0].Epoch != 1 || len(tp.Operators[0].Meta.Inputs) != 2 {
		t.Fatalf("settings change: %+v created=%v err=%v", tp.Operators[0], created, err)
	}
	kg := spec("count", 5, "words")
	kg.Meta.KeyGroups = 64
	var me *core.MetadataError
	if _, _, err := tp.Deploy(kg, now); !errors.As(err, &me) || me.Field != "keyGroups" {
		t.Fatalf("changing key groups: %v, want a keyGroups error", err)
	}
	tp, err = tp.Kill("count", true)
	if err != nil || len(tp.Operators) != 0 || tp.Retired["count"] != 1 || len(tp.Purged) != 1 {
		t.Fatalf("kill: %+v err=%v", tp, err)
	}
	tp, created, err = tp.Deploy(spec("count", 3, "words"), now)
	if err != nil || !created || tp.Operators[0].Epoch != 2 || len(tp.Purged) != 0 {
		t.Fatalf("redeploy: %+v err=%v (want a fresh epoch and no purge pending)", tp, err)
	}
}

func TestSeed(t *testing.T) {
	var tp Topology
	prog := []OperatorSpec{spec("gen", 1), spec("count", 2, "words")}
	tp, changed, err := tp.Seed(prog, now)
	if err != nil || !changed || tp.Version != 1 || len(tp.Operators) != 2 || !tp.Operators[0].FromCode {
		t.Fatalf("first seed: %+v changed=%v err=%v", tp, changed, err)
	}
	if _, changed, _ := tp.Seed(prog, now); changed {
		t.Fatal("seeding the same program again changed the topology")
	}
	// The program changes its counter's parallelism: the counter follows.
	prog[1] = spec("count", 4, "words")
	tp, changed, _ = tp.Seed(prog, now)
	if c, _ := tp.Find("count"); !changed || c.Meta.Parallelism != 4 || c.Epoch != 1 || tp.Version != 2 {
		t.Fatalf("code change: %+v", c)
	}
	// Changed through the API, the operator no longer follows the code.
	tp, _ = tp.Scale("count", 7, now)
	if _, changed, _ := tp.Seed(prog, now); changed {
		t.Fatal("seed overrode a scale made through the API")
	}
	// A killed operator is not deployed again by a restarted program.
	tp, _ = tp.Kill("gen", false)
	if _, changed, _ := tp.Seed(prog, now); changed {
		t.Fatal("seed redeployed a killed operator")
	}
	// A new operator in the program is deployed.
	tp, changed, _ = tp.Seed(append(prog, spec("new", 1)), now)
	if _, ok := tp.Find("new"); !ok || !changed {
		t.Fatal("a new operator of the program was not deployed")
	}
	bad := spec("bad", -1)
	if _, _, err := tp.Seed([]OperatorSpec{bad}, now); err == nil || !strings.Contains(err.Error(), "parallelism") {
		t.Fatalf("seeding invalid metadata: %v", err)
	}
}

func TestDeployAllIsOneChange(t *testing.T) {
	var tp Topology
	tp, _, err := tp.Deploy(spec("count", 2, "words"), now)
	if err != nil {
		t.Fatal(err)
	}
	next, created, err := tp.DeployAll([]OperatorSpec{spec("source", 1), spec("count", 4, "words"), spec("sink", 1, "counts")}, now)
	if err != nil {
		t.Fatal(err)
	}
	if next.Version != tp.Version+1 {
		t.Fatalf("version %d after one batch on %d, want %d", next.Version, tp.Version, tp.Version+1)
	}
	if want := []bool{true, false, true}; len(created) != 3 || created[0] != want[0] || created[1] != want[1] || created[2] != want[2] {
		t.Fatalf("created = %v, want %v", created, want)
	}
	if c, _ := next.Find("count"); c.Meta.Parallelism != 4 || c.Epoch != 1 {
		t.Fatalf("count after the batch: parallelism %d epoch %d, want 4 and 1", c.Meta.Parallelism, c.Epoch)
	}
	var me *core.MetadataError
	if _, _, err := tp.DeployAll([]OperatorSpec{spec("a", 1), spec("a", 2)}, now); !errors.As(err, &me) || me.Field != "name" || !strings.Contains(me.Problem, "twice") {
		t.Fatalf("a batch naming an operator twice: %v, want a name error", err)
	}
	bad := spec("b", 1)
	bad.Meta.Parallelism = -1
	if same, _, err := tp.DeployAll([]OperatorSpec{spec("ok", 1), bad}, now); err == nil || same.Version != tp.Version {
		t.Fatalf("a batch with an invalid operator: err %v, version %d; want an error and nothing changed", err, same.Version)
	}
}

func TestWindowIsFixedOnceDeployed(t *testing.T) {
	win := func(size time.Duration) OperatorSpec {
		s := spec("counts", 2, "words")
		s.Meta.Window = &core.WindowSpec{Type: core.WindowTumbling, Size: size}
		return s
	}
	var tp Topology
	tp, _, err := tp.Deploy(spec("counts", 2, "words"), now)
	if err != nil {
		t.Fatal(err)
	}
	// An operator deployed before it declared windows takes them.
	tp, _, err = tp.Deploy(win(time.Second), now)
	if err != nil || !tp.Operators[0].Meta.Window.Equal(&core.WindowSpec{Type: core.WindowTumbling, Size: time.Second}) || tp.Operators[0].Revision != 1 {
		t.Fatalf("adding windows: %+v err=%v", tp.Operators[0], err)
	}
	same, _, err := tp.Deploy(win(time.Second), now)
	if err != nil || same.Operators[0].Revision != 1 {
		t.Fatalf("same windows again: revision %d err=%v, want 1 and nil", same.Operators[0].Revision, err)
	}
	var me *core.MetadataError
	for _, w := range []OperatorSpec{win(2 * time.Second), spec("counts", 2, "words")} {
		if _, _, err := tp.Deploy(w, now); !errors.As(err, &me) || me.Field != "window" || !strings.Contains(err.Error(), "tumbling(1s)") {
			t.Fatalf("changing the windows to %v: %v, want a window error naming the deployed ones", w.Meta.Window, err)
		}
	}
	// A program whose code changed an operator's windows is refused too.
	fromCode := func(size time.Duration) []OperatorSpec { s := win(size); s.FromCode = true; return []OperatorSpec{s} }
	seeded, _, err := Topology{}.Seed(fromCode(time.Second), now)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := seeded.Seed(fromCode(2*time.Second), now); !errors.As(err, &me) || me.Field != "window" {
		t.Fatalf("seeding changed windows: %v, want a window error", err)
	}
	tp, err = tp.Kill("counts", true)
	if err != nil {
		t.Fatal(err)
	}
	if tp, _, err = tp.Deploy(win(2*time.Second), now); err != nil || tp.Operators[0].Meta.Window.Size != 2*time.Second {
		t.Fatalf("redeploy after kill with purge: %+v err=%v", tp.Operators, err)
	}
}
