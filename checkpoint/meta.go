package checkpoint

import (
	"errors"
	"fmt"
	"time"
)

// Errors of this package.
var (
	// ErrNotFound is returned for a checkpoint that does not exist or is
	// not complete.
	ErrNotFound = errors.New("checkpoint: no such complete checkpoint")
	// ErrNoGroups is returned when no node of a checkpoint covered key
	// groups that a restore asks for.
	ErrNoGroups = errors.New("checkpoint: key groups not in the checkpoint")
)

// Meta describes one complete checkpoint.
type Meta struct {
	ID uint64 `json:"id"`
	// Savepoint marks a checkpoint taken on request (sluice checkpoint),
	// rather than by the interval.
	Savepoint bool `json:"savepoint,omitempty"`
	// Started is when the coordinator triggered it; Completed when every
	// node had uploaded its part.
	Started   time.Time `json:"started"`
	Completed time.Time `json:"completed"`
	// TopologyVersion is the topology every node ran when it took its part.
	TopologyVersion int64 `json:"topologyVersion"`
	// Generation is the rollback generation every node ran in when it took
	// its part (see Store.Restorable).
	Generation uint64 `json:"generation,omitempty"`
	// Nodes holds each node's part.
	Nodes []NodePart `json:"nodes"`
}

// Duration returns how long the checkpoint took.
func (m Meta) Duration() time.Duration { return m.Completed.Sub(m.Started) }

// Uploaded returns the bytes this checkpoint sent to the store.
func (m Meta) Uploaded() int64 {
	var n int64
	for _, p := range m.Nodes {
		n += p.Uploaded
	}
	return n
}

// Size returns the bytes of every file the checkpoint references.
func (m Meta) Size() int64 {
	var n int64
	for _, p := range m.Nodes {
		for _, f := range p.Files {
			n += f.Size
		}
	}
	return n
}

// Find returns the nodes' groups of operator op overlapping key groups
// [first, end), each clipped to them.
func (m Meta) Find(op string, first, end int) []Located {
	var out []Located
	for _, p := range m.Nodes {
		for _, g := range p.Groups {
			if g.Operator != op || g.End <= first || end <= g.First {
				continue
			}
			c := g
			c.First, c.End = max(g.First, first), min(g.End, end)
			out = append(out, Located{Node: p.Node, Groups: c})
		}
	}
	return out
}

// Covers reports whether the checkpoint holds every key group of
// [first, end) of op.
func (m Meta) Covers(op string, first, end int) bool {
	covered := make([]bool, end-first)
	for _, l := range m.Find(op, first, end) {
		for g := l.Groups.First; g < l.Groups.End; g++ {
			covered[g-first] = true
		}
	}
	for _, c := range covered {
		if !c {
			return false
		}
	}
	return true
}

// Located is key groups held by one node's part.
type Located struct {
	Node   string
	Groups Groups
}

// NodePart is one node's part of a checkpoint: a copy of its database
// restricted to Groups.
type NodePart struct {
	Node string `json:"node"`
	// DB names the node's database (shared files live under sst/<DB>/).
	DB string `json:"db"`
	// Files are the files of the copy.
	Files []File `json:"files"`
	// Groups are the key groups the copy covers, by instance.
	Groups []Groups `json:"groups"`
	// Uploaded is what this part sent to the store (files already there
	// excluded).
	Uploaded int64 `json:"uploaded"`
	// Phases times the part on its node (absent from checkpoints of
	// versions that did not record it).
	Phases *Phases `json:"phases,omitempty"`
}

// Phases is where the time of a node's part of a checkpoint went: each is
// measured on the node from when the coordinator's trigger reached it, and
// each includes the ones before.
type Phases struct {
	// Injected is when every instance the trigger snapshots directly (the
	// sources, and operators fed from outside) had snapshotted and sent
	// its barriers.
	Injected time.Duration `json:"injected"`
	// Snapshotted is when every local instance had: the barriers had
	// reached each on every input edge.
	Snapshotted time.Duration `json:"snapshotted"`
	// Copied is when the node had copied its database (a Pebble
	// checkpoint of the instances' key groups).
	Copied time.Duration `json:"copied"`
	// Uploaded is when the copy was in the store.
	Uploaded time.Duration `json:"uploaded"`
}

// File is one file of a node's part.
type File struct {
	Name string `json:"name"`
	Size int64  `json:"size"`
	// Shared marks an immutable table or blob file, stored once per
	// database under sst/<DB>/ and referenced by every checkpoint with it.
	Shared bool `json:"shared,omitempty"`
}

// Groups is the key groups [First, End) of one operator instance.
type Groups struct {
	Operator string `json:"operator"`
	Epoch    int64  `json:"epoch"`
	Index    int    `json:"index"`
	First    int    `json:"first"`
	End      int    `json:"end"`
	// StateBytes estimates the size of the instance's state then.
	StateBytes int64 `json:"stateBytes,omitempty"`
}

func (g Groups) String() string {
	return fmt.Sprintf("%s/%d.%d [%d,%d)", g.Operator, g.Epoch, g.Index, g.First, g.End)
}
