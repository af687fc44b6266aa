//go:build race

package integration

// raceEnabled makes the harness build the node binary with -race too.
const raceEnabled = true
