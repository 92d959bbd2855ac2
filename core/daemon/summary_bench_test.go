package daemon

import (
	"bytes"
	"encoding/json"
	"io"
	"testing"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/wire"
)

// The tree's listing at 100,000 tasks, both sides: the daemon writing
// summaries, the client reading them; and, for comparison, the client
// decoding the JSON listing it used to read.

func benchPtrs(n int) []*core.Task {
	tasks := benchTasks(n)
	ptrs := make([]*core.Task, n)
	for i := range tasks {
		ptrs[i] = &tasks[i]
	}
	return ptrs
}

func BenchmarkWriteTaskSummaries100k(b *testing.B) {
	ptrs := benchPtrs(100_000)
	b.ReportAllocs()
	for b.Loop() {
		if err := wire.WriteTaskSummaries(io.Discard, ptrs); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReadTaskSummaries100k(b *testing.B) {
	var buf bytes.Buffer
	if err := wire.WriteTaskSummaries(&buf, benchPtrs(100_000)); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(buf.Len()))
	b.ReportAllocs()
	for b.Loop() {
		ts, err := wire.ReadTaskSummaries(bytes.NewReader(buf.Bytes()), 0, nil)
		if err != nil || len(ts) != 100_000 {
			b.Fatalf("%d tasks, %v", len(ts), err)
		}
	}
}

func BenchmarkDecodeTaskJSON100k(b *testing.B) {
	var buf bytes.Buffer
	if err := writeTaskPtrs(&buf, benchPtrs(100_000)); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(buf.Len()))
	b.ReportAllocs()
	for b.Loop() {
		var ts []core.Task
		if err := json.NewDecoder(bytes.NewReader(buf.Bytes())).Decode(&ts); err != nil || len(ts) != 100_000 {
			b.Fatalf("%d tasks, %v", len(ts), err)
		}
	}
}
