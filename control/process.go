package control

import (
	"runtime"
	"runtime/metrics"
	"syscall"
	"time"

	"github.com/sluicehq/sluice/control/api"
)

// processMetrics are the runtime metrics processStats reads (cheaper than
// runtime.ReadMemStats, which stops the world).
var processMetrics = []string{"/memory/classes/heap/objects:bytes", "/memory/classes/total:bytes", "/sched/goroutines:goroutines"}

// processStats returns this process's resource use.
func processStats() *api.ProcessStats {
	ps := &api.ProcessStats{CPUs: runtime.NumCPU()}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		ps.CPUSeconds = (time.Duration(ru.Utime.Nano()) + time.Duration(ru.Stime.Nano())).Seconds()
	}
	samples := make([]metrics.Sample, len(processMetrics))
	for i, name := range processMetrics {
		samples[i].Name = name
	}
	metrics.Read(samples)
	if samples[0].Value.Kind() == metrics.KindUint64 {
		ps.HeapBytes = samples[0].Value.Uint64()
	}
	if samples[1].Value.Kind() == metrics.KindUint64 {
		ps.SysBytes = samples[1].Value.Uint64()
	}
	if samples[2].Value.Kind() == metrics.KindUint64 {
		ps.Goroutines = int(samples[2].Value.Uint64())
	}
	return ps
}
