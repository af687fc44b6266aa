// Package state gives operators typed state over sdk.State: a Value[V], a
// Map[K, V] and a List[V], each made from a name and codecs (sdk/codec),
// in the typed stream API and in any hand-written operator alike.
//
// A state is a small immutable handle: declare it once (a package variable
// or a field of the operator) and pass each call the State of the callback
// it runs in, ctx.State(). Handles may be shared by goroutines; the State
// may not, as ever.
//
//	var clicks = state.NewMap("clicks", codec.String(), codec.Int64())
//
//	func (o *op) ProcessRecord(ctx sdk.Context, rec sdk.Record) error {
//		n, _, err := clicks.Get(ctx.State(), string(rec.Key))
//		if err != nil {
//			return err // a *codec.DecodeError inside: the record is dead-lettered with it
//		}
//		return clicks.Put(ctx.State(), string(rec.Key), n+1)
//	}
//
// # What is offered
//
//   - Value: Get (value, whether set, error), Set, Clear.
//   - Map: Get, Put, Delete, each one State operation; Scan over every entry
//     in the order of the keys' bytes (codec.Int64, Uint64, Float64 and
//     String keep the keys' order), on State.Scan's prefix scan; Clear.
//     There are no range scans between two keys: State offers prefix
//     scans only.
//   - List: Append (a Get and two Sets, whatever the length), All (one
//     Scan, in the order appended), Clear. Elements are not removed or
//     replaced one by one.
//
// # Keys and key groups
//
// Each state's keys live under its own prefix, 0x00, the name's length
// and bytes, and a byte for its kind, so two states of one operator never
// collide, whatever their names, and a Value, a Map and a List may share a
// name. Raw keys an operator writes itself should not start with 0x00.
//
// Everything sdk.State says holds: reads and writes go to the current key
// group (the record's key's, under group-by routing), writes are visible at
// once and rolled back with a failed callback, and Scan sees the current
// key group only. A key group holds many record keys, so a Value is shared
// by all the records of its key group, not one record key's: for state per
// record key, use a Map keyed by the record key, as above.
//
// Errors name the state (`state: map "clicks": decode value: codec: …`) and
// wrap the State's error or the codec's *codec.DecodeError, for errors.As.
package state
