// Package latest is the latest-wins delivery shared by the topology
// stores and the guard: a one-slot channel whose sender never blocks and
// whose reader, however late, gets the newest value.
package latest

// Publish puts v in ch, a channel of capacity 1, replacing a value the
// reader has not taken yet. It never blocks as long as ch has a capacity of
// 1 and Publish is its only sender (the readers only receive).
func Publish[T any](ch chan T, v T) {
	for {
		select {
		case ch <- v:
			return
		default:
		}
		select {
		case <-ch:
		default:
		}
	}
}
