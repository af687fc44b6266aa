package stream

import (
	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/codec"
	"github.com/sluicehq/sluice/sdk/state"
)

// KeyContext is what Value reads the current key from: the *Context of a
// Processor's functions.
type KeyContext interface {
	// keyState returns the State and the current key's bytes.
	keyState() (sdk.State, []byte)
}

// keyState implements KeyContext.
func (c *Context[K, U]) keyState() (sdk.State, []byte) { return c.ctx.State(), c.key }

// Value is a typed value per key of a Process stage (Flink's ValueState):
// Get and Set act on the value of the key whose record or timer is being
// handled. It is kept as a state.Map called name keyed by the key's
// encoded bytes, one State entry per key, in the key's key group, so it
// moves with the key when the operator is rescaled (a state.Value, by
// contrast, is one value per key group). Declare it once, outside the
// Processor's functions.
type Value[V any] struct {
	m state.Map[[]byte, V]
}

// NewValue returns the per-key Value called name, its values encoded
// with c.
func NewValue[V any](name string, c codec.Codec[V]) Value[V] {
	return Value[V]{m: state.NewMap(name, codec.Bytes(), c)}
}

// Get returns the current key's value, and false (with V's zero value) if
// it has none.
func (v Value[V]) Get(ctx KeyContext) (V, bool, error) {
	s, k := ctx.keyState()
	return v.m.Get(s, k)
}

// Set stores x as the current key's value.
func (v Value[V]) Set(ctx KeyContext, x V) error {
	s, k := ctx.keyState()
	return v.m.Put(s, k, x)
}

// Clear removes the current key's value.
func (v Value[V]) Clear(ctx KeyContext) error {
	s, k := ctx.keyState()
	return v.m.Delete(s, k)
}
