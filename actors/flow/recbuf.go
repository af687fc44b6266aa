package flow

import "github.com/sluicehq/sluice/internal/core"

// recBuf is a FIFO of records kept as a list of batch-sized chunks, so that
// it grows without copying and a full chunk leaves as one batch as is.
type recBuf struct {
	size   int             // records per chunk
	chunks [][]core.Record // all full but the last
	n      int
}

// Len returns the number of records.
func (b *recBuf) Len() int { return b.n }

// Add appends rec.
func (b *recBuf) Add(rec core.Record) {
	last := len(b.chunks) - 1
	if last < 0 || len(b.chunks[last]) == b.size {
		b.chunks = append(b.chunks, make([]core.Record, 0, b.size))
		last++
	}
	b.chunks[last] = append(b.chunks[last], rec)
	b.n++
}

// Take removes and returns the first chunk (at most size records).
func (b *recBuf) Take() []core.Record {
	if b.n == 0 {
		return nil
	}
	c := b.chunks[0]
	b.chunks[0] = nil
	b.chunks = b.chunks[1:]
	if len(b.chunks) == 0 {
		b.chunks = nil
	}
	b.n -= len(c)
	return c[:len(c):len(c)]
}

// TruncateTo drops the records after the first m.
func (b *recBuf) TruncateTo(m int) {
	for b.n > m {
		last := len(b.chunks) - 1
		c := b.chunks[last]
		drop := min(len(c), b.n-m)
		clear(c[len(c)-drop:])
		b.chunks[last] = c[:len(c)-drop]
		b.n -= drop
		if len(b.chunks[last]) == 0 {
			b.chunks[last] = nil
			b.chunks = b.chunks[:last]
		}
	}
}

// Drain removes and returns every record, in order.
func (b *recBuf) Drain() []core.Record {
	out := make([]core.Record, 0, b.n)
	for _, c := range b.chunks {
		out = append(out, c...)
	}
	b.chunks, b.n = nil, 0
	return out
}
