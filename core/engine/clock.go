package engine

import (
	"os"
	"strings"
	"sync"
	"time"
)

// Clock is the time the engine's spend limits count windows by (ADR
// 0077): Now, and At, which runs f once Now reaches t (stop cancels it).
// The default is the wall clock; tests inject one they move (FileClock).
type Clock interface {
	Now() time.Time
	At(t time.Time, f func()) (stop func())
}

// wallClock is the real time.
type wallClock struct{}

func (wallClock) Now() time.Time { return time.Now() }

func (wallClock) At(t time.Time, f func()) func() {
	tm := time.AfterFunc(time.Until(t), f)
	return func() { tm.Stop() }
}

// ClockFileEnv names a file whose content (RFC 3339) is the daemon's time
// for spend limits: test only (docs/usage.md), so a test moves a day on
// by writing the file. An unreadable file reads as the wall clock.
const ClockFileEnv = "KANDEV_TEST_CLOCK"

// FileClock is a Clock read from a file at every Now (ClockFileEnv): At
// looks again every 20ms, so a test that writes a later time sees what
// waited on it run.
type FileClock struct {
	Path string

	mu   sync.Mutex
	last time.Time
}

// Now implements Clock.
func (c *FileClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, err := os.ReadFile(c.Path)
	if err == nil {
		if t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(string(b))); err == nil {
			c.last = t
			return t
		}
	}
	if !c.last.IsZero() {
		return c.last
	}
	return time.Now()
}

// At implements Clock.
func (c *FileClock) At(t time.Time, f func()) func() {
	done := make(chan struct{})
	var once sync.Once
	go func() {
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			if !c.Now().Before(t) {
				f()
				return
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return func() { once.Do(func() { close(done) }) }
}
