//go:build unix

package telemetry

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"syscall"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/semconv/v1.43.0/processconv"
)

// registerProcess adds the process's CPU time (process.cpu.time, by
// cpu.mode user and system, from getrusage) and resident memory
// (process.memory.usage, from /proc/self/statm where there is one).
func registerProcess(meter metric.Meter) error {
	cpu, err := processconv.NewCPUTime(meter)
	if err != nil {
		return fmt.Errorf("telemetry: process.cpu.time: %w", err)
	}
	mem, err := processconv.NewMemoryUsageObservable(meter)
	if err != nil {
		return fmt.Errorf("telemetry: process.memory.usage: %w", err)
	}
	user := metric.WithAttributeSet(attribute.NewSet(cpu.AttrCPUMode(processconv.CPUModeUser)))
	system := metric.WithAttributeSet(attribute.NewSet(cpu.AttrCPUMode(processconv.CPUModeSystem)))
	page := int64(os.Getpagesize())
	_, err = meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err == nil {
			o.ObserveFloat64(cpu.Inst(), float64(ru.Utime.Nano())/1e9, user)
			o.ObserveFloat64(cpu.Inst(), float64(ru.Stime.Nano())/1e9, system)
		}
		if rss, ok := residentPages(); ok {
			o.ObserveInt64(mem.Inst(), rss*page)
		}
		return nil
	}, cpu.Inst(), mem.Inst())
	if err != nil {
		return fmt.Errorf("telemetry: register process callback: %w", err)
	}
	return nil
}

// residentPages reads the resident set size, in pages, from
// /proc/self/statm (Linux); false where there is no such file.
func residentPages() (int64, bool) {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0, false
	}
	f := bytes.Fields(b)
	if len(f) < 2 {
		return 0, false
	}
	n, err := strconv.ParseInt(string(f[1]), 10, 64)
	return n, err == nil
}
