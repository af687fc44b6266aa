//go:build !race

package mesos_test

const raceEnabled = false
