//go:build race

package actors_test

// raceEnabled scales the heaviest tests down under the race detector.
const raceEnabled = true
