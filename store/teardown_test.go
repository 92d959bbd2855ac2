package store

import (
	"context"
	"testing"
)

// A session may have processes until its teardown is recorded, whatever
// its state; the daemon's start records every one torn down.
func TestSessionTeardownRecord(t *testing.T) {
	ctx := context.Background()
	db := openFreshDB(t)
	if err := db.InsertTask(ctx, Task{ID: "tear01", Title: "t", CWD: "/", Profile: "mock", Status: "todo",
		CreatedBy: "operator", CreatedAt: i2Time, UpdatedAt: i2Time}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"s1", "s2", "s3"} {
		if err := db.InsertSession(ctx, Session{ID: id, TaskID: "tear01", Role: "mock", Profile: "mock",
			State: "completed", CreatedAt: i2Time, UpdatedAt: i2Time}); err != nil {
			t.Fatal(err)
		}
	}
	ids := func() []string {
		ss, err := db.SessionsNotTornDown(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, s := range ss {
			out = append(out, s.ID)
		}
		return out
	}
	if got := ids(); len(got) != 3 {
		t.Fatalf("not torn down: %v, want all three", got)
	}
	if err := db.MarkTornDown(ctx, "s2", i2Time); err != nil {
		t.Fatal(err)
	}
	if got := ids(); len(got) != 2 || got[0] != "s1" || got[1] != "s3" {
		t.Fatalf("not torn down after s2's teardown: %v", got)
	}
	if err := db.MarkAllTornDown(ctx, i2Time); err != nil {
		t.Fatal(err)
	}
	if got := ids(); len(got) != 0 {
		t.Fatalf("not torn down after the start's sweep: %v", got)
	}
}
