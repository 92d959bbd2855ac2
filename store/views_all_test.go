package store

import (
	"context"
	"reflect"
	"slices"
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
