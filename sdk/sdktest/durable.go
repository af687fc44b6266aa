package sdktest

import (
	"fmt"
	"time"

	"github.com/sluicehq/sluice/sdk"
)

// At-least-once (sdk.Replayable sources), as actors/durability.go drives
// them: at each commit of the instance's state the runtime flushes an
// sdk.Flusher and takes the source's Position; once everything produced
// before it is durable downstream it hands it to Durable; after a crash of
// another node it calls Rewind.

// Position flushes an sdk.Flusher and returns the Position of an
// sdk.Replayable source, as the runtime does at a commit of the
// instance's state: hand it to Durable once what the test took is done.
func (h *Harness) Position() (any, error) {
	src, ok := h.op.(sdk.Replayable)
	if !ok {
		return nil, fmt.Errorf("sdktest: operator %q is not an sdk.Replayable", h.meta.Name)
	}
	if err := h.Flush(); err != nil {
		return nil, err
	}
	var pos any
	err := call(func() error { pos = src.Position(); return nil })
	if err != nil {
		return nil, fmt.Errorf("sdktest: operator %q: position: %w", h.meta.Name, err)
	}
	return pos, nil
}

// Durable tells an sdk.Replayable source that everything it produced
// before pos (from Position) has its effects durable downstream. It runs
// in the instance's first key group; a panic is returned as an error.
func (h *Harness) Durable(pos any) error {
	src, ok := h.op.(sdk.Replayable)
	if !ok {
		return fmt.Errorf("sdktest: operator %q is not an sdk.Replayable", h.meta.Name)
	}
	return h.try(h.info.FirstGroup, time.Time{}, func() error { src.Durable(h.context(), pos); return nil })
}

// MarkDurable is Position then Durable: everything produced so far is
// durable downstream.
func (h *Harness) MarkDurable() error {
	pos, err := h.Position()
	if err != nil {
		return err
	}
	return h.Durable(pos)
}

// Rewind makes an sdk.Replayable source produce again from its last
// durable position, as the runtime does after another node crashed. A
// failing Rewind has no effect and its error is returned; the operator is
// not restarted (the runtime logs it).
func (h *Harness) Rewind() error {
	src, ok := h.op.(sdk.Replayable)
	if !ok {
		return fmt.Errorf("sdktest: operator %q is not an sdk.Replayable", h.meta.Name)
	}
	if err := h.try(h.info.FirstGroup, time.Time{}, func() error { return src.Rewind(h.context()) }); err != nil {
		return fmt.Errorf("sdktest: operator %q: rewind: %w", h.meta.Name, err)
	}
	return nil
}
