package store

import (
	"context"
	"path/filepath"
	"testing"
	"time"
)

func TestReviewCommentsKeptInOrder(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(t.TempDir(), "kandev.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	mustInsert(t, db, i2Task("aaaaaa", ""))
	now := time.Now().UTC()
	for _, c := range []ReviewComment{
		{TaskID: "aaaaaa", Author: "person:operator", File: "a.go", Line: 3, EndLine: 4, Body: "first", Lines: "x\ny", Hunk: "@@ -1 +1 @@", CreatedAt: now},
		{TaskID: "aaaaaa", Author: "agent:bbbbbb", File: "b.go", Line: 1, EndLine: 1, Body: "second", Lines: "z", Hunk: "+z", CreatedAt: now},
	} {
		if _, err := db.AddReviewComment(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	got, err := db.ReviewComments(ctx, "aaaaaa")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Body != "first" || got[0].EndLine != 4 || got[1].File != "b.go" || got[1].ID <= got[0].ID || !got[0].CreatedAt.Equal(now) {
		t.Fatalf("comments = %+v", got)
	}
	// A range that ends before it starts, or a comment on no task, is refused.
	if _, err := db.AddReviewComment(ctx, ReviewComment{TaskID: "aaaaaa", Author: "x", File: "a", Line: 5, EndLine: 4, CreatedAt: now}); err == nil {
		t.Fatal("end_line < line accepted")
	}
	if _, err := db.AddReviewComment(ctx, ReviewComment{TaskID: "nosuch", Author: "x", File: "a", Line: 1, EndLine: 1, CreatedAt: now}); err == nil {
		t.Fatal("comment on a missing task accepted")
	}
}

func TestTaskLinks(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(t.TempDir(), "kandev.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	mustInsert(t, db, i2Task("aaaaaa", ""))
	if url, err := db.TaskLink(ctx, "aaaaaa", "pull_request"); err != nil || url != "" {
		t.Fatalf("no link yet: %q, %v", url, err)
	}
	now := time.Now().UTC()
	for _, u := range []string{"https://example.com/pr/1", "https://example.com/pr/2"} {
		if err := db.SetTaskLink(ctx, "aaaaaa", "pull_request", u, now); err != nil {
			t.Fatal(err)
		}
	}
	if url, err := db.TaskLink(ctx, "aaaaaa", "pull_request"); err != nil || url != "https://example.com/pr/2" {
		t.Fatalf("link = %q, %v; want the later one", url, err)
	}
}
