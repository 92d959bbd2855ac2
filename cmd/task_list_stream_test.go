package cmd

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/wire"
)

// listingClient serves a listing to `task list` as the daemon client
// does: the summary route's bytes, decoded line by line (wire), from r.
// Only the listing is served; the rest of api.Client is not used.
type listingClient struct {
	api.Client
	r io.Reader
}

func (c *listingClient) ScanTaskSummaries(_ context.Context, _ api.ListTasksInput, count func(n int), fn func(*core.Task) error) error {
	return wire.ScanTaskSummaries(c.r, count, fn)
}

func summaryBytes(t testing.TB, tasks []core.Task) []byte {
	t.Helper()
	ptrs := make([]*core.Task, len(tasks))
	for i := range tasks {
		ptrs[i] = &tasks[i]
	}
	var b bytes.Buffer
	if err := wire.WriteTaskSummaries(&b, ptrs); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func runTaskList(t testing.TB, r io.Reader, all bool, limit int) (string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	f := &Factory{IO: IOStreams{Out: &out, ErrOut: &errOut}}
	f.client = &listingClient{r: r}
	opts := &TaskListOptions{F: f, Input: api.ListTasksInput{All: all}, Limit: limit}
	if err := taskListRun(context.Background(), opts); err != nil {
		t.Fatalf("task list (all %v, limit %d): %v", all, limit, err)
	}
	return out.String(), errOut.String()
}

// splitReader hands over first, then, when it is asked for more (its
// reader has used up first), calls check once before handing over rest.
type splitReader struct {
	first, rest []byte
	check       func()
	checked     bool
}

func (r *splitReader) Read(p []byte) (int, error) {
	if len(r.first) > 0 {
		n := copy(p, r.first)
		r.first = r.first[n:]
		return n, nil
	}
	if !r.checked {
		r.checked = true
		r.check()
	}
	if len(r.rest) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.rest)
	r.rest = r.rest[n:]
	return n, nil
}

// The first top-level subtree is on stdout before the listing's rest is
// read: the reader gives the first subtree and the next top-level task,
// and looks at what was written when it is asked for more.
func TestTaskListPrintsEachSubtreeBeforeReadingOn(t *testing.T) {
	task := func(id, parent string) core.Task {
		return core.Task{ID: id, ParentID: parent, Title: "t " + id, Status: core.StatusTodo, Profile: "mock"}
	}
	tasks := []core.Task{
		task("r1aaaa", ""), task("c1aaaa", "r1aaaa"), task("g1aaaa", "c1aaaa"), task("c2aaaa", "r1aaaa"),
		task("r2aaaa", ""), task("c3aaaa", "r2aaaa"),
		task("r3aaaa", ""),
	}
	b := summaryBytes(t, tasks)
	// The cut is after r2aaaa's line: the header and five lines.
	cut := 0
	for range 6 {
		cut += bytes.IndexByte(b[cut:], '\n') + 1
	}
	firstTree := "○ todo        r1aaaa t r1aaaa  [mock]\n" +
		"├─ ○ todo        c1aaaa t c1aaaa  [mock]\n" +
		"│  └─ ○ todo        g1aaaa t g1aaaa  [mock]\n" +
		"└─ ○ todo        c2aaaa t c2aaaa  [mock]\n"
	var out, errOut bytes.Buffer
	var early string
	r := &splitReader{first: b[:cut], rest: b[cut:], check: func() { early = out.String() }}
	f := &Factory{IO: IOStreams{Out: &out, ErrOut: &errOut}}
	f.client = &listingClient{r: r}
	if err := taskListRun(context.Background(), &TaskListOptions{F: f}); err != nil {
		t.Fatal(err)
	}
	if !r.checked {
		t.Fatal("the listing's rest was never asked for")
	}
	if early != firstTree {
		t.Fatalf("written before the rest of the listing was read:\n%q\nwant the first subtree:\n%q", early, firstTree)
	}
	want := firstTree +
		"○ todo        r2aaaa t r2aaaa  [mock]\n" +
		"└─ ○ todo        c3aaaa t c3aaaa  [mock]\n" +
		"○ todo        r3aaaa t r3aaaa  [mock]\n"
	if out.String() != want || errOut.String() != "" {
		t.Fatalf("stdout:\n%s\nstderr:\n%s", out.String(), errOut.String())
	}
}

