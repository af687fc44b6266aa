package wordcount_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/core"
	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/samples/wordcount"
	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/node"
)

func TestCountsAreExact(t *testing.T) {
	counts, words := &sluicetest.Collector{}, &sluicetest.Collector{}
	rt, err := node.Start(context.Background(), node.Config{NodeConfig: node.NodeConfig{DataDir: t.TempDir(), NoSync: true, Logger: sluicetest.Logger(t)}},
		wordcount.SentenceSource(0, 2000),
		func() sdk.Operator { return wordcount.Split{} },
		func() sdk.Operator { return wordcount.Count{} },
		func() sdk.Operator {
			return &sluicetest.Sink{Name: "counts", Inputs: []core.Input{{Stream: wordcount.Counts}}, Into: counts}
		},
		func() sdk.Operator {
			return &sluicetest.Sink{Name: "words", Inputs: []core.Input{{Stream: wordcount.Words}}, Into: words}
		},
	)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Stop(context.Background())
	sluicetest.WaitFor(t, time.Minute, "every word counted", func() bool {
		var split node.OperatorStatus
		for _, st := range rt.Status() {
			if st.Name == "split" {
				split = st
			}
		}
		var in, out int64
		for _, i := range split.Instances {
			in, out = in+i.Processed, out+i.Produced
		}
		return in == 2000 && words.Len() == int(out) && counts.Len() == int(out)
	})
	want := map[string]int64{}
	for _, d := range words.All() {
		want[string(d.Record.Key)]++
	}
	got := map[string]int64{}
	for _, d := range counts.All() {
		n, err := sdk.BytesInt64(d.Record.Value)
		if err != nil {
			t.Fatal(err)
		}
		got[string(d.Record.Key)] = max(got[string(d.Record.Key)], n)
	}
	for w, n := range want {
		if got[w] != n {
			t.Errorf("%q counted %d, want %d", w, got[w], n)
		}
	}
}
