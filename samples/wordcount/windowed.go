package wordcount

import (
	"time"

	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/window"
)

// WindowedCounts is the operator (and kind) name of the word counts per
// 10 s event-time window, and WindowedCountsStream the stream of its
// results (one record per word and window: the word as key, the count in
// decimal, the window's bounds in window.HeaderStart and HeaderEnd).
const (
	WindowedCounts       = "windowed-counts"
	WindowedCountsStream = "windowed-word-counts"
	WindowSize           = 10 * time.Second
)

// WindowedCountsFactory returns the windowed word count: a window operator
// (window.Tumbling(WindowSize), window.Count()) over the words stream,
// group-by word, with parallelism instances (0: 1). Late words go to
// "windowed-counts.late". A node hosting it lets a manifest deploy it
// (kind: windowed-counts) with its own instances and key groups.
func WindowedCountsFactory(parallelism int) (sdk.Factory, error) {
	return window.New(window.Config{Name: WindowedCounts, Input: Words, Output: WindowedCountsStream,
		Windows: window.Tumbling(WindowSize), Parallelism: parallelism}, window.Count())
}
