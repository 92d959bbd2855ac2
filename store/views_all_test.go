package store

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestAllTaskViewsMatchOneByOne: loading every view at once (the daemon's
// start, which reads sessions, queue lengths, pending questions and open
// blockers by separate queries) gives each task the view it has when
// loaded by id (a join and per-row subqueries).
func TestAllTaskViewsMatchOneByOne(t *testing.T) {
	db := openFreshDB(t)
	ctx := context.Background()
	mustInsert(t, db, i2Task("aaaa01", ""), i2Task("bbbb01", "aaaa01"), i2Task("cccc01", ""),
		i2Task("dddd01", ""), i2Task("eeee01", ""), i2Task("ffff01", ""))
	for range 2 {
		if _, err := db.Enqueue(ctx, QueueItem{TaskID: "bbbb01", Priority: 1, Kind: "message", Sender: "x", Text: "t", CreatedAt: i2Time}); err != nil {
			t.Fatal(err)
		}
	}
	for i, sid := range []string{"s-old", "s-new"} {
		at := i2Time.Add(time.Duration(i+1) * time.Minute)
		if err := db.InsertSession(ctx, Session{ID: sid, TaskID: "bbbb01", Role: "worker", Profile: "claude",
			State: "running", AgentSessionID: "agent-" + sid, PID: 4242, Turns: i, CreatedAt: at, UpdatedAt: at}); err != nil {
			t.Fatal(err)
		}
	}
	insertQuestion(t, db, "cccc01", "answered")
	insertQuestion(t, db, "cccc01", "pending")
	insertQuestion(t, db, "aaaa01", "pending")
	// dddd01 waits on two open tasks and a finished and an archived one.
	for _, b := range []string{"aaaa01", "cccc01", "eeee01", "ffff01"} {
		if err := db.AddBlocker(ctx, "dddd01", b); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.SetTaskStatus(ctx, "eeee01", "done", i2Time); err != nil {
		t.Fatal(err)
	}
	if err := db.ArchiveTask(ctx, "ffff01", i2Time); err != nil {
		t.Fatal(err)
	}

	all, err := db.TaskViews(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 6 {
		t.Fatalf("%d views, want 6", len(all))
	}
	for _, v := range all {
		one, err := db.TaskView(ctx, v.ID)
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(v.OpenBlockers)
		slices.Sort(one.OpenBlockers)
		if !reflect.DeepEqual(v, one) {
			t.Errorf("task %s:\n all at once %+v\n by id      %+v", v.ID, v, one)
		}
	}
	byID := map[string]TaskView{}
	for _, v := range all {
		byID[v.ID] = v
	}
	if byID["bbbb01"].Queued != 2 || byID["bbbb01"].Session == nil || byID["bbbb01"].Session.ID != "s-new" || byID["cccc01"].Question == nil || byID["aaaa01"].Question == nil ||
		!slices.Equal(byID["dddd01"].OpenBlockers, []string{"aaaa01", "cccc01"}) {
		t.Fatalf("extras: queued %d, questions %v %v, blockers %v", byID["bbbb01"].Queued,
			byID["cccc01"].Question, byID["aaaa01"].Question, byID["dddd01"].OpenBlockers)
	}
}

// TestEachTaskViewMatchesByID: the start's load (each task read as one
// value, the table in rowid ranges read in parallel) gives every task,
// once, the view it has when loaded by id, column by column: whatever its
// columns hold, including the separator the load cuts rows on (those
// tasks take the column-by-column path), and whatever order rowids and
// creation times are in.
func TestEachTaskViewMatchesByID(t *testing.T) {
	db := openFreshDB(t)
	ctx := context.Background()
	const n = 2_500
	base := time.Date(2026, 5, 6, 7, 8, 9, 123456789, time.UTC)
	tasks := make([]Task, 0, n)
	for i := range n {
		tk := Task{ID: fmt.Sprintf("t%05d", i), Title: fmt.Sprintf("Task %d", i), CWD: "/src", Profile: "mock",
			Status: []string{"todo", "in_progress", "review", "done", "cancelled"}[i%5], Autopilot: i%3 == 0,
			CreatedBy: "person:operator", CreatedAt: base.Add(time.Duration(i) * time.Second), Workspace: "shared"}
		// Every seventh was created before the one inserted ahead of it.
		if i%7 == 0 {
			tk.CreatedAt = base.Add(-time.Duration(i) * time.Second)
		}
		tk.UpdatedAt = tk.CreatedAt.Add(time.Minute)
		if i%10 != 0 {
			tk.ParentID = fmt.Sprintf("t%05d", i-i%10)
		}
		switch i % 500 {
		case 1:
			tk.Title = "a title with a \x1f unit separator"
		case 2:
			tk.Description, tk.CWD = "ends with one\x1f", "/src/\x1f/odd"
		case 3:
			tk.Description = "many lines\nand \"quotes\", commas, \\ and \t tabs\x00nul"
		case 5:
			tk.Branch = "kandev/\x1f"
		case 4:
			tk.Assignee, tk.HandedBy, tk.Surface = "role:reviewer", "person:ann", "office_task"
			tk.Workspace, tk.RepoRoot, tk.WorktreeDir, tk.Branch, tk.BaseCommit = "worktree", "/src", "/wt/x", "kandev/x", "abc123"
		}
		tasks = append(tasks, tk)
	}
	if err := db.Tx(ctx, func(tx *Tx) error { return tx.InsertTasks(ctx, tasks) }); err != nil {
		t.Fatal(err)
	}
	// What only later writes set.
	for _, q := range []string{
		`UPDATE tasks SET archived_at = created_at + 5 WHERE rowid % 11 = 0`,
		`UPDATE tasks SET halted = 1, title_pending = 1, needs_check = 1 WHERE rowid % 13 = 0`,
		`UPDATE tasks SET stalled = '{"reason":"x"}', waiting = 'no claude CLI' WHERE rowid % 17 = 0`,
	} {
		if _, err := db.sql.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < n; i += 47 {
		id := fmt.Sprintf("t%05d", i)
		at := base.Add(time.Duration(i) * time.Second)
		if err := db.InsertSession(ctx, Session{ID: "s" + id, TaskID: id, Role: "worker", Profile: "mock", State: "completed",
			AgentSessionID: "agent-" + id, PID: i, Turns: 2, TurnStartedAt: at, CreatedAt: at, UpdatedAt: at}); err != nil {
			t.Fatal(err)
		}
		// Another session of the task, later in the table, that the task
		// does not point at: the view holds the one it points at.
		if _, err := db.sql.ExecContext(ctx, `INSERT INTO sessions (id, task_id, role, profile, state, created_at, updated_at)
			VALUES (?, ?, 'worker', 'mock', 'failed', ?, ?)`, "o"+id, id, at.UnixNano()-1, at.UnixNano()-1); err != nil {
			t.Fatal(err)
		}
	}
	for i := 7; i < n; i += 249 {
		id := fmt.Sprintf("t%05d", i)
		if _, err := db.Enqueue(ctx, QueueItem{TaskID: id, Priority: 1, Kind: "message", Sender: "x", Text: "t", CreatedAt: base}); err != nil {
			t.Fatal(err)
		}
		insertQuestion(t, db, id, "pending")
		for _, b := range []string{"t00000", "t00003", "t00011"} {
			if err := db.AddBlocker(ctx, id, b); err != nil {
				t.Fatal(err)
			}
		}
	}

	// In one range, as a table this small is read, and in four, read in
	// parallel, as a large one is.
	for _, parts := range []int{1, 4} {
		t.Run(fmt.Sprintf("%d parts", parts), func(t *testing.T) {
			seen := map[string]TaskView{}
			var order []string
			lock, err := db.sql.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer lock.Rollback()
			err = db.eachTaskView(ctx, func(v *TaskView) {
				if _, dup := seen[v.ID]; dup {
					t.Errorf("task %s twice", v.ID)
				}
				seen[v.ID] = *v
				order = append(order, v.ID)
			}, taskLoad{parts: parts, perPart: 500, batch: 16})
			if err != nil {
				t.Fatal(err)
			}
			if len(seen) != n {
				t.Fatalf("%d tasks loaded, want %d", len(seen), n)
			}
			// Table order, but for the tasks with the separator in a
			// column: read again, column by column, at the end.
			var plain, odd []string
			for _, tk := range tasks {
				if strings.ContainsRune(tk.Title+tk.Description+tk.CWD+tk.Branch, '\x1f') {
					odd = append(odd, tk.ID)
				} else {
					plain = append(plain, tk.ID)
				}
			}
			tail := slices.Sorted(slices.Values(order[len(plain):]))
			if len(odd) != 3*n/500 || !slices.Equal(order[:len(plain)], plain) || !slices.Equal(tail, odd) {
				t.Errorf("load order is not table order with the %d odd tasks last: %v", len(odd), tail)
			}
			compareLoaded(t, db, tasks, seen)
		})
	}
}

func compareLoaded(t *testing.T, db *DB, tasks []Task, seen map[string]TaskView) {
	ctx := context.Background()
	n := len(tasks)
	ids := make([]string, 0, n)
	for _, tk := range tasks {
		ids = append(ids, tk.ID)
	}
	checked := map[string]bool{}
	for chunk := range slices.Chunk(ids, 500) {
		want, err := db.TaskViews(ctx, chunk)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range want {
			got := seen[w.ID]
			slices.Sort(got.OpenBlockers)
			slices.Sort(w.OpenBlockers)
			if !reflect.DeepEqual(got, w) {
				t.Errorf("task %s:\n loaded %+v\n by id  %+v", w.ID, got, w)
			}
			checked[w.ID] = true
		}
	}
	if len(checked) != n {
		t.Fatalf("%d tasks compared, want %d", len(checked), n)
	}
	// The comparison saw what it was meant to.
	for id, want := range map[string]func(TaskView) bool{
		"t00001": func(v TaskView) bool { return v.Title == "a title with a \x1f unit separator" },
		"t00002": func(v TaskView) bool { return v.CWD == "/src/\x1f/odd" },
		"t00003": func(v TaskView) bool { return strings.Contains(v.Description, "\x00nul") },
		"t00004": func(v TaskView) bool { return v.Assignee == "role:reviewer" && v.BaseCommit == "abc123" },
		"t00005": func(v TaskView) bool { return v.Branch == "kandev/\x1f" },
		"t00094": func(v TaskView) bool { return v.Session != nil && v.Session.ID == "st00094" },
		"t00256": func(v TaskView) bool { return v.Queued == 1 && v.Question != nil && len(v.OpenBlockers) == 2 },
	} {
		if !want(seen[id]) {
			t.Errorf("task %s loaded as %+v", id, seen[id])
		}
	}
}
