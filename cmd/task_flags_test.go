package cmd

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
)

func TestNewCmdTaskCreateFlags(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	f := testFactory(t, "", map[string]string{"KANDEV_PROFILE": "codex"})
	got := mustParse(t, f, NewCmdTaskCreate, "Split the auth module", "-d", "keep the API", "--autopilot", "--start",
		"--prompt", "go", "--assignee", "lead", "--blocked-by", "a1", "--blocked-by", "b2", "--workspace", "shared",
		"--base", "main", "--branch", "feat", "--surface", "office-task", "--sandbox", "bwrap")
	want := api.CreateTaskInput{Title: "Split the auth module", Description: "keep the API", Autopilot: true, Sandbox: "bwrap", Start: true,
		Prompt: "go", Assignee: "lead", BlockedBy: []string{"a1", "b2"}, Workspace: "shared", Base: "main", Branch: "feat",
		Surface: "office-task", CWD: wd}
	same(t, "task create --assignee (top level: cwd filled in, the role's profile left to the daemon)", got.Input, want)
	got = mustParse(t, f, NewCmdTaskCreate, "Split the auth module")
	same(t, "task create (top level: configured profile filled in)", got.Input.Profile, "codex")

	// A child leaves cwd and profile to the daemon (its parent's); a
	// relative --cwd is made absolute.
	got = mustParse(t, f, NewCmdTaskCreate, "child", "--parent", "k3f9qa")
	same(t, "task create --parent", [3]string{got.Input.ParentID, got.Input.CWD, got.Input.Profile}, [3]string{"k3f9qa", "", ""})
	got = mustParse(t, f, NewCmdTaskCreate, "child", "--parent", "k3f9qa", "--cwd", "sub", "--profile", "mock")
	same(t, "task create --cwd", [2]string{got.Input.CWD, got.Input.Profile}, [2]string{filepath.Join(wd, "sub"), "mock"})
	// --prompt alone may stand for the title.
	got = mustParse(t, f, NewCmdTaskCreate, "--prompt", "fix the build")
	same(t, "task create --prompt", [2]string{got.Input.Title, got.Input.Prompt}, [2]string{"", "fix the build"})

	refused(t, f, NewCmdTaskCreate, "needs a TITLE")
	refused(t, f, NewCmdTaskCreate, "one TITLE (quote it)", "two", "words")
}

func TestNewCmdTaskListFlags(t *testing.T) {
	f := testFactory(t, "", nil)
	got := mustParse(t, f, NewCmdTaskList)
	same(t, "task list", [3]any{got.Input.All, got.Input.Root, got.Limit}, [3]any{false, "", 0})
	got = mustParse(t, f, NewCmdTaskList, "--all", "--limit", "20", "--root", "k3f9qa")
	same(t, "task list --all --limit --root", [3]any{got.Input.All, got.Input.Root, got.Limit}, [3]any{true, "k3f9qa", 20})
	refused(t, f, NewCmdTaskList, "--limit takes a number", "--limit", "-1")
	refused(t, f, NewCmdTaskList, "", "extra")
	fj := testFactory(t, "", nil)
	fj.JSON = true
	refused(t, fj, NewCmdTaskList, "--limit is for the text list", "--limit", "5")
	same(t, "task list --json --all", mustParse(t, fj, NewCmdTaskList, "--all").Input.All, true)
}

func TestNewCmdTaskEditFlags(t *testing.T) {
	f := testFactory(t, "", nil)
	same(t, "task show", mustParse(t, f, NewCmdTaskShow, "k3f9qa").ID, "k3f9qa")
	refused(t, f, NewCmdTaskShow, "one task ID")

	// Only the flags given are sent: an empty title is a change, an
	// absent one is not.
	got := mustParse(t, f, NewCmdTaskEdit, "k3f9qa", "--title", "")
	if got.Input.Title == nil || *got.Input.Title != "" || got.Input.Description != nil || got.Input.Autopilot != nil {
		t.Errorf("task edit --title '': %+v", got.Input)
	}
	got = mustParse(t, f, NewCmdTaskEdit, "k3f9qa", "-d", "more", "--autopilot")
	if got.Input.Title != nil || got.Input.Description == nil || *got.Input.Description != "more" ||
		got.Input.Autopilot == nil || !*got.Input.Autopilot {
		t.Errorf("task edit -d --autopilot: %+v", got.Input)
	}

	st := mustParse(t, f, NewCmdTaskStatus, "k3f9qa", "review")
	same(t, "task status", [2]any{st.ID, st.Status}, [2]any{"k3f9qa", core.StatusReview})
	refused(t, f, NewCmdTaskStatus, "unknown status", "k3f9qa", "finished")
	same(t, "task archive", mustParse(t, f, NewCmdTaskArchive, "k3f9qa").ID, "k3f9qa")
}

