//go:build !race

package actors_test

const raceEnabled = false
