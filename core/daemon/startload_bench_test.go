package daemon_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/daemon"
	"github.com/kandev/kandev/core/daemon/daemontest"
)

// BenchmarkDaemonStart100k is the daemon's start over 100,000 tasks, in
// process, from opening the store to the socket answering: the store's
// open, the engine's load and the recovery pass. The whole process, the
// real binary included, is kandev-bench's "daemon start to ready".
func BenchmarkDaemonStart100k(b *testing.B) {
	dir, err := os.MkdirTemp("", "kd-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	if _, err := daemontest.SeedTasks(filepath.Join(dir, "kandev.db"), 100_000); err != nil {
		b.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for b.Loop() {
		ctx, cancel := context.WithCancel(context.Background())
		// Ready ends the daemon as soon as it listens.
		err := daemon.Serve(ctx, daemon.ServeOptions{Home: core.Home{Dir: dir}, Logger: log, NoResume: true, Ready: cancel})
		cancel()
		if err != nil {
			b.Fatal(err)
		}
	}
}
