package daemon

import (
	"encoding/json"
	"io"
	"testing"
	"time"

	"github.com/kandev/kandev/core"
)

// benchTasks is a listing shaped like the CLI load benchmark's: plain
// text, one task in a hundred with a session.
func benchTasks(n int) []core.Task {
	at := time.Date(2026, 3, 4, 5, 6, 7, 891234567, time.UTC)
	tasks := make([]core.Task, n)
	for i := range tasks {
		t := core.Task{ID: "k3f9qa", Title: "Task 12345: split the auth module into token and session parts",
			ParentID: "p4rent", Status: core.StatusInProgress, Autopilot: i%3 == 0, Profile: "claude",
			CWD: "/home/user/src/project", CreatedBy: core.ParseBy("person:operator"), CreatedAt: at, UpdatedAt: at,
			Assignee: &core.Ref{Kind: "role", Name: "claude"}}
		if i%4 == 0 {
			t.Description = "Keep the public API; move parsing into its own file and add \"tests\" for it.\nSecond line."
		}
		if i%100 == 0 {
			t.Session = &core.SessionInfo{ID: "s1", TaskID: t.ID, Profile: "claude", State: core.SessionCompleted, Turns: 3,
				CreatedAt: at, UpdatedAt: at}
		}
		tasks[i] = t
	}
	return tasks
}

// BenchmarkWriteTaskArray is the daemon's side of `task list --json` for
// 10,000 tasks (the hand-rolled encoder).
func BenchmarkWriteTaskArray(b *testing.B) {
	tasks := benchTasks(10_000)
	for b.Loop() {
		if err := writeTaskArray(io.Discard, tasks); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(tasks)), "ns/task")
}

// BenchmarkWriteTaskArrayEncodingJSON is the same listing through
// encoding/json, for comparison.
func BenchmarkWriteTaskArrayEncodingJSON(b *testing.B) {
	tasks := benchTasks(10_000)
	for b.Loop() {
		for i := range tasks {
			if _, err := json.Marshal(tasks[i]); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(tasks)), "ns/task")
}
