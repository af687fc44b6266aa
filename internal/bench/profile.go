package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
)

// profiler writes a CPU and an allocation profile of each scenario run to
// dir (nothing when dir is empty): <scenario>-<run>.cpu.pprof and
// <scenario>-<run>.allocs.pprof, the latter with the allocations of the
// run alone when read with its base (-base <scenario>-<run>.allocs-base.pprof).
// Scenarios run in node processes (cross-node) get their nodes' profiles
// instead, through nodeFlags.
type profiler struct{ dir string }

// slug turns a scenario name into a file name.
func slug(name string) string {
	var b strings.Builder
	dash := false
	for _, c := range strings.ToLower(name) {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
			b.WriteRune(c)
			dash = false
		case !dash && b.Len() > 0:
			b.WriteByte('-')
			dash = true
		}
	}
	return strings.TrimSuffix(b.String(), "-")
}

// path returns the file of kind ("cpu", "allocs", …) for run i of name.
func (p profiler) path(name string, i int, kind string) string {
	return filepath.Join(p.dir, fmt.Sprintf("%s-%d.%s.pprof", slug(name), i+1, kind))
}

// run runs fn, run i of scenario name, profiling this process.
func (p profiler) run(name string, i int, fn func() (Result, error)) (Result, error) {
	if p.dir == "" {
		return fn()
	}
	if err := p.writeHeap(p.path(name, i, "allocs-base")); err != nil {
		return Result{}, err
	}
	f, err := os.Create(p.path(name, i, "cpu"))
	if err != nil {
		return Result{}, fmt.Errorf("bench: profile: %w", err)
	}
	defer f.Close()
	if err := pprof.StartCPUProfile(f); err != nil {
		return Result{}, fmt.Errorf("bench: profile: %w", err)
	}
	r, err := fn()
	pprof.StopCPUProfile()
	if err != nil {
		return r, err
	}
	return r, p.writeHeap(p.path(name, i, "allocs"))
}

// nodeFlags returns the flags that make node id of run i of name write
// its CPU and allocation profiles when it stops (nil without a dir).
func (p profiler) nodeFlags(name string, i int, id string) []string {
	if p.dir == "" {
		return nil
	}
	return []string{"-cpuprofile", p.path(name, i, id+".cpu"), "-memprofile", p.path(name, i, id+".allocs")}
}

// writeHeap writes the allocation profile to path.
func (p profiler) writeHeap(path string) error {
	runtime.GC() // up-to-date statistics
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("bench: profile: %w", err)
	}
	defer f.Close()
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		return fmt.Errorf("bench: profile %s: %w", path, err)
	}
	return nil
}
