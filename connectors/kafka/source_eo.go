package kafka

import (
	"maps"

	"github.com/sluicehq/sluice/sdk"
)

// Under exactly-once (sdk.ExactlyOnce) the source is sdk.Resumable: it
// starts each partition from the position its State holds (written by
// Poll in the same attempt as the records: "kafka/pos/<topic>/<partition>"
// → next offset, 8 bytes big endian), so a restored checkpoint makes it
// produce again exactly what followed the checkpoint. A partition with no
// position in State starts from the group's committed offset, else from
// Start. The source never commits offsets as it reads: as an
// sdk.Committer it commits, after a checkpoint completes (Commit), the
// positions it had at that checkpoint's barrier (PreCommit), for
// monitoring (consumer lag) only; nothing reads them back while State has
// positions. SourceConfig.Commit and MaxUndurable do not apply.

// maxBarriers bounds the barrier positions kept for Commit; older ones
// are dropped (a later Commit commits newer positions anyway).
const maxBarriers = 64

// barrierPos is a source's position at a checkpoint's barrier.
type barrierPos struct {
	checkpoint uint64
	next       offsets
}

// ResumesFromState implements sdk.Resumable: under exactly-once (and
// CommitProduced) Poll continues from the positions in State, which it
// writes in the same attempt as the records it produces.
func (s *Source) ResumesFromState() {}

// PreCommit implements sdk.Committer: under exactly-once it remembers the
// position at the barrier of checkpoint, to commit to the consumer group
// when the checkpoint completes. The position itself is in State already.
// It does nothing under the other guarantees.
func (s *Source) PreCommit(_ sdk.Context, checkpoint uint64) error {
	if !s.eo {
		return nil
	}
	pos := s.next
	if !s.connected {
		pos = s.stored // nothing read yet: where reading will start
	}
	if len(s.barriers) == maxBarriers {
		s.barriers = s.barriers[1:]
	}
	s.barriers = append(s.barriers, barrierPos{checkpoint, maps.Clone(pos)})
	return nil
}

// Commit implements sdk.Committer: under exactly-once it commits to the
// consumer group, asynchronously, the position at the barrier of
// checkpoint (or of the latest earlier one it knows), for monitoring.
// After a restore, when it holds no barrier, it commits the restored
// positions of its partitions once it knows them (at the first Poll). It
// never fails: a failed offset commit is retried in the background and
// costs nothing but a stale lag. It does nothing under the other
// guarantees.
func (s *Source) Commit(_ sdk.Context, checkpoint uint64) error {
	if !s.eo {
		return nil
	}
	var pos offsets
	i := 0
	for ; i < len(s.barriers) && s.barriers[i].checkpoint <= checkpoint; i++ {
		pos = s.barriers[i].next
	}
	s.barriers = s.barriers[i:]
	first := !s.committed
	s.committed = true
	switch {
	case len(pos) > 0:
		s.commit.set(pos)
	case i == 0 && first && !s.connected:
		s.commitAtStart = true
	case i == 0 && first:
		// Restored, and read before this Commit: the restored positions
		// of its partitions.
		restored := make(offsets)
		for _, k := range s.assigned {
			if o, ok := s.stored[k]; ok {
				restored[k] = o
			}
		}
		if len(restored) > 0 {
			s.commit.set(restored)
		}
	}
	return nil
}
