package daemon

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/wire"
)

// summaryOf is the part of t a summary carries: the row's fields, the
// session's state and times, and the pending question, stall and
// blockers as their JSON round trip gives them. Times come back in UTC.
func summaryOf(t testing.TB, in core.Task) core.Task {
	t.Helper()
	utc := func(at time.Time) time.Time {
		if at.IsZero() {
			return time.Time{}
		}
		return at.UTC()
	}
	viaJSON := func(v, out any) {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatal(err)
		}
	}
	out := core.Task{ID: in.ID, ParentID: in.ParentID, Title: in.Title, Status: in.Status, Autopilot: in.Autopilot,
		Profile: in.Profile, UpdatedAt: utc(in.UpdatedAt), Archived: in.Archived, Halted: in.Halted,
		TitlePending: in.TitlePending, Queued: in.Queued, Waiting: in.Waiting, YourTurn: in.YourTurn, Interrupted: in.Interrupted}
	// The summary has no stage column: its reader derives the stage,
	// which must be the daemon's (a task made in a test has none yet).
	out.Stage = in.Stage
	if out.Stage == "" {
		out.Stage = core.StageOf(&in)
	}
	if in.Assignee != nil {
		a := *in.Assignee
		out.Assignee = &a
	}
	if in.HandedBy != nil {
		a := *in.HandedBy
		out.HandedBy = &a
	}
	if s := in.Session; s != nil {
		out.Session = &core.SessionInfo{ID: s.ID, TaskID: in.ID, Role: s.Role, State: s.State,
			CreatedAt: utc(s.CreatedAt), UpdatedAt: utc(s.UpdatedAt), TurnStartedAt: utc(s.TurnStartedAt)}
	}
	if in.PendingQuestion != nil {
		out.PendingQuestion = new(core.QuestionInfo)
		viaJSON(in.PendingQuestion, out.PendingQuestion)
	}
	if in.Stalled != nil {
		out.Stalled = new(core.Stall)
		viaJSON(in.Stalled, out.Stalled)
	}
	if in.Usage != nil {
		// The engine keeps only three-letter currencies; the summary drops
		// one holding its separators.
		u := *in.Usage
		for _, c := range []*string{&u.Own.Currency, &u.Tree.Currency} {
			if strings.ContainsAny(*c, ",; \t\n\r\\") {
				*c = ""
			}
		}
		out.Usage = &u
	}
	if in.Budget != nil {
		out.Budget = new(core.BudgetInfo)
		viaJSON(in.Budget, out.Budget)
	}
	if len(in.BlockedBy) > 0 {
		viaJSON(in.BlockedBy, &out.BlockedBy)
	}
	return out
}

func roundTripSummaries(t *testing.T, tasks []core.Task) []core.Task {
	t.Helper()
	ptrs := make([]*core.Task, len(tasks))
	for i := range tasks {
		ptrs[i] = &tasks[i]
	}
	var buf bytes.Buffer
	if err := wire.WriteTaskSummaries(&buf, ptrs); err != nil {
		t.Fatal(err)
	}
	got, err := wire.ReadTaskSummaries(&buf, 0, nil)
	if err != nil {
		t.Fatalf("read back: %v", err)
	}
	if len(got) != len(tasks) {
		t.Fatalf("read back %d tasks, wrote %d", len(got), len(tasks))
	}
	return got
}

// TestTaskSummaryRoundTrip: every field a summary carries comes back as
// it was, whatever bytes its strings hold (tabs, newlines, backslashes,
// invalid UTF-8) and whatever its times (zero, far past or future, any
// zone).
func TestTaskSummaryRoundTrip(t *testing.T) {
	var tasks []core.Task
	for _, tt := range trickyTasks() {
		if marshals(tt) {
			tasks = append(tasks, tt)
		}
	}
	rng := rand.New(rand.NewPCG(7, 11))
	for len(tasks) < 2000 {
		// A task encoding/json refuses (a zone of 24 h) is refused by
		// every listing; TestWriteTaskArrayRefusesWhatMarshalRefuses.
		if rt := randomTask(rng); marshals(rt) {
			tasks = append(tasks, rt)
		}
	}
	got := roundTripSummaries(t, tasks)
	for i := range tasks {
		want := summaryOf(t, tasks[i])
		if !reflect.DeepEqual(got[i], want) {
			t.Fatalf("task %d (%q):\n got %#v\nwant %#v", i, tasks[i].ID, got[i], want)
		}
	}
}

