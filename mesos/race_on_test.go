//go:build race

package mesos_test

// raceEnabled makes TestMain build the binaries with -race too.
const raceEnabled = true
