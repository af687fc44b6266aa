// Package jsoncodec compares JSON libraries on a Yahoo Streaming Benchmark
// ad event, encode and decode, for the JSON codec of sdk/codec (whose
// package doc has the figures and the choice). It is a module of its own so
// that the libraries not chosen stay out of Sluice's go.mod; run it with
//
//	cd internal/bench/jsoncodec && go test -run '^$' -bench . -count 10
//
// Besides ns/op it reports cpu-ns/op, the process's CPU time per op (every
// thread, so garbage collection too): on a loaded machine ns/op also counts
// the time spent waiting for a core, which cpu-ns/op leaves out.
package jsoncodec
