//go:build wasip1

// Command testguest is the wasm guest of wasmop's tests. It counts each
// record's key in state and produces "key" → count to "out"; a value
// names a misbehaviour instead: "panic" (a trap), "loop" (runs for
// ever), "oom" (grows past any memory limit), "bad" (a bad record),
// "err" (an ordinary error), "noop" (nothing: the cost of a call), "timer" (sets a processing-time timer for
// the event time, and an event-time timer), "produce-unknown" (produces
// to an undeclared stream), "headers" (echoes the headers).
package main

import (
	"errors"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/wasmop/guest"
)

type op struct{}

// hog keeps what "oom" allocates reachable.
var hog [][]byte

func (op) ProcessRecord(ctx *guest.Context, rec guest.Record) error {
	switch string(rec.Value) {
	case "noop":
		return nil
	case "panic":
		panic("guest panics on " + string(rec.Key))
	case "loop":
		for i := 0; ; i++ {
			if i < 0 {
				return nil
			}
		}
	case "oom":
		for {
			hog = append(hog, make([]byte, 8<<20))
		}
	case "bad":
		return errors.Join(errors.New("value is bad"), guest.ErrBadRecord)
	case "err":
		return errors.New("an ordinary failure")
	case "timer":
		ctx.SetTimer(string(rec.Key), rec.EventTime)
		ctx.SetEventTimer(string(rec.Key), rec.EventTime)
		return nil
	case "produce-unknown":
		ctx.Produce("nowhere", rec.Key, nil)
		return nil
	case "headers":
		ctx.ProduceRecord("out", guest.Record{Key: rec.Key, Value: []byte(rec.Stream), Headers: rec.Headers, EventTime: rec.EventTime})
		return nil
	}
	n := guest.GetInt64(ctx, rec.Key) + 1
	guest.PutInt64(ctx, rec.Key, n)
	ctx.Produce("out", rec.Key, strconv.AppendInt(nil, n, 10))
	return nil
}

func (op) ProcessTimer(ctx *guest.Context, key string, at time.Time) error {
	ctx.Produce("out", []byte("timer:"+key), []byte(strconv.FormatInt(at.UnixNano(), 10)))
	return nil
}

func (op) ProcessEventTimer(ctx *guest.Context, key string, at time.Time) error {
	ctx.Produce("out", []byte("event-timer:"+key), []byte(ctx.Watermark().UTC().Format(time.RFC3339)))
	return nil
}

func init() { guest.Register(op{}) }

func main() {}