// genTree makes a forest in the tree's order (ADR 0037), with every
// status, archived tasks, long ids and parents the listing leaves out.
func genTree(rng *rand.Rand, n int) []core.Task {
	statuses := []core.Status{core.StatusTodo, core.StatusInProgress, core.StatusReview, core.StatusDone, core.StatusCancelled}
	var tasks []core.Task
	var grow func(parent string, depth int)
	grow = func(parent string, depth int) {
		id := fmt.Sprintf("t%05d", len(tasks))
		if rng.IntN(10) == 0 {
			id = fmt.Sprintf("long-task-id-%05d", len(tasks))
		}
		t := core.Task{ID: id, ParentID: parent, Title: "task " + id, Status: statuses[rng.IntN(len(statuses))], Profile: "mock",
			Archived: rng.IntN(8) == 0, Autopilot: rng.IntN(4) == 0}
		tasks = append(tasks, t)
		for k := rng.IntN(4 - min(depth, 3)); k > 0 && len(tasks) < n; k-- {
			grow(id, depth+1)
		}
	}
	for len(tasks) < n {
		parent := ""
		if rng.IntN(6) == 0 {
			parent = "gone00" // a parent the listing leaves out
		}
		grow(parent, 0)
	}
	return tasks
}

// oldTaskList is `task list` as it was before it streamed: every shown row
// kept, the tree printed once the listing was read. It is the oracle the
// streaming list must match byte for byte.
func oldTaskList(tasks []core.Task, all bool, limit int) (string, string) {
	var out, errOut strings.Builder
	var tr taskTree
	hidden := map[string]int{}
	for i := range tasks {
		t := &tasks[i]
		if !all && (t.Archived || t.Status.Terminal()) {
			if t.Archived {
				hidden["archived"]++
			} else {
				hidden[string(t.Status)]++
			}
			continue
		}
		tr.add(t)
	}
	printed, _ := tr.write(&out, limit)
	switch {
	case len(tr.rows) == 0 && len(hidden) == 0:
		fmt.Fprintln(&errOut, "No tasks. Create one with: kandev task create TITLE")
	case len(tr.rows) == 0:
		fmt.Fprintln(&errOut, "No open tasks.")
	}
	if more := len(tr.rows) - printed; more > 0 {
		fmt.Fprintf(&errOut, "%d more %s not shown (--limit %d)\n", more, plural(more, "task", "tasks"), limit)
	}
	if note := hiddenNote(hidden); note != "" {
		fmt.Fprintln(&errOut, note)
	}
	return out.String(), errOut.String()
}

// subtree is the listing of --root tasks[i]: it and its descendants,
// which follow it in the tree's order.
func subtree(tasks []core.Task, i int) []core.Task {
	in := map[string]bool{tasks[i].ID: true}
	j := i + 1
	for j < len(tasks) && in[tasks[j].ParentID] {
		in[tasks[j].ID] = true
		j++
	}
	return tasks[i:j]
}

// The streaming list prints what the whole-tree list printed, stdout and
// stderr, with and without --all, under --limit and --root, hidden
// parents included.
func TestTaskListStreamsTheSameBytes(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 35))
	for round := range 40 {
		tasks := genTree(rng, 1+rng.IntN(400))
		listings := [][]core.Task{tasks, nil, subtree(tasks, rng.IntN(len(tasks)))}
		// A root with descendants, when there is one.
		for i := range tasks {
			if i+1 < len(tasks) && tasks[i+1].ParentID == tasks[i].ID {
				listings = append(listings, subtree(tasks, i))
				break
			}
		}
		for li, listing := range listings {
			b := summaryBytes(t, listing)
			for _, all := range []bool{false, true} {
				for _, limit := range []int{0, 1, 2, 3, 7, 50, len(listing), len(listing) + 1, rng.IntN(len(listing) + 1)} {
					out, errOut := runTaskList(t, bytes.NewReader(b), all, limit)
					wantOut, wantErr := oldTaskList(listing, all, limit)
					if out != wantOut || errOut != wantErr {
						t.Fatalf("round %d listing %d (%d tasks), all %v, limit %d:\nstdout:\n%s\nwant:\n%s\nstderr:\n%s\nwant:\n%s",
							round, li, len(listing), all, limit, out, wantOut, errOut, wantErr)
					}
				}
			}
		}
	}
}

// BenchmarkTaskListText: `task list` over a generated 100,000-task
// summary body, the client's share (decode, render, print).
func BenchmarkTaskListText(b *testing.B) {
	body := summaryBytes(b, genTree(rand.New(rand.NewPCG(1, 2)), 100_000))
	for _, all := range []bool{false, true} {
		b.Run(fmt.Sprintf("all=%v", all), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				runTaskList(b, bytes.NewReader(body), all, 0)
			}
		})
	}
}
