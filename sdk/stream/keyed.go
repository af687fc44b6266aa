package stream

import (
	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/codec"
)

// KV is a key and a value: a record of a keyed stream.
type KV[K, V any] struct {
	Key   K
	Value V
}

// Keyed is a stream partitioned by key (KeyBy): its values travel as
// records whose Key is the key encoded with the key codec and whose
// Value is the value encoded with its stream's codec, read with group-by
// routing on the key's bytes, so all the values of a key reach one
// instance of the stage reading it, in order, and its state there (see
// Aggregate, Process).
type Keyed[K, T any] struct {
	st *stage
	kc codec.Codec[K]
	vc codec.Codec[T]
	f  format[KV[K, T]]
}

// keyedFormat puts a KV's key in the record's Key and its value in the
// Value.
func keyedFormat[K, T any](kc codec.Codec[K], vc codec.Codec[T]) format[KV[K, T]] {
	return format[KV[K, T]]{
		encode: func(a *arena, kv KV[K, T]) (sdk.Record, error) {
			k, err := encodeWith(a, kc, kv.Key)
			if err != nil {
				return sdk.Record{}, err
			}
			v, err := encodeWith(a, vc, kv.Value)
			return sdk.Record{Key: k, Value: v}, err
		},
		decode: func(rec sdk.Record) (KV[K, T], error) {
			k, err := kc.Decode(rec.Key)
			if err != nil {
				return KV[K, T]{}, err
			}
			v, err := vc.Decode(rec.Value)
			return KV[K, T]{Key: k, Value: v}, err
		},
	}
}

// KeyBy adds a stage keying each value by key(value), encoded with kc:
// the stages reading the keyed stream get the values of a key on one of
// their instances (group-by routing on the encoded key, so a codec must
// give equal keys equal bytes: the numeric codecs, String, Bytes, JSON of
// structs do; JSON of maps sorts their keys). KeyBy chains: the operator
// of the stage before it encodes key and value and produces them to the
// stream "<pipeline>.<stage>", which the stages reading the keyed stream
// read with group-by routing, and to the streams of OutputKeyed and
// ToKeyed.
func KeyBy[T, K any](s *Stream[T], name string, key func(T) K, kc codec.Codec[K], opts ...Option) *Keyed[K, T] {
	k := &Keyed[K, T]{st: s.st.p.add(name, kindKeyBy, s.st, opts), kc: kc, vc: s.c, f: keyedFormat(kc, s.c)}
	k.st.require(key != nil, "KeyBy's function")
	requireCodec(k.st, kc)
	vc, st := s.c, k.st
	s.attach(st, func(in *inst) func(T) error {
		targets := st.targets
		return func(v T) error {
			kb, err := encodeWith(&in.arena, kc, key(v))
			if err != nil {
				return in.encodeError(st.name, err)
			}
			vb, err := encodeWith(&in.arena, vc, v)
			if err != nil {
				return in.encodeError(st.name, err)
			}
			return in.produce(targets, sdk.Record{Key: kb, Value: vb})
		}
	})
	return k
}

// OutputKeyed adds a stage, named after the stream, producing the keyed
// stream's records (key and value encoded) to the Sluice stream of that
// name, for readers outside the pipeline: an operator reading it with
// group-by routing gets each key on one instance.
func OutputKeyed[K, T any](k *Keyed[K, T], stream string, opts ...Option) *Out[KV[K, T]] {
	return output(k.st, stream, k.f, opts)
}

// ToKeyed adds a stage sending the keyed stream's records (key and value
// encoded) to sink, an operator with one input (a Kafka sink keeps the
// key), as To does.
func ToKeyed[K, T any](k *Keyed[K, T], name string, sink sdk.Factory, opts ...Option) *Out[KV[K, T]] {
	return to(k.st, name, k.f, sink, opts)
}
