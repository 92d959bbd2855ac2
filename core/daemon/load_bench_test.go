package daemon_test

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/daemon/daemontest"
)

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// BenchmarkConcurrentSessions drives N concurrent mock sessions doing M
// short turns each through a real daemon and reports turns/s, event
// delivery latency (publish in the daemon → receipt by an SSE subscriber)
// and the daemon's peak RSS. N and M: KANDEV_BENCH_SESSIONS (200) and
// KANDEV_BENCH_TURNS (5).
func BenchmarkConcurrentSessions(b *testing.B) {
	n := envInt("KANDEV_BENCH_SESSIONS", 200)
	m := envInt("KANDEV_BENCH_TURNS", 5)
	for i := 0; i < b.N; i++ {
		runLoad(b, n, m)
	}
}

func runLoad(b *testing.B, n, m int) {
	b.StopTimer()
	d := daemontest.Start(b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events, err := d.Client.Events(ctx, api.EventsInput{})
	if err != nil {
		b.Fatal(err)
	}
	var mu sync.Mutex
	var lat []time.Duration
	turnsDone := 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range events {
			l := time.Since(ev.At)
			mu.Lock()
			lat = append(lat, l)
			if ev.Type == core.EventMessageAdded && ev.Message != nil && ev.Message.Kind == core.MsgTurnEnd {
				turnsDone++
			}
			mu.Unlock()
		}
	}()
	cwd := b.TempDir()
	b.StartTimer()
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	sem := make(chan struct{}, 16) // creating clients, not sessions
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			t, err := d.Client.CreateTask(ctx, api.CreateTaskInput{Title: fmt.Sprintf("load %d", i), CWD: cwd,
				Prompt: "mock: say turn 1", Start: true})
			if err != nil {
				errs <- err
				return
			}
			for j := 2; j <= m; j++ {
				if _, err := d.Client.MessageTask(ctx, t.ID, api.MessageInput{Text: "mock: say turn " + strconv.Itoa(j)}); err != nil {
					errs <- err
					return
				}
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	want := n * m
	deadline := time.Now().Add(10 * time.Minute)
	for {
		mu.Lock()
		got := turnsDone
		mu.Unlock()
		if got >= want {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("only %d of %d turns ended", got, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	rss := peakRSS(d.PID())
	cancel()
	<-done
	mu.Lock()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	p := func(q float64) float64 {
		if len(lat) == 0 {
			return 0
		}
		return float64(lat[int(q*float64(len(lat)-1))]) / float64(time.Millisecond)
	}
	b.ReportMetric(float64(want)/elapsed.Seconds(), "turns/s")
	b.ReportMetric(p(0.50), "event-p50-ms")
	b.ReportMetric(p(0.99), "event-p99-ms")
	b.ReportMetric(float64(rss)/1024, "daemon-peak-rss-MB")
	b.ReportMetric(float64(len(lat)), "events")
	b.Logf("%d sessions × %d turns: %d turns in %s (%.0f turns/s); %d events, delivery p50 %.2f ms p99 %.2f ms; daemon peak RSS %.1f MB",
		n, m, want, elapsed.Round(time.Millisecond), float64(want)/elapsed.Seconds(), len(lat), p(0.5), p(0.99), float64(rss)/1024)
	mu.Unlock()
}

// peakRSS reads a process's high-water resident set (VmHWM) in KiB.
func peakRSS(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			f := strings.Fields(line)
			if len(f) >= 2 {
				v, _ := strconv.Atoi(f[1])
				return v
			}
		}
	}
	return 0
}
