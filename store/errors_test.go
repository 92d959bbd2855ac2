package store

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
)

func TestTypedErrors(t *testing.T) {
	db := openFreshDB(t)
	ctx := context.Background()
	mustInsert(t, db, i2Task("root22", ""))

	cases := []struct {
		name    string
		err     error
		want    error
		mention string
	}{
		{"missing task", func() error { _, err := db.GetTask(ctx, "nope22"); return err }(), ErrNotFound, "nope22"},
		{"update of a missing task", db.SetTaskStatus(ctx, "nope22", "done", i2Time), ErrNotFound, "nope22"},
		{"archive of a missing task", db.ArchiveTask(ctx, "nope22", i2Time), ErrNotFound, "nope22"},
		{"missing profile", func() error { _, err := db.GetProfile(ctx, "ghost"); return err }(), ErrNotFound, "ghost"},
		{"remove a missing profile", db.DeleteProfile(ctx, "ghost"), ErrNotFound, "ghost"},
		{"missing message", func() error { _, err := db.GetMessage(ctx, 999); return err }(), ErrNotFound, "999"},
		{"duplicate id", db.InsertTask(ctx, i2Task("root22", "")), ErrConflict, "root22"},
		{"unknown parent", db.InsertTask(ctx, i2Task("orphan", "nope22")), ErrConstraint, "FOREIGN KEY"},
		{"bad status (check)", func() error { tk := i2Task("bad222", ""); tk.Status = "bogus"; return db.InsertTask(ctx, tk) }(), ErrConstraint, "CHECK"},
		{"blank title (check)", func() error { tk := i2Task("bad223", ""); tk.Title = "  "; return db.InsertTask(ctx, tk) }(), ErrConstraint, "CHECK"},
		{"status update to a bad value", db.SetTaskStatus(ctx, "root22", "bogus", i2Time), ErrConstraint, "CHECK"},
		{"autopilot trigger", db.SetTaskAutopilot(ctx, "root22", true), ErrConstraint, "autopilot is fixed at creation"},
		{"parent trigger", db.SetTaskParent(ctx, "root22", "root22"), ErrConstraint, "parent is fixed at creation"},
		{"queue for a missing task", func() error {
			_, err := db.Enqueue(ctx, QueueItem{TaskID: "nope22", Priority: 1, Kind: "message", Sender: "x", Text: "hi", CreatedAt: i2Time})
			return err
		}(), ErrConstraint, "FOREIGN KEY"},
		{"profile without a command", db.UpsertProfile(ctx, Profile{Name: "empty", Command: "", CreatedAt: i2Time}), ErrConstraint, "CHECK"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if !errors.Is(c.err, c.want) {
				t.Fatalf("got %v, want %v", c.err, c.want)
			}
			for _, other := range []error{ErrNotFound, ErrConflict, ErrConstraint, ErrSchemaTooNew} {
				if other != c.want && errors.Is(c.err, other) {
					t.Fatalf("%v is also %v", c.err, other)
				}
			}
			if !strings.Contains(c.err.Error(), c.mention) {
				t.Fatalf("error %q does not mention %q", c.err, c.mention)
			}
		})
	}
}

func TestMapErr(t *testing.T) {
	if mapErr(nil) != nil {
		t.Fatal("mapErr(nil) != nil")
	}
	if !errors.Is(mapErr(sql.ErrNoRows), ErrNotFound) {
		t.Fatal("sql.ErrNoRows is not ErrNotFound")
	}
	other := errors.New("disk on fire")
	if mapErr(other) != other {
		t.Fatal("an unknown error must pass through unchanged")
	}
}

// A failing function rolls the whole transaction back.
func TestTxIsAllOrNothing(t *testing.T) {
	db := openFreshDB(t)
	ctx := context.Background()
	err := db.Tx(ctx, func(tx *Tx) error {
		if err := tx.InsertTask(ctx, i2Task("first2", "")); err != nil {
			return err
		}
		// Inside the transaction the first insert is visible.
		if _, err := tx.GetTask(ctx, "first2"); err != nil {
			return err
		}
		return tx.InsertTask(ctx, i2Task("first2", "")) // conflict
	})
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("tx error %v, want ErrConflict", err)
	}
	if _, err := db.GetTask(ctx, "first2"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a rolled-back insert is visible: %v", err)
	}
	boom := errors.New("boom")
	err = db.Tx(ctx, func(tx *Tx) error {
		if err := tx.InsertTask(ctx, i2Task("second", "")); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("tx error %v, want the function's", err)
	}
	if n, _ := db.CountTasks(ctx); n != 0 {
		t.Fatalf("%d tasks after two rolled-back transactions", n)
	}
}