// TestTaskSummaryRefusesDamage: a truncated or foreign body is an error,
// never a shorter list.
func TestTaskSummaryRefusesDamage(t *testing.T) {
	tasks := trickyTasks()[:3]
	ptrs := make([]*core.Task, len(tasks))
	for i := range tasks {
		ptrs[i] = &tasks[i]
	}
	var buf bytes.Buffer
	if err := wire.WriteTaskSummaries(&buf, ptrs); err != nil {
		t.Fatal(err)
	}
	full := buf.String()
	// Every line has the documented columns.
	for i, line := range strings.Split(strings.TrimSuffix(full, "\n"), "\n")[1:] {
		if n := strings.Count(line, "\t") + 1; n != len(wire.SummaryFields) || n != wire.SummaryColumns {
			t.Fatalf("line %d has %d columns; wire.SummaryFields names %d", i+2, n, len(wire.SummaryFields))
		}
	}
	lastLine := strings.LastIndexByte(full[:len(full)-1], '\n')
	for name, body := range map[string]string{
		"cut mid-line":     full[:len(full)-3],
		"a line missing":   full[:lastLine+1],
		"json not summary": `[{"id":"k3f9qa"}]`,
		"empty":            "",
		"newer version":    strings.Replace(full, wire.SummaryHeader, "#kandev-task-summary 99", 1),
	} {
		if _, err := wire.ReadTaskSummaries(strings.NewReader(body), 0, nil); err == nil {
			t.Errorf("%s: read without an error", name)
		}
	}
}

func marshals(t core.Task) bool {
	_, err := json.Marshal(t)
	return err == nil
}

// TestTaskSummariesFirstRows: the reader hands over the first n tasks as
// soon as they are decoded, before it reads further (a reader blocked after
// them still delivers), and they are the whole listing's first n; a listing
// shorter than n is handed over whole at its end.
func TestTaskSummariesFirstRows(t *testing.T) {
	tasks := make([]core.Task, 10)
	ptrs := make([]*core.Task, len(tasks))
	for i := range tasks {
		tasks[i] = core.Task{ID: fmt.Sprintf("t%d", i), Title: fmt.Sprintf("task %d", i), Status: core.StatusTodo}
		ptrs[i] = &tasks[i]
	}
	var buf bytes.Buffer
	if err := wire.WriteTaskSummaries(&buf, ptrs); err != nil {
		t.Fatal(err)
	}
	// The body stops after the fourth task's line until released.
	lines := strings.SplitAfter(buf.String(), "\n")
	pr, pw := io.Pipe()
	got := make(chan []core.Task, 1)
	done := make(chan error, 1)
	var whole []core.Task
	go func() {
		var err error
		whole, err = wire.ReadTaskSummaries(pr, 3, func(first []core.Task) { got <- first })
		done <- err
	}()
	if _, err := io.WriteString(pw, strings.Join(lines[:5], "")); err != nil {
		t.Fatal(err)
	}
	first := <-got
	if len(first) != 3 || first[0].ID != "t0" || first[2].ID != "t2" {
		t.Fatalf("first rows %+v", first)
	}
	if _, err := io.WriteString(pw, strings.Join(lines[5:], "")); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if len(whole) != 10 || &whole[0] != &first[0] {
		t.Fatalf("whole listing of %d tasks, sharing the first rows' array: %v", len(whole), &whole[0] == &first[0])
	}

	var short []core.Task
	all, err := wire.ReadTaskSummaries(strings.NewReader(buf.String()), 50, func(f []core.Task) { short = f })
	if err != nil || len(short) != 10 || len(all) != 10 {
		t.Fatalf("a listing shorter than the first rows: handed %d, read %d, %v", len(short), len(all), err)
	}
}