func TestNewCmdTaskRunFlags(t *testing.T) {
	f := testFactory(t, "from stdin\n", nil)
	start := mustParse(t, f, NewCmdTaskStart, "k3f9qa", "--prompt", "go on")
	same(t, "task start", [2]string{start.ID, start.Prompt}, [2]string{"k3f9qa", "go on"})

	msg := mustParse(t, f, NewCmdTaskMessage, "k3f9qa", "hello", "--interrupt")
	same(t, "task message", [3]any{msg.ID, msg.Text, msg.Interrupt}, [3]any{"k3f9qa", "hello", true})
	msg = mustParse(t, f, NewCmdTaskMessage, "k3f9qa", "-")
	same(t, "task message - (stdin)", msg.Text, "from stdin\n")
	refused(t, f, NewCmdTaskMessage, "the message TEXT", "k3f9qa")

	same(t, "task stop", mustParse(t, f, NewCmdTaskStop, "k3f9qa").ID, "k3f9qa")

	ans := mustParse(t, f, NewCmdTaskAnswer, "k3f9qa", "--option", "2", "--question", "q1")
	same(t, "task answer --option", ans.Input, api.AnswerInput{Option: 2, QuestionID: "q1"})
	ans = mustParse(t, f, NewCmdTaskAnswer, "k3f9qa", "use the store")
	same(t, "task answer TEXT", ans.Input, api.AnswerInput{Text: "use the store"})
	ans = mustParse(t, f, NewCmdTaskAnswer, "k3f9qa", "--answer", "1", "--answer", "free text")
	same(t, "task answer --answer", ans.Input.Answers, []string{"1", "free text"})
	refused(t, f, NewCmdTaskAnswer, "exactly one of", "k3f9qa")
	refused(t, f, NewCmdTaskAnswer, "exactly one of", "k3f9qa", "text", "--option", "1")
	refused(t, f, NewCmdTaskAnswer, "counts from 1", "k3f9qa", "--option", "0", "--answer", "x")
	refused(t, f, NewCmdTaskAnswer, "takes a task ID", "a", "b", "c")
}

func TestNewCmdTaskHandoffFlags(t *testing.T) {
	f := testFactory(t, "", nil)
	h := mustParse(t, f, NewCmdTaskHandoff, "k3f9qa", "--to", "engineer", "-m", "see auth_test.go")
	same(t, "task handoff", [3]string{h.ID, h.Input.To, h.Input.Message}, [3]string{"k3f9qa", "engineer", "see auth_test.go"})
	refused(t, f, NewCmdTaskHandoff, "--to is required", "k3f9qa")

	b := mustParse(t, f, NewCmdTaskBlock, "k3f9qa", "--on", "a1", "--on", "b2", "--remove")
	same(t, "task block", [3]any{b.ID, b.Input.On, b.Input.Remove}, [3]any{"k3f9qa", []string{"a1", "b2"}, true})
	refused(t, f, NewCmdTaskBlock, "--on is required", "k3f9qa")
}

