package store

import (
	"context"
	"testing"
)

// A task's waiting text and its cause are read back as written by every
// reader of a task (the row, its view, the start's loader), a legacy text
// with no cause stays whole even when it holds the separator, and
// clearing clears both.
func TestWaitingAndItsCauseRoundTrip(t *testing.T) {
	ctx := context.Background()
	db := openFreshDB(t)
	if err := db.InsertTask(ctx, i2Task("wait01", "")); err != nil {
		t.Fatal(err)
	}
	read := func() (row, view, loaded [2]string) {
		t.Helper()
		r, err := db.GetTask(ctx, "wait01")
		if err != nil {
			t.Fatal(err)
		}
		v, err := db.TaskView(ctx, "wait01")
		if err != nil {
			t.Fatal(err)
		}
		if err := db.EachTaskView(ctx, func(l *TaskView) {
			if l.ID == "wait01" {
				loaded = [2]string{l.WaitingCause, l.Waiting}
			}
		}); err != nil {
			t.Fatal(err)
		}
		return [2]string{r.WaitingCause, r.Waiting}, [2]string{v.WaitingCause, v.Waiting}, loaded
	}
	for _, c := range []struct{ cause, text string }{
		{"host_slots", "host slots full: lb (1/1 agents)"},
		{"cannot_start", "profile x cannot start: a\x1fb"},
		{"", "an old reason, a\x1fb"},
		{"", ""},
	} {
		if err := db.SetWaiting(ctx, "wait01", c.cause, c.text, i2Time); err != nil {
			t.Fatal(err)
		}
		want := [2]string{c.cause, c.text}
		if row, view, loaded := read(); row != want || view != want || loaded != want {
			t.Errorf("set %q: row %q, view %q, loaded %q", want, row, view, loaded)
		}
	}
}
