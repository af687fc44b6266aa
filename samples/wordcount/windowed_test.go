package wordcount_test

import (
	"slices"
	"testing"
	"time"

	"github.com/sluicehq/sluice/manifest"
	"github.com/sluicehq/sluice/samples/wordcount"
	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/sdktest"
	"github.com/sluicehq/sluice/sdk/window"
)

func TestWindowedCounts(t *testing.T) {
	f, err := wordcount.WindowedCountsFactory(2)
	if err != nil {
		t.Fatal(err)
	}
	g, err := sdktest.NewGraph([]sdk.Factory{f})
	if err != nil {
		t.Fatal(err)
	}
	t0 := sdktest.Start
	word := func(w string, sec int) sdk.Record {
		return sdk.Record{Key: []byte(w), EventTime: t0.Add(time.Duration(sec) * time.Second)}
	}
	if err := g.Send(wordcount.Words, word("fox", 1), word("dog", 2), word("fox", 9), word("fox", 11)); err != nil {
		t.Fatal(err)
	}
	if err := g.End(); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range g.Take(wordcount.WindowedCountsStream) {
		s, _, _ := window.Bounds(r)
		got = append(got, string(r.Key)+"@"+s.Sub(t0).String()+"="+string(r.Value))
	}
	slices.Sort(got)
	if want := []string{"dog@0s=1", "fox@0s=2", "fox@10s=1"}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

// TestWindowedCountsManifest deploys the kind from a manifest as the
// control API does: the manifest's fields over the kind's metadata.
func TestWindowedCountsManifest(t *testing.T) {
	f, err := wordcount.WindowedCountsFactory(0)
	if err != nil {
		t.Fatal(err)
	}
	ms, err := manifest.Parse([]byte("name: words-per-10s\nkind: windowed-counts\ninstances: 3\n"))
	if err != nil {
		t.Fatal(err)
	}
	meta := manifest.Metadata(ms[0], f().Metadata())
	if err := meta.Validate(); err != nil {
		t.Fatal(err)
	}
	if meta.Parallelism != 3 || meta.Inputs[0].Routing != sdk.GroupBy || !slices.Contains(meta.Outputs, window.LateStream(wordcount.WindowedCounts)) {
		t.Fatalf("deployed metadata: %+v", meta)
	}
}
