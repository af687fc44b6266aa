package flow

import (
	"testing"

	"github.com/sluicehq/sluice/internal/core"
)

// TestChunksFollowTheBatchesThatLeave: a chunk is allocated for about
// what the last batch held, grows past that when more records come, never
// splits a batch below size, and a recycled array is cleared before any
// reuse.
func TestChunksFollowTheBatchesThatLeave(t *testing.T) {
	b := recBuf{size: 256}
	b.Add(core.Record{Key: []byte("a")})
	recs, _ := b.Take()
	if len(recs) != 1 || cap(recs) != minChunk {
		t.Fatalf("first chunk: len %d cap %d, want 1 and %d", len(recs), cap(recs), minChunk)
	}
	for range 100 { // more than the chunk was made for: it grows
		b.Add(core.Record{Key: []byte("b")})
	}
	if b.Chunks() != 1 {
		t.Fatalf("%d chunks for 100 records of a 256-record batch, want 1", b.Chunks())
	}
	recs, _ = b.Take()
	if len(recs) != 100 {
		t.Fatalf("took %d records, want 100", len(recs))
	}
	b.Add(core.Record{})
	if c := cap(b.chunks[0].recs); c < 200 || c > 256 {
		t.Fatalf("chunk after a batch of 100: cap %d, want 200..256", c)
	}
	for range 600 {
		b.Add(core.Record{})
	}
	if b.Chunks() != 3 || len(b.chunks[0].recs) != 256 || len(b.chunks[1].recs) != 256 {
		t.Fatalf("601 records: %d chunks, want full chunks of 256 then the rest", b.Chunks())
	}

	Recycle(recs)
	for j, r := range recs[:cap(recs)] {
		if r.Key != nil {
			t.Fatalf("recycled record %d still holds its key %q", j, r.Key)
		}
	}
	for _, n := range []int{-1, 0, 1, 16, 17, 100, 256, 1000, 1 << 16, 1<<16 + 1, 1 << 20} {
		if c := NewChunk(n); len(c) != 0 || cap(c) < max(n, 1) {
			t.Fatalf("NewChunk(%d): len %d cap %d", n, len(c), cap(c))
		}
	}
	Recycle(make([]core.Record, 3))        // too small to keep: ignored
	Recycle(make([]core.Record, 0, 1<<20)) // too large to keep: ignored
}
