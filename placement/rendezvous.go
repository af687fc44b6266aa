package placement

import (
	"encoding/binary"
	"slices"
	"strconv"

	"github.com/cespare/xxhash/v2"
)

// Node is a cluster member as placement sees it: an id and the operator kinds
// it can host.
type Node struct {
	ID    string
	Kinds []string
}

// hosts reports whether n can host kind.
func (n Node) hosts(kind string) bool {
	return slices.Contains(n.Kinds, kind)
}

// Instance identifies one operator instance: the operator's name, its kind
// (which nodes can host it) and its index.
type Instance struct {
	Operator string
	Kind     string
	Index    int
}

// String returns "operator/index".
func (i Instance) String() string {
	return i.Operator + "/" + strconv.Itoa(i.Index)
}

// Owner returns the node that hosts inst among nodes by rendezvous hashing:
// of the nodes that host inst.Kind, the one with the highest score of
// hash(node, operator, index) wins. ok is false when no node hosts the kind.
// The answer depends only on the set of nodes, not on their order.
func Owner(inst Instance, nodes []Node) (id string, ok bool) {
	var best uint64
	for _, n := range nodes {
		if !n.hosts(inst.Kind) {
			continue
		}
		s := score(n.ID, inst.Operator, inst.Index)
		// Ties (astronomically rare) go to the smaller id so the result
		// stays independent of input order.
		if !ok || s > best || (s == best && n.ID < id) {
			best, id, ok = s, n.ID, true
		}
	}
	return id, ok
}

// Assign places every instance in insts on a node and returns the owner of
// each instance keyed by Instance. Instances whose kind no node hosts are
// absent from the result.
func Assign(insts []Instance, nodes []Node) map[Instance]string {
	out := make(map[Instance]string, len(insts))
	for _, inst := range insts {
		if id, ok := Owner(inst, nodes); ok {
			out[inst] = id
		}
	}
	return out
}

// score hashes (node, operator, index) to a 64-bit weight.
func score(node, operator string, index int) uint64 {
	var d xxhash.Digest
	d.Reset()
	_, _ = d.WriteString(node)
	_, _ = d.Write([]byte{0})
	_, _ = d.WriteString(operator)
	var b [9]byte
	b[0] = 0
	binary.BigEndian.PutUint64(b[1:], uint64(index))
	_, _ = d.Write(b[:])
	return mix(d.Sum64())
}

// mix is a 64-bit finaliser (from SplitMix64) that spreads the xxhash output
// so that scores of similar inputs are independent.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
