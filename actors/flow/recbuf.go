package flow

import (
	"math/bits"
	"sync"

	"github.com/sluicehq/sluice/internal/core"
)

// recBuf is a FIFO of records kept as a list of batch-sized chunks, so that
// it grows without copying and a full chunk leaves as one batch as is. A
// chunk is full at size records, or at maxBytes bytes of records (see
// RecordBytes; 0: no such limit): a record that would take a chunk with
// records past maxBytes starts the next one, so that a batch is at most
// maxBytes or one record. A control record closes the chunk it follows:
// that chunk leaves as soon as it has credit, however few records it
// holds, and later records start a new chunk.
//
// A chunk starts with room for twice the records of the last one taken
// (at least minChunk, at most size) and grows when more come, its arrays
// taken from and given back to the pool of recycled ones (NewChunk,
// Recycle): at a low rate batches leave with a few records each, and a
// full-size chunk allocated per batch was most of what a pipeline
// allocated there (word count at 10 % load: 830 bytes a record, a GC
// cycle every 60 ms).
type recBuf struct {
	size     int     // records per chunk
	maxBytes int     // bytes of records per chunk; 0: no limit
	chunks   []chunk // all full or closed but the last
	n        int     // records in all chunks
	last     int     // records in the chunk taken last
}

// minChunk is the least capacity a new chunk is allocated with.
const minChunk = 16

// chunk is the content of one future batch.
type chunk struct {
	recs  []core.Record
	bytes int      // RecordBytes of recs, summed
	ctl   *Control // closes the chunk; nil while it is open
}

// RecordBytes is what a record counts for against a batch's byte limit
// (Config.BatchBytes) and a record's (the runtime's MaxRecordBytes): its
// key, value and headers.
func RecordBytes(rec core.Record) int {
	n := len(rec.Key) + len(rec.Value)
	for _, h := range rec.Headers {
		n += len(h.Key) + len(h.Value)
	}
	return n
}

// Len returns the number of records.
func (b *recBuf) Len() int { return b.n }

// Chunks returns the number of batches the buffer's content will take.
func (b *recBuf) Chunks() int { return len(b.chunks) }

// Empty reports whether nothing, record or control, waits.
func (b *recBuf) Empty() bool { return len(b.chunks) == 0 }

// Add appends rec.
func (b *recBuf) Add(rec core.Record) {
	sz := RecordBytes(rec)
	last := len(b.chunks) - 1
	if last < 0 || len(b.chunks[last].recs) == b.size || b.chunks[last].ctl != nil ||
		(b.maxBytes > 0 && len(b.chunks[last].recs) > 0 && b.chunks[last].bytes+sz > b.maxBytes) {
		b.chunks = append(b.chunks, chunk{recs: NewChunk(min(b.size, max(minChunk, 2*b.last)))})
		last++
	}
	c := &b.chunks[last]
	if len(c.recs) == cap(c.recs) { // grow from the pool, and give the old array back
		grown := append(NewChunk(min(b.size, 2*cap(c.recs))), c.recs...)
		Recycle(c.recs)
		c.recs = grown
	}
	c.recs = append(c.recs, rec)
	c.bytes += sz
	b.n++
}

// Close appends control c after the records added so far.
func (b *recBuf) Close(c Control) {
	last := len(b.chunks) - 1
	if last < 0 || b.chunks[last].ctl != nil {
		b.chunks = append(b.chunks, chunk{})
		last++
	}
	b.chunks[last].ctl = &c
}

// Ready reports whether the first chunk may leave: it is full or closed
// (as every chunk but the last is), or any chunk may (all).
func (b *recBuf) Ready(all bool) bool {
	if len(b.chunks) == 0 {
		return false
	}
	c := &b.chunks[0]
	return all || len(b.chunks) > 1 || c.ctl != nil || len(c.recs) >= b.size || (b.maxBytes > 0 && c.bytes >= b.maxBytes)
}

// Take removes and returns the first chunk, whose records then belong to
// the caller (see Recycle).
func (b *recBuf) Take() ([]core.Record, *Control) {
	if len(b.chunks) == 0 {
		return nil, nil
	}
	c := b.chunks[0]
	b.chunks[0] = chunk{}
	b.chunks = b.chunks[1:]
	if len(b.chunks) == 0 {
		b.chunks = nil
	}
	b.n -= len(c.recs)
	b.last = len(c.recs)
	return c.recs, c.ctl
}

// TruncateTo drops the records after the first m. It never reaches back
// past a control (controls are added between attempts, never within one).
func (b *recBuf) TruncateTo(m int) {
	for b.n > m && len(b.chunks) > 0 {
		last := len(b.chunks) - 1
		c := &b.chunks[last]
		if c.ctl != nil {
			return
		}
		drop := min(len(c.recs), b.n-m)
		for _, r := range c.recs[len(c.recs)-drop:] {
			c.bytes -= RecordBytes(r)
		}
		clear(c.recs[len(c.recs)-drop:])
		c.recs = c.recs[:len(c.recs)-drop]
		b.n -= drop
		if len(c.recs) == 0 {
			b.chunks[last] = chunk{}
			b.chunks = b.chunks[:last]
		}
	}
}

// Drain removes and returns every record, in order, and the controls
// between them.
func (b *recBuf) Drain() ([]core.Record, []Control) {
	out := make([]core.Record, 0, b.n)
	var ctls []Control
	for _, c := range b.chunks {
		out = append(out, c.recs...)
		if c.ctl != nil {
			ctls = append(ctls, *c.ctl)
		}
	}
	b.chunks, b.n = nil, 0
	return out, ctls
}

// chunkPools keep the record arrays of processed batches for new chunks
// (Recycle), by size class: pool k holds slices of capacity ≥ 1<<k. At a
// low rate every batch is a chunk of its own, so without them each batch
// allocated one.
var chunkPools [17]sync.Pool

// NewChunk returns an empty record slice of capacity ≥ n, recycled when
// one is at hand (see Recycle).
func NewChunk(n int) []core.Record {
	n = max(n, 1)
	k := bits.Len(uint(n - 1)) // the least k with 1<<k ≥ n
	if k < len(chunkPools) {
		if v, ok := chunkPools[k].Get().(*[]core.Record); ok {
			return (*v)[:0]
		}
		n = 1 << k
	}
	return make([]core.Record, 0, n)
}

// Recycle hands back the records of a batch that is done with: nothing
// may read or keep recs (or a slice of it) after the call. The receiving
// instance calls it once it has processed a batch, and a remote
// destination once it has encoded one; any record slice is welcome, from
// NewChunk or not.
func Recycle(recs []core.Record) {
	c := cap(recs)
	if c < minChunk {
		return
	}
	k := bits.Len(uint(c)) - 1 // the greatest k with 1<<k ≤ c
	if k >= len(chunkPools) {
		return
	}
	recs = recs[:c]
	clear(recs) // no references kept alive by the pool
	chunkPools[k].Put(&recs)
}
