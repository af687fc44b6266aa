package topology_test

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/sluicehq/sluice/creds"
	"github.com/sluicehq/sluice/creds/credstest"
	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/topology"
	"github.com/sluicehq/sluice/topology/pebble"
)

func nodeSealer(t *testing.T, f credstest.Files) topology.NodeSealer {
	t.Helper()
	src, err := creds.Load(f.Config())
	if err != nil {
		t.Fatal(err)
	}
	return topology.NodeSealer{Creds: src}
}

func sealedGuard(t *testing.T, s topology.RestorableStore, sealer topology.Sealer) *topology.Guard {
	t.Helper()
	g, err := topology.NewGuard(s, topology.NewFileCopy(filepath.Join(t.TempDir(), topology.CopyFile), "test"),
		slog.New(slog.NewTextHandler(testWriter{t}, nil)), topology.WithSealer(sealer))
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestGuardRefusesTopologiesNoNodeSigned is issue 31's attacker item 6 at
// the store: with node certificates, a topology written around the control
// API (an unsigned one, one signed by another CA's node, a signed one
// changed afterwards) is never handed on: the guards record it and write
// the latest signed one back, and the nodes' next change lands on it.
func TestGuardRefusesTopologiesNoNodeSigned(t *testing.T) {
	ctx := context.Background()
	ca := credstest.NewCA(t, "cluster CA")
	raw := pebble.New(openDB(t, t.TempDir()))
	n1 := sealedGuard(t, raw, nodeSealer(t, ca.Node(t, "n1")))
	n2 := sealedGuard(t, raw, nodeSealer(t, ca.Node(t, "n2")))
	w1, w2 := watch(t, n1), watch(t, n2)
	deployN(t, n1, "a", "b")
	sluicetest.WaitFor(t, 10*time.Second, "n2 to act on n1's version 2", func() bool { return w2.latest() == 2 })
	if cur, err := raw.Load(ctx); err != nil || cur.Seal == nil || cur.Seal.Signer != "n1" {
		t.Fatalf("stored version 2 is not signed by n1: %+v, %v", cur.Seal, err)
	}

	stranger := nodeSealer(t, credstest.NewCA(t, "other CA").Node(t, "n1"))
	forgeries := []struct {
		what  string
		forge func(cur topology.Topology) topology.Topology
	}{
		{"unsigned", func(cur topology.Topology) topology.Topology { return cur.Clone() }},
		{"signed by another CA's node", func(cur topology.Topology) topology.Topology {
			f := cur.Clone()
			p, err := topology.SealPayload(f)
			if err != nil {
				t.Fatal(err)
			}
			seal, err := stranger.Sign(p)
			if err != nil {
				t.Fatal(err)
			}
			f.Seal = &seal
			return f
		}},
		{"signed, then changed", func(cur topology.Topology) topology.Topology {
			f := cur.Clone()
			f.Seal = cur.Seal // n1's seal over what follows without "a"
			return f
		}},
	}
	for i, fg := range forgeries {
		cur, err := raw.Load(ctx)
		if err != nil {
			t.Fatal(err)
		}
		forged, err := cur.Kill("a", true)
		if err != nil {
			t.Fatal(err)
		}
		forged = fg.forge(forged)
		forged.Version = cur.Version + 10
		if err := raw.Restore(ctx, cur.Version, forged); err != nil {
			t.Fatal(err)
		}
		sluicetest.WaitFor(t, 10*time.Second, "the "+fg.what+" topology written back over", func() bool {
			now, err := raw.Load(ctx)
			r, _ := n1.Regression()
			r2, _ := n2.Regression()
			return err == nil && now.Version == cur.Version && r.Count+r2.Count >= i+1 && (r.Reseeded || r2.Reseeded)
		})
		for _, g := range []*topology.Guard{n1, n2} {
			if tp, err := g.Load(ctx); err != nil || tp.Version != cur.Version {
				t.Fatalf("%s: a guard loads version %d (%v), want %d", fg.what, tp.Version, err, cur.Version)
			} else if _, ok := tp.Find("a"); !ok {
				t.Fatalf("%s: the forged kill of a was acted on", fg.what)
			}
		}
		r, ok := n1.Regression()
		if r2, ok2 := n2.Regression(); ok2 && (!ok || r2.At.After(r.At)) {
			r, ok = r2, ok2
		}
		if !ok || !errors.Is(r.Unsealed, topology.ErrUnsealed) || r.Found != forged.Version {
			t.Fatalf("%s: regression %+v, want the unsigned version %d", fg.what, r, forged.Version)
		}
	}
	for _, w := range []*watcher{w1, w2} {
		w.checkIncreasing(t)
		if v := w.latest(); v != 2 {
			t.Fatalf("a watcher acted on version %d, want 2 only", v)
		}
	}
	if tp := deployN(t, n2, "c"); tp.Version != 3 {
		t.Fatalf("n2's deploy after the forgeries: version %d, want 3", tp.Version)
	}
	sluicetest.WaitFor(t, 10*time.Second, "n1 to act on n2's version 3", func() bool { return w1.latest() == 3 })
}
