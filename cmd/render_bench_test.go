package cmd

import (
	"bytes"
	"io"
	"os"
	"testing"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/wire"
)

// BenchmarkTaskTreeFromSummary: decoding a summary body into tree rows and
// printing the tree, the client's share of the text task list.
// KANDEV_SUMMARY_BODY names a captured /v1/task-summaries body.
func BenchmarkTaskTreeFromSummary(b *testing.B) {
	path := os.Getenv("KANDEV_SUMMARY_BODY")
	if path == "" {
		b.Skip("KANDEV_SUMMARY_BODY not set")
	}
	body, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		var tr taskTree
		if err := wire.ScanTaskSummaries(bytes.NewReader(body), tr.grow, func(t *core.Task) error { tr.add(t); return nil }); err != nil {
			b.Fatal(err)
		}
		if _, err := tr.write(io.Discard, 0); err != nil {
			b.Fatal(err)
		}
	}
}