func TestNewCmdTaskLogQueueFlags(t *testing.T) {
	f := testFactory(t, "", nil)
	l := mustParse(t, f, NewCmdTaskLog, "k3f9qa", "-f", "--after", "12")
	same(t, "task log", [3]any{l.ID, l.Follow, l.After}, [3]any{"k3f9qa", true, int64(12)})

	q := mustParse(t, f, NewCmdTaskQueue, "k3f9qa", "--drop", "42")
	same(t, "task queue --drop", [3]any{q.ID, q.Drop, q.Clear}, [3]any{"k3f9qa", int64(42), false})
	same(t, "task queue --clear", mustParse(t, f, NewCmdTaskQueue, "k3f9qa", "--clear").Clear, true)
	refused(t, f, NewCmdTaskQueue, "not both", "k3f9qa", "--drop", "1", "--clear")
	refused(t, f, NewCmdTaskQueue, "a positive number", "k3f9qa", "--drop", "0")
}

func TestNewCmdTaskWorktreeFlags(t *testing.T) {
	f := testFactory(t, "", nil)
	d := mustParse(t, f, NewCmdTaskDiff, "k3f9qa", "--stat")
	same(t, "task diff", [2]any{d.ID, d.Stat}, [2]any{"k3f9qa", true})
	m := mustParse(t, f, NewCmdTaskMerge, "k3f9qa", "--squash", "-m", "one commit")
	same(t, "task merge", [3]any{m.ID, m.Input.Squash, m.Input.Message}, [3]any{"k3f9qa", true, "one commit"})
	same(t, "task discard", mustParse(t, f, NewCmdTaskDiscard, "k3f9qa", "--yes").Yes, true)
	refused(t, f, NewCmdTaskDiscard, "pass --yes", "k3f9qa")
}

func TestNewCmdTaskReviewFlags(t *testing.T) {
	f := testFactory(t, "", nil)
	got := mustParse(t, f, NewCmdTaskReview, "k3f9qa", "--comment", "a.go:12", "use a constant", "--comment", "dir:x/b.go:3-5", "drop this", "-m", "close", "--interrupt")
	same(t, "task review --comment", [5]any{got.ID, got.Places, got.Texts, got.Message, got.Interrupt},
		[5]any{"k3f9qa", []string{"a.go:12", "dir:x/b.go:3-5"}, []string{"use a constant", "drop this"}, "close", true})
	same(t, "task review --list", mustParse(t, f, NewCmdTaskReview, "k3f9qa", "--list").List, true)
	refused(t, f, NewCmdTaskReview, "takes a task ID")
	refused(t, f, NewCmdTaskReview, "at least one --comment", "k3f9qa")
	refused(t, f, NewCmdTaskReview, "followed by its TEXT", "k3f9qa", "--comment", "a.go:1")
	refused(t, f, NewCmdTaskReview, "--list takes only the task ID", "k3f9qa", "--list", "--comment", "a.go:1", "x")

	// The last colon splits a place; a range must not run backwards.
	c, err := parsePlace("dir:x/b.go:3-5")
	same(t, "parsePlace range", [4]any{c.File, c.Line, c.EndLine, err}, [4]any{"dir:x/b.go", 3, 5, error(nil)})
	for _, bad := range []string{"a.go", "a.go:", ":3", "a.go:0", "a.go:x", "a.go:5-4", "a.go:3-"} {
		if _, err := parsePlace(bad); err == nil {
			t.Errorf("parsePlace(%q) accepted", bad)
		}
	}
}

func TestNewCmdTaskPushFlags(t *testing.T) {
	f := testFactory(t, "", nil)
	got := mustParse(t, f, NewCmdTaskPush, "k3f9qa", "--remote", "upstream")
	same(t, "task push --remote", [2]string{got.ID, got.Input.Remote}, [2]string{"k3f9qa", "upstream"})
	same(t, "task push", mustParse(t, f, NewCmdTaskPush, "k3f9qa").Input.Remote, "")
	refused(t, f, NewCmdTaskPush, "one task ID")
}

func TestNewCmdTaskPRFlags(t *testing.T) {
	f := testFactory(t, "", nil)
	got := mustParse(t, f, NewCmdTaskPR, "k3f9qa", "--draft", "--base", "release", "--remote", "fork")
	same(t, "task pr --draft --base --remote", [2]any{got.ID, got.Input}, [2]any{"k3f9qa", api.PullRequestInput{Remote: "fork", Base: "release", Draft: true}})
	refused(t, f, NewCmdTaskPR, "one task ID")
}
