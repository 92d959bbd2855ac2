package store

import (
	"context"
	"errors"
	"testing"
	"time"
)

// An issue is recorded on one task at most, archived tasks included.
func TestTaskSourceOnce(t *testing.T) {
	db := openFreshDB(t)
	ctx := context.Background()
	now := time.Now().UTC()
	mustInsert(t, db, i2Task("a1", ""), i2Task("b2", ""))
	src := TaskSource{TaskID: "a1", Kind: "github", Ref: "gh:acme/web#12", URL: "https://github.com/acme/web/issues/12", Text: "body", CreatedAt: now}
	if err := db.InsertTaskSource(ctx, src); err != nil {
		t.Fatal(err)
	}
	src.TaskID = "b2"
	if err := db.InsertTaskSource(ctx, src); !errors.Is(err, ErrConflict) {
		t.Fatalf("a second task with the issue: %v", err)
	}
	if id, err := db.TaskWithSource(ctx, "gh:acme/web#12"); err != nil || id != "a1" {
		t.Fatalf("TaskWithSource = %q, %v", id, err)
	}
	if id, err := db.TaskWithSource(ctx, "gh:acme/web#13"); err != nil || id != "" {
		t.Fatalf("TaskWithSource of another = %q, %v", id, err)
	}
	got, ok, err := db.TaskSourceOf(ctx, "a1")
	if err != nil || !ok || got.Text != "body" || got.URL != src.URL || got.Kind != "github" {
		t.Fatalf("TaskSourceOf = %+v, %v, %v", got, ok, err)
	}
	all, err := db.TaskSources(ctx)
	if err != nil || len(all) != 1 || all["a1"].Ref != "gh:acme/web#12" {
		t.Fatalf("TaskSources = %+v, %v", all, err)
	}
	bad := TaskSource{TaskID: "b2", Kind: "jira", Ref: "jira:X-1", CreatedAt: now}
	if err := db.InsertTaskSource(ctx, bad); err == nil {
		t.Fatal("an unknown kind was recorded")
	}
}
