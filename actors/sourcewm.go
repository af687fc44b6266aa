package actors

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/internal/core"
)

// A source instance's watermarks (core.WatermarkStrategy).
//
// Produce notes the largest event time of the records a Poll produces
// (pollMax); once the Poll succeeded it counts (maxEvent), so a failed
// attempt's records, which are discarded, never move the watermark. After
// a Poll, at most every Interval, the watermark — maxEvent minus the
// out-of-orderness, or what a core.WatermarkGenerator returned — is raised
// (never lowered) and forwarded after the Poll's records. A source that
// produced nothing for the idleness timeout forwards idleness once; its
// next records end it. maxEvent is stored with the watermark (metaMaxEvent),
// so a restarted or moved source resumes from it.

// metaMaxEvent names a source's stored largest event time (8 bytes,
// big-endian ns), kept in every key group of the instance.
const metaMaxEvent = "max-event"

// sourceWM is a source instance's watermark generation (actor goroutine
// only).
type sourceWM struct {
	maxEvent   int64     // largest event time produced by successful Polls
	maxSet     int64     // the value of maxEvent last stored
	pollMax    int64     // largest event time of the current Poll attempt
	generated  time.Time // a WatermarkGenerator's answer in the current Poll
	lastEmit   time.Time // when the watermark was last computed
	lastRecord time.Time // when the source last produced a record
	idle       bool      // marked idle (no record for the idleness timeout)
	nextWarn   time.Time // rate limit of the backwards-watermark warning
}

// noteEventTime notes the event time of a record produced by Poll.
func (i *instance) noteEventTime(at time.Time) {
	if ns := at.UnixNano(); ns > i.src.pollMax {
		i.src.pollMax = ns
	}
}

// generateWatermark asks a WatermarkGenerator source for its watermark,
// inside the Poll's attempt.
func (i *instance) generateWatermark() {
	if g, ok := i.opv.(core.WatermarkGenerator); ok {
		i.src.generated = g.CurrentWatermark(i.octx)
	}
}

// afterPoll updates the source's event time after a successful Poll: its
// watermark (or idleness), or, when the Poll said the stream ended, the end
// of time (every event-time timer fires and end-of-stream follows the
// records).
func (i *instance) afterPoll(producedAny, ended bool) {
	s := &i.src
	now := time.Now()
	s.maxEvent = max(s.maxEvent, s.pollMax)
	if producedAny || s.lastRecord.IsZero() {
		s.lastRecord = now
	}
	if ended {
		i.inputEnded = true
		i.raiseWatermark(endOfTime)
		return
	}
	w := i.spec.Meta.Watermarks
	g, custom := i.opv.(core.WatermarkGenerator)
	if w == nil && !custom {
		return
	}
	interval := core.DefaultWatermarkInterval
	var idleness, late time.Duration
	if w != nil {
		interval, idleness, late = w.Interval, w.Idleness, w.OutOfOrderness
	}
	if idleness > 0 && now.Sub(s.lastRecord) >= idleness {
		if !s.idle {
			s.idle = true
			i.forwardWatermark()
		}
		return
	}
	s.idle = false
	if !s.lastEmit.IsZero() && now.Sub(s.lastEmit) < interval && !i.idleSent {
		return
	}
	s.lastEmit = now
	wm := int64(noWatermark)
	switch {
	case custom:
		if !s.generated.IsZero() {
			wm = s.generated.UnixNano()
		}
		if wm != noWatermark && wm < i.watermark && now.After(s.nextWarn) {
			s.nextWarn = now.Add(10 * time.Second)
			i.log.Warn("watermark generator went backwards; the watermark is held", "generator", fmt.Sprintf("%T", g),
				"returned", wmTime(wm), "watermark", wmTime(i.watermark))
		}
	case s.maxEvent != noWatermark:
		wm = s.maxEvent - int64(late)
	}
	i.raiseWatermark(wm)
}

// idleNow reports whether the instance is idle: a source marked idle, or
// an instance all of whose live inputs are idle.
func (i *instance) idleNow() bool {
	if _, ok := i.opv.(core.Source); ok && len(i.spec.Meta.Inputs) == 0 {
		return i.src.idle
	}
	return i.ins.allIdle()
}

// loadSourceWatermark loads a source's stored largest event time (the
// smallest over its key groups, as for the watermark).
func (i *instance) loadSourceWatermark() {
	i.src = sourceWM{maxEvent: noWatermark, maxSet: noWatermark, pollMax: noWatermark}
	m := int64(endOfTime)
	for kg := i.lo; kg < i.hi; kg++ {
		v, ok, err := i.store.GetMeta(kg, metaMaxEvent)
		if err != nil || !ok || len(v) != 8 {
			return
		}
		m = min(m, int64(binary.BigEndian.Uint64(v)))
	}
	if m != endOfTime {
		i.src.maxEvent, i.src.maxSet = m, m
	}
}

// saveSourceWatermark stores a source's largest event time when it moved.
func (i *instance) saveSourceWatermark() {
	s := &i.src
	if s.maxEvent == s.maxSet || s.maxEvent == noWatermark {
		return
	}
	v := binary.BigEndian.AppendUint64(nil, uint64(s.maxEvent))
	for kg := i.lo; kg < i.hi; kg++ {
		i.store.SetMeta(kg, metaMaxEvent, v)
	}
	s.maxSet = s.maxEvent
}
