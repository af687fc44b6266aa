// Package snapshot holds the membership-snapshot plumbing shared by the
// Discovery backends: canonical ordering, comparison and latest-wins
// delivery on a one-slot channel.
package snapshot

import (
	"reflect"
	"slices"
	"strings"

	"github.com/sluicehq/sluice/cluster"
)

// Make returns a new snapshot of members: each normalized (a deep copy),
// sorted by ID. It never returns nil, so an empty membership is an empty,
// non-nil slice.
func Make(members []cluster.Member) []cluster.Member {
	out := make([]cluster.Member, 0, len(members))
	for _, m := range members {
		out = append(out, m.Normalize())
	}
	slices.SortFunc(out, func(a, b cluster.Member) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// Clone returns a deep copy of a snapshot built by Make.
func Clone(s []cluster.Member) []cluster.Member {
	out := make([]cluster.Member, len(s))
	for i, m := range s {
		out[i] = m.Normalize()
	}
	return out
}

// Equal reports whether two snapshots built by Make hold the same members.
func Equal(a, b []cluster.Member) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !reflect.DeepEqual(a[i], b[i]) {
			return false
		}
	}
	return true
}

// New returns a channel for Publish: one slot, so the backend never blocks
// on a slow reader.
func New() chan []cluster.Member { return make(chan []cluster.Member, 1) }

// Publish puts a copy of s on ch, replacing the snapshot still waiting
// there, if any. It never blocks, provided it is called only by ch's single
// sender (the caller's goroutine or lock must make it so): after the
// non-blocking drain the slot is empty, since readers only take from it.
func Publish(ch chan []cluster.Member, s []cluster.Member) {
	select {
	case <-ch:
	default:
	}
	ch <- Clone(s)
}
