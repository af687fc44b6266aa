package main

import (
	"fmt"
	"os"
)

// harness implements consultest.TB for a program: Fatal panics with a
// fatal value that run turns into an error, and cleanups run on close.
type harness struct {
	cleanups []func()
	dirs     []string
	failed   bool
}

// fatal is the panic value of harness.Fatal.
type fatal string

func (f fatal) Error() string { return string(f) }

func (h *harness) Helper()                 {}
func (h *harness) Cleanup(f func())        { h.cleanups = append(h.cleanups, f) }
func (h *harness) Logf(f string, a ...any) { fmt.Fprintf(os.Stderr, f+"\n", a...) }
func (h *harness) Failed() bool            { return h.failed }
func (h *harness) Fatal(a ...any)          { h.failed = true; panic(fatal(fmt.Sprint(a...))) }
func (h *harness) Fatalf(f string, a ...any) {
	h.failed = true
	panic(fatal(fmt.Sprintf(f, a...)))
}

// TempDir returns a new temporary directory removed on close.
func (h *harness) TempDir() string {
	d, err := os.MkdirTemp("", "sluice-bench-")
	if err != nil {
		h.Fatal(err)
	}
	h.dirs = append(h.dirs, d)
	return d
}

// close runs the cleanups in reverse order and removes the directories.
func (h *harness) close() {
	for i := len(h.cleanups) - 1; i >= 0; i-- {
		h.cleanups[i]()
	}
	for _, d := range h.dirs {
		_ = os.RemoveAll(d)
	}
}
