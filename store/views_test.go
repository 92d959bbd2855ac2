package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

func TestQueueOrderIsPriorityThenID(t *testing.T) {
	db := openFreshDB(t)
	ctx := context.Background()
	mustInsert(t, db, i2Task("queue2", ""), i2Task("other2", ""))
	var want []int64
	add := func(prio int, text string) int64 {
		it, err := db.Enqueue(ctx, QueueItem{TaskID: "queue2", Priority: prio, Kind: "message", Sender: "person:operator",
			Text: text, CreatedAt: i2Time})
		if err != nil {
			t.Fatal(err)
		}
		if it.ID == 0 || it.Meta != "{}" {
			t.Fatalf("enqueued item %+v", it)
		}
		return it.ID
	}
	a := add(1, "a")
	b := add(0, "b (interrupt)")
	c := add(1, "c")
	d := add(0, "d (interrupt)")
	e := add(2, "e (low)")
	want = []int64{b, d, a, c, e}
	if _, err := db.Enqueue(ctx, QueueItem{TaskID: "other2", Priority: 0, Kind: "message", Sender: "x", Text: "elsewhere", CreatedAt: i2Time}); err != nil {
		t.Fatal(err)
	}
	q, err := db.Queue(ctx, "queue2")
	if err != nil {
		t.Fatal(err)
	}
	var got []int64
	for _, it := range q {
		got = append(got, it.ID)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("queue order %v, want %v", got, want)
	}
	if err := db.DeleteQueueItem(ctx, b); err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteQueueItem(ctx, b); !errors.Is(err, ErrNotFound) {
		t.Fatalf("deleting twice: %v", err)
	}
	q, _ = db.Queue(ctx, "queue2")
	if len(q) != 4 || q[0].ID != d {
		t.Fatalf("after delivering the head: %+v", q)
	}
}

func insertQuestion(t *testing.T, db *DB, taskID, status string) Message {
	t.Helper()
	meta, _ := json.Marshal(map[string]any{"status": status, "question_id": fmt.Sprintf("q-%s-%s", taskID, status)})
	m, err := db.InsertMessage(context.Background(), Message{TaskID: taskID, Kind: "question", Author: "task:" + taskID,
		Text: "which one?", Meta: string(meta), CreatedAt: i2Time, UpdatedAt: i2Time})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// The pending → answered claim happens exactly once however many callers
// race for it.
func TestCompareAndSetMetaExactlyOnce(t *testing.T) {
	db := openFreshDB(t)
	ctx := context.Background()
	mustInsert(t, db, i2Task("askq22", ""))
	m := insertQuestion(t, db, "askq22", "pending")

	const racers = 8
	var wg sync.WaitGroup
	won := make([]bool, racers)
	errs := make([]error, racers)
	for i := range racers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			meta := fmt.Sprintf(`{"status":"answered","by":%d}`, i)
			won[i], errs[i] = db.CompareAndSetMeta(ctx, m.Seq, "$.status", "pending", meta, i2Time)
		}()
	}
	wg.Wait()
	winner := -1
	for i := range racers {
		if errs[i] != nil {
			t.Fatalf("racer %d: %v", i, errs[i])
		}
		if won[i] {
			if winner >= 0 {
				t.Fatalf("racers %d and %d both claimed the question", winner, i)
			}
			winner = i
		}
	}
	if winner < 0 {
		t.Fatal("nobody claimed the question")
	}
	got, err := db.GetMessage(ctx, m.Seq)
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf(`{"status":"answered","by":%d}`, winner); got.Meta != want {
		t.Fatalf("meta %s, want the winner's %s", got.Meta, want)
	}
	// A late claim, or one expecting another state, changes nothing.
	ok, err := db.CompareAndSetMeta(ctx, m.Seq, "$.status", "pending", `{"status":"stale"}`, i2Time)
	if ok || err != nil {
		t.Fatalf("late claim: %v %v", ok, err)
	}
	ok, err = db.CompareAndSetMeta(ctx, 9999, "$.status", "pending", `{}`, i2Time)
	if ok || err != nil {
		t.Fatalf("claim of a missing message: %v %v", ok, err)
	}
	got, _ = db.GetMessage(ctx, m.Seq)
	if got.Meta != fmt.Sprintf(`{"status":"answered","by":%d}`, winner) {
		t.Fatalf("meta changed by a refused claim: %s", got.Meta)
	}
}

