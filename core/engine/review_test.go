package engine_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/engine"
)

// A parent agent reviews its child through message_task_kandev with
// structured comments: checked against the child's diff, kept on the
// child, queued as one review notice with the hunk around each comment;
// a comment off the diff, or a reviewer outside the subtree, changes
// nothing; a comment turns outdated when its line changes.
func TestReviewThroughMessageTool(t *testing.T) {
	env := newEngineEnv(t)
	repo := newGitRepo(t, env)
	parent, err := env.eng.Tasks.CreateTask(env.ctx, api.CreateTaskInput{Title: "parent", CWD: repo})
	if err != nil {
		t.Fatal(err)
	}
	child, err := env.eng.Tasks.CreateTask(env.ctx, api.CreateTaskInput{Title: "child", ParentID: parent.ID, Workspace: "new"})
	if err != nil {
		t.Fatal(err)
	}
	stranger, err := env.eng.Tasks.CreateTask(env.ctx, api.CreateTaskInput{Title: "stranger", CWD: repo})
	if err != nil {
		t.Fatal(err)
	}
	mainGo := filepath.Join(child.Workspace.Dir, "src", "main.go")
	if err := os.WriteFile(mainGo, []byte("package main\n\nfunc main() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	call := func(as core.Task, args string) (api.MessageResult, error) {
		t.Helper()
		ctx := core.WithActor(env.ctx, core.Actor{Kind: core.ActorAgent, TaskID: as.ID})
		res, err := env.eng.Tools.CallTool(ctx, "message_task_kandev", []byte(args))
		if err != nil {
			return api.MessageResult{}, err
		}
		return res.(api.MessageResult), nil
	}
	nothingKept := func(why string) {
		t.Helper()
		if q, _ := env.db.Queue(env.ctx, child.ID); len(q) != 0 {
			t.Errorf("%s: queued %+v", why, q)
		}
		if rows, _ := env.db.ReviewComments(env.ctx, child.ID); len(rows) != 0 {
			t.Errorf("%s: kept %+v", why, rows)
		}
	}

	// A line the diff does not show refuses the whole review.
	_, err = call(parent, `{"task_id":"`+child.ID+`","prompt":"see comments","comments":[
		{"file":"src/main.go","line":3,"text":"fine"},{"file":"src/main.go","line":9,"text":"off the diff"}]}`)
	if core.CodeOf(err) != core.CodeValidation || !strings.Contains(err.Error(), "comment 2 (src/main.go:9): lines 9-9 of src/main.go are not all in one hunk of the diff; its hunks show lines 1-3") {
		t.Fatalf("off the diff: %v", err)
	}
	nothingKept("off the diff")
	_, err = call(parent, `{"task_id":"`+child.ID+`","prompt":"x","comments":[{"file":"README","line":1,"text":"?"}]}`)
	if core.CodeOf(err) != core.CodeValidation || !strings.Contains(err.Error(), "README is not in task "+child.ID+"'s diff; the files changed: src/main.go") {
		t.Fatalf("file off the diff: %v", err)
	}
	// A task outside the reviewer's subtree: its diff is not the reviewer's to read.
	_, err = call(stranger, `{"task_id":"`+child.ID+`","prompt":"x","comments":[{"file":"src/main.go","line":3,"text":"?"}]}`)
	if core.CodeOf(err) != core.CodeForbidden {
		t.Fatalf("stranger: %v", err)
	}
	nothingKept("refused reviews")

	res, err := call(parent, `{"task_id":"`+child.ID+`","prompt":"Nearly.","comments":[
		{"file":"src/main.go","line":3,"text":"main does nothing"},{"file":"src/main.go","line":1,"end_line":2,"text":"keep the header"}]}`)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Comments) != 2 || res.Comments[0].Lines != "func main() {}" || res.Comments[1].Lines != "package main\n" || res.Comments[0].State != api.ReviewOpen {
		t.Fatalf("comments = %+v", res.Comments)
	}
	q, err := env.db.Queue(env.ctx, child.ID)
	if err != nil || len(q) != 1 {
		t.Fatalf("queue = %+v, %v", q, err)
	}
	text := engine.RenderQueued(env.eng, env.get(child.ID), q[0])
	for _, want := range []string{
		"[kandev:review] From task " + parent.ID + " (parent): a review of the changes in your worktree, 2 comments on the diff.",
		"\nNearly.\n",
		"\n1. src/main.go line 3:\n| @@ -1 +1,3 @@\n|  package main\n| +\n| +func main() {}\nmain does nothing\n",
		"\n2. src/main.go lines 1-2:\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("review notice lacks %q:\n%s", want, text)
		}
	}

	// The child's agent changes line 3: that comment is outdated, the other open.
	if err := os.WriteFile(mainGo, []byte("package main\n\nfunc main() { run() }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	v, err := env.eng.Workspaces.Review(env.ctx, child.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Comments) != 2 || v.Comments[0].State != api.ReviewOutdated || v.Comments[1].State != api.ReviewOpen || v.Unchecked != "" {
		t.Fatalf("review = %+v", v)
	}
	d, err := env.eng.Workspaces.Diff(env.ctx, child.ID, api.DiffInput{})
	if err != nil || len(d.Comments) != 2 || d.Comments[0].State != api.ReviewOutdated {
		t.Fatalf("diff comments = %+v, %v", d.Comments, err)
	}
	// A file turned into a link out of the worktree is not followed: outdated.
	if err := os.Remove(mainGo); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(env.dir, "outside.go") // the lines as commented on
	if err := os.WriteFile(outside, []byte("package main\n\nfunc main() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, mainGo); err != nil {
		t.Fatal(err)
	}
	if v, err = env.eng.Workspaces.Review(env.ctx, child.ID); err != nil || v.Comments[0].State != api.ReviewOutdated || v.Comments[1].State != api.ReviewOutdated {
		t.Fatalf("through a link: %+v, %v", v, err)
	}
}
