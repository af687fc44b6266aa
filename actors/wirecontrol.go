package actors

import (
	"time"

	"github.com/sluicehq/sluice/actors/flow"
	"github.com/sluicehq/sluice/actors/wire"
)

// toWireControl converts a control record for the wire (nil stays nil).
func toWireControl(c *flow.Control) *wire.Control {
	if c == nil {
		return nil
	}
	w := &wire.Control{Kind: int32(c.Kind), Checkpoint: c.Checkpoint, Idle: c.Idle}
	if !c.Watermark.IsZero() {
		w.WatermarkUnixNano = c.Watermark.UnixNano()
	}
	return w
}

// fromWireControl converts a control record from the wire (nil stays nil).
func fromWireControl(w *wire.Control) *flow.Control {
	if w == nil {
		return nil
	}
	c := &flow.Control{Kind: flow.ControlKind(w.Kind), Checkpoint: w.Checkpoint, Idle: w.Idle}
	if w.WatermarkUnixNano != 0 {
		c.Watermark = time.Unix(0, w.WatermarkUnixNano)
	}
	return c
}
