package connect

import (
	"encoding/binary"
	"fmt"
	"maps"
	"slices"

	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/codec"
)

// Positions keeps a resumable source's read positions in State, one per
// split (a file, a partition, a shard): "<prefix><split>" →
// uvarint(sequence) + the position's encoding, in the key group the
// writing callback runs in (Init and Poll: the instance's first).
//
// The sequence orders the writes of a split: after a rescale a split's
// position may be found in several key groups the instance now owns (its
// old owner's and its own), and the newest write wins. A split is read by
// one instance at a time, so its sequence only grows.
//
// A position written in another key group stays there (State writes go
// to the current key group only): a rescale that hands a split back to
// an instance owning such a stale entry, but not the newer one, resumes
// from the stale one and produces the records since again (the Kafka
// source has the same limit). Rescale sources between checkpoints of one
// parallelism to the next, not back.
//
// A Positions is used by one operator value on the instance's goroutine.
// Its cache lives as long as the value: after a failed attempt the
// runtime takes a fresh operator and Init loads State again, so a cached
// position is never ahead of State.
type Positions[P any] struct {
	prefix string
	codec  codec.Codec[P]
	pos    map[string]position[P]
}

// position is one split's position and the sequence of its write.
type position[P any] struct {
	seq uint64
	pos P
}

// NewPositions returns Positions under state key prefix (such as
// "kafka/pos/"), positions encoded with c.
func NewPositions[P any](prefix string, c codec.Codec[P]) *Positions[P] {
	return &Positions[P]{prefix: prefix, codec: c, pos: map[string]position[P]{}}
}

// Load reads the positions of every key group the instance owns
// (sdk.ScanAllGroups); call it in Init.
func (p *Positions[P]) Load(st sdk.State) error {
	clear(p.pos)
	return sdk.ScanAllGroups(st, []byte(p.prefix), func(key, value []byte) error {
		split := string(key[len(p.prefix):])
		seq, n := binary.Uvarint(value)
		if n <= 0 {
			return fmt.Errorf("connect: position of split %q: %w", split, ErrCorrupt)
		}
		v, err := p.codec.Decode(value[n:])
		if err != nil {
			return fmt.Errorf("connect: position of split %q: %w", split, err)
		}
		if old, ok := p.pos[split]; !ok || seq > old.seq {
			p.pos[split] = position[P]{seq, v}
		}
		return nil
	})
}

// Get returns split's position and whether State holds one.
func (p *Positions[P]) Get(split string) (P, bool) {
	v, ok := p.pos[split]
	return v.pos, ok
}

// Set writes split's position to State, in the current attempt: call it
// in the Poll that produced the records before pos, so that both are
// kept or neither.
func (p *Positions[P]) Set(st sdk.State, split string, pos P) error {
	seq := p.pos[split].seq + 1
	b, err := p.codec.Encode(binary.AppendUvarint(nil, seq), pos)
	if err != nil {
		return fmt.Errorf("connect: encode the position of split %q: %w", split, err)
	}
	st.Set([]byte(p.prefix+split), b)
	p.pos[split] = position[P]{seq, pos}
	return nil
}

// Splits returns the splits that have a position, sorted.
func (p *Positions[P]) Splits() []string { return slices.Sorted(maps.Keys(p.pos)) }
