package placement

import "github.com/cespare/xxhash/v2"

// KeyGroup maps a record key to one of groups key groups. groups must be ≥ 1.
// The mapping never changes for a given key and group count.
func KeyGroup(key []byte, groups int) int {
	return int(xxhash.Sum64(key) % uint64(groups))
}

// KeyGroupString is KeyGroup for a string key, without converting it.
func KeyGroupString(key string, groups int) int {
	return int(xxhash.Sum64String(key) % uint64(groups))
}

// InstanceFor returns the index of the instance that owns key group kg when
// groups key groups are spread over parallelism instances in contiguous
// ranges. It is the inverse of GroupRange.
func InstanceFor(kg, groups, parallelism int) int {
	return kg * parallelism / groups
}

// GroupRange returns the half-open range [lo, hi) of key groups owned by
// instance index of an operator with the given parallelism. Ranges of
// consecutive instances are adjacent and together cover [0, groups). When
// parallelism exceeds groups some instances own an empty range.
func GroupRange(index, groups, parallelism int) (lo, hi int) {
	lo = (index*groups + parallelism - 1) / parallelism
	hi = ((index+1)*groups + parallelism - 1) / parallelism
	return lo, hi
}