func TestTaskViews(t *testing.T) {
	db := openFreshDB(t)
	ctx := context.Background()
	mustInsert(t, db, i2Task("bare22", ""), i2Task("busy22", ""), i2Task("askd22", "busy22"))

	// busy22: two sessions (the later is its latest), three queued messages.
	for i, id := range []string{"s-old", "s-new"} {
		at := i2Time.Add(time.Duration(i+1) * time.Minute)
		if err := db.InsertSession(ctx, Session{ID: id, TaskID: "busy22", Role: "worker", Profile: "claude",
			State: "running", AgentSessionID: "agent-" + id, PID: 4242, Turns: i, CreatedAt: at, UpdatedAt: at}); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 {
		if _, err := db.Enqueue(ctx, QueueItem{TaskID: "busy22", Priority: 1, Kind: "message", Sender: "x", Text: "t", CreatedAt: i2Time}); err != nil {
			t.Fatal(err)
		}
	}
	// askd22: an answered question, then a pending one, then a later answered one.
	insertQuestion(t, db, "askd22", "answered")
	pending := insertQuestion(t, db, "askd22", "pending")
	insertQuestion(t, db, "askd22", "stale")
	// A pending question of another task never leaks into busy22's view.

	views, err := db.TaskViews(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	byID := map[string]TaskView{}
	for _, v := range views {
		order = append(order, v.ID)
		byID[v.ID] = v
	}
	if !slices.Equal(order, []string{"bare22", "busy22", "askd22"}) {
		t.Fatalf("views in order %v", order)
	}
	bare := byID["bare22"]
	if bare.Session != nil || bare.Question != nil || bare.Queued != 0 {
		t.Fatalf("bare view: %+v", bare)
	}
	busy := byID["busy22"]
	if busy.Session == nil || busy.Session.ID != "s-new" || busy.Session.TaskID != "busy22" || busy.Session.PID != 4242 ||
		busy.Session.AgentSessionID != "agent-s-new" || busy.Session.State != "running" || busy.SessionID != "s-new" {
		t.Fatalf("busy session: %+v", busy.Session)
	}
	if !busy.Session.CreatedAt.Equal(i2Time.Add(2 * time.Minute)) {
		t.Fatalf("session created_at %v", busy.Session.CreatedAt)
	}
	if busy.Queued != 3 || busy.Question != nil {
		t.Fatalf("busy queued %d question %+v", busy.Queued, busy.Question)
	}
	askd := byID["askd22"]
	if askd.Question == nil || askd.Question.Seq != pending.Seq || askd.Question.Text != "which one?" {
		t.Fatalf("askd question: %+v, want seq %d", askd.Question, pending.Seq)
	}

	one, err := db.TaskView(ctx, "askd22")
	if err != nil || one.ID != "askd22" || one.Question == nil || one.Question.Seq != pending.Seq {
		t.Fatalf("TaskView: %+v %v", one, err)
	}
	some, err := db.TaskViews(ctx, []string{"askd22", "bare22", "nope22"})
	if err != nil || len(some) != 2 || some[0].ID != "bare22" || some[1].ID != "askd22" {
		t.Fatalf("TaskViews of two: %+v %v", some, err)
	}
	if none, err := db.TaskViews(ctx, []string{}); err != nil || len(none) != 0 {
		t.Fatalf("TaskViews of none: %v %v", none, err)
	}
	if _, err := db.TaskView(ctx, "nope22"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("TaskView of a missing task: %v", err)
	}

	// Answering the question takes it out of the view.
	if ok, err := db.CompareAndSetMeta(ctx, pending.Seq, "$.status", "pending", `{"status":"answered"}`, i2Time); !ok || err != nil {
		t.Fatalf("claim: %v %v", ok, err)
	}
	one, _ = db.TaskView(ctx, "askd22")
	if one.Question != nil {
		t.Fatalf("answered question still pending in the view: %+v", one.Question)
	}
}
