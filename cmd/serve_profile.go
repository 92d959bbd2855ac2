package cmd

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
)

// profileEnv names a path prefix for the daemon's profiles, for
// benchmarking only (undocumented on purpose): set, `serve` writes a CPU
// profile to PREFIX.<pid>.cpu while it runs and a heap profile to
// PREFIX.<pid>.heap when it stops. The pid keeps the daemons of one bench
// run apart.
const profileEnv = "KANDEV_PPROF"

// startProfiles starts what profileEnv asks for and returns what ends it.
func startProfiles() (stop func()) {
	prefix := os.Getenv(profileEnv)
	if prefix == "" {
		return func() {}
	}
	base := fmt.Sprintf("%s.%d", prefix, os.Getpid())
	cpu, err := os.Create(base + ".cpu")
	if err != nil {
		return func() {}
	}
	if err := pprof.StartCPUProfile(cpu); err != nil {
		cpu.Close()
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		cpu.Close()
		if heap, err := os.Create(base + ".heap"); err == nil {
			runtime.GC()
			_ = pprof.WriteHeapProfile(heap)
			heap.Close()
		}
	}
}
