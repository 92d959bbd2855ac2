package engine_test

// The task rules (create, list, edit, status moves, archive), in process:
// a real store on a temp file and an engine over it; no agent ever starts.

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/engine"
	"github.com/kandev/kandev/store"
)

type engineEnv struct {
	t    *testing.T
	ctx  context.Context
	dir  string
	db   *store.DB
	eng  *engine.Engine
	cwd  string
	path string
}

// newEngineEnv opens a fresh store and an engine over it.
func newEngineEnv(t *testing.T) *engineEnv {
	t.Helper()
	dir := t.TempDir()
	env := &engineEnv{t: t, ctx: context.Background(), dir: dir, cwd: filepath.Join(dir, "work"), path: filepath.Join(dir, "kandev.db")}
	if err := os.Mkdir(env.cwd, 0o755); err != nil {
		t.Fatal(err)
	}
	env.open()
	return env
}

func (env *engineEnv) open() {
	env.t.Helper()
	db, err := store.Open(env.ctx, env.path)
	if err != nil {
		env.t.Fatal(err)
	}
	eng, err := engine.New(env.ctx, engine.Options{DB: db, Home: core.Home{Dir: env.dir}})
	if err != nil {
		db.Close()
		env.t.Fatal(err)
	}
	env.db, env.eng = db, eng
	env.t.Cleanup(env.close)
}

func (env *engineEnv) close() {
	if env.eng != nil {
		env.eng.Close()
		env.db.Close()
		env.eng, env.db = nil, nil
	}
}

// restart closes the engine and store and opens them again on the same file.
func (env *engineEnv) restart() {
	env.t.Helper()
	env.close()
	env.open()
}

func (env *engineEnv) create(in api.CreateTaskInput) core.Task {
	env.t.Helper()
	if in.CWD == "" {
		in.CWD = env.cwd
	}
	task, err := env.eng.Tasks.CreateTask(env.ctx, in)
	if err != nil {
		env.t.Fatalf("create %+v: %v", in, err)
	}
	return task
}

func (env *engineEnv) get(id string) core.Task {
	env.t.Helper()
	task, err := env.eng.Tasks.GetTask(env.ctx, id)
	if err != nil {
		env.t.Fatalf("get %s: %v", id, err)
	}
	return task
}

func (env *engineEnv) count(all bool) int {
	env.t.Helper()
	ts, err := env.eng.Tasks.ListTasks(env.ctx, api.ListTasksInput{All: all})
	if err != nil {
		env.t.Fatal(err)
	}
	return len(ts)
}

// wantErr checks an error's code and that its message says each of says.
func i2WantErr(t *testing.T, err error, code core.Code, says ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %s saying %q", code, says)
	}
	if got := core.CodeOf(err); got != code {
		t.Fatalf("error %q has code %s, want %s", err, got, code)
	}
	for _, s := range says {
		if !strings.Contains(err.Error(), s) {
			t.Fatalf("error %q does not say %q", err, s)
		}
	}
}

func i2Ptr[T any](v T) *T { return &v }

// --- autopilot ----------------------------------------------------------------

func TestAutopilotIsFixedThroughEveryWritePath(t *testing.T) {
	env := newEngineEnv(t)
	auto := env.create(api.CreateTaskInput{Title: "Split the auth module", Autopilot: true})
	plain := env.create(api.CreateTaskInput{Title: "plain"})
	if !auto.Autopilot || plain.Autopilot {
		t.Fatalf("created autopilot %v and %v", auto.Autopilot, plain.Autopilot)
	}

	// EditTask: naming autopilot at all is refused, even with its current
	// value, even alongside a legal change, and nothing changes.
	for _, c := range []struct {
		id string
		in api.EditTaskInput
	}{
		{auto.ID, api.EditTaskInput{Autopilot: i2Ptr(false)}},
		{auto.ID, api.EditTaskInput{Autopilot: i2Ptr(true)}},
		{plain.ID, api.EditTaskInput{Autopilot: i2Ptr(true)}},
		{auto.ID, api.EditTaskInput{Title: i2Ptr("renamed"), Autopilot: i2Ptr(false)}},
	} {
		_, err := env.eng.Tasks.EditTask(env.ctx, c.id, c.in)
		i2WantErr(t, err, core.CodeValidation, "autopilot is fixed at creation")
	}
	if got := env.get(auto.ID); got.Title != "Split the auth module" || !got.Autopilot {
		t.Fatalf("a refused edit changed the task: %+v", got)
	}

	// Every other write path leaves it alone.
	if _, err := env.eng.Tasks.EditTask(env.ctx, auto.ID, api.EditTaskInput{Title: i2Ptr("renamed"), Description: i2Ptr("d")}); err != nil {
		t.Fatal(err)
	}
	for _, st := range []core.Status{core.StatusInProgress, core.StatusReview, core.StatusDone, core.StatusTodo, core.StatusCancelled} {
		if _, err := env.eng.Tasks.SetTaskStatus(env.ctx, auto.ID, st); err != nil {
			t.Fatalf("status %s: %v", st, err)
		}
		if _, err := env.eng.Tasks.SetTaskStatus(env.ctx, plain.ID, st); err != nil {
			t.Fatalf("status %s: %v", st, err)
		}
	}
	for range 2 {
		if _, err := env.eng.Tasks.ArchiveTask(env.ctx, auto.ID, api.ArchiveTaskInput{}); err != nil {
			t.Fatal(err)
		}
	}
	// The store refuses it below the engine too.
	if err := env.db.SetTaskAutopilot(env.ctx, auto.ID, false); !errors.Is(err, store.ErrConstraint) {
		t.Fatalf("store SetTaskAutopilot: %v", err)
	}
	if err := env.db.SetTaskAutopilot(env.ctx, plain.ID, true); !errors.Is(err, store.ErrConstraint) {
		t.Fatalf("store SetTaskAutopilot: %v", err)
	}

	env.restart()
	if got := env.get(auto.ID); !got.Autopilot || got.Title != "renamed" || !got.Archived {
		t.Fatalf("after restart: %+v", got)
	}
	if got := env.get(plain.ID); got.Autopilot {
		t.Fatalf("after restart the plain task is autopilot: %+v", got)
	}
}

func TestAutopilotIsNeverInherited(t *testing.T) {
	env := newEngineEnv(t)
	root := env.create(api.CreateTaskInput{Title: "root", Autopilot: true})
	child := env.create(api.CreateTaskInput{Title: "child", ParentID: root.ID})
	autoChild := env.create(api.CreateTaskInput{Title: "auto child", ParentID: root.ID, Autopilot: true})
	grand := env.create(api.CreateTaskInput{Title: "grandchild", ParentID: autoChild.ID})
	plainRoot := env.create(api.CreateTaskInput{Title: "plain root"})
	autoUnderPlain := env.create(api.CreateTaskInput{Title: "auto under plain", ParentID: plainRoot.ID, Autopilot: true})
	for _, c := range []struct {
		task core.Task
		want bool
	}{{root, true}, {child, false}, {autoChild, true}, {grand, false}, {plainRoot, false}, {autoUnderPlain, true}} {
		if c.task.Autopilot != c.want {
			t.Errorf("%s: autopilot %v, want %v", c.task.Title, c.task.Autopilot, c.want)
		}
		if got := env.get(c.task.ID); got.Autopilot != c.want {
			t.Errorf("%s read back: autopilot %v, want %v", c.task.Title, got.Autopilot, c.want)
		}
	}
}

func TestAutopilotNeedsAnMCPProfile(t *testing.T) {
	env := newEngineEnv(t)
	if _, err := env.eng.Roles.AddProfile(env.ctx, core.Profile{Name: "plain", Command: "my-agent", MCP: false}); err != nil {
		t.Fatal(err)
	}
	before := env.count(true)
	_, err := env.eng.Tasks.CreateTask(env.ctx, api.CreateTaskInput{Title: "x", Profile: "plain", Autopilot: true, CWD: env.cwd})
	i2WantErr(t, err, core.CodeValidation, "profile plain", "autopilot", "mcp: false", "MCP server")
	if env.count(true) != before {
		t.Fatal("a refused create left a task behind")
	}
	// The same profile runs normal tasks.
	normal := env.create(api.CreateTaskInput{Title: "normal", Profile: "plain"})
	if normal.Profile != "plain" || normal.Autopilot {
		t.Fatalf("normal task: %+v", normal)
	}
	// A child takes its parent's profile when it names none, and is
	// refused for the same reason.
	_, err = env.eng.Tasks.CreateTask(env.ctx, api.CreateTaskInput{Title: "kid", ParentID: normal.ID, Autopilot: true, CWD: env.cwd})
	i2WantErr(t, err, core.CodeValidation, "profile plain", "mcp: false")

	// Overriding a built-in with mcp: false refuses autopilot on it;
	// removing the override restores the built-in.
	if _, err := env.eng.Roles.AddProfile(env.ctx, core.Profile{Name: "claude", Command: "claude-wrapper", MCP: false}); err != nil {
		t.Fatal(err)
	}
	_, err = env.eng.Tasks.CreateTask(env.ctx, api.CreateTaskInput{Title: "x", Profile: "claude", Autopilot: true, CWD: env.cwd})
	i2WantErr(t, err, core.CodeValidation, "profile claude", "mcp: false")
	if _, err := env.eng.Roles.RemoveProfile(env.ctx, "claude", api.RemoveProfileInput{}); err != nil {
		t.Fatal(err)
	}
	auto := env.create(api.CreateTaskInput{Title: "x", Profile: "claude", Autopilot: true})
	if !auto.Autopilot || auto.Profile != "claude" {
		t.Fatalf("autopilot on the restored built-in: %+v", auto)
	}
}

// --- parents ------------------------------------------------------------------

func TestParentMustExistAndBeLive(t *testing.T) {
	env := newEngineEnv(t)
	_, err := env.eng.Tasks.CreateTask(env.ctx, api.CreateTaskInput{Title: "orphan", ParentID: "zzzzzz", CWD: env.cwd})
	i2WantErr(t, err, core.CodeValidation, "parent task zzzzzz does not exist")

	root := env.create(api.CreateTaskInput{Title: "root"})
	// A unique prefix names the parent; the child records the full id.
	kid := env.create(api.CreateTaskInput{Title: "kid", ParentID: root.ID[:4]})
	if kid.ParentID != root.ID {
		t.Fatalf("child of prefix %s has parent %q, want %s", root.ID[:4], kid.ParentID, root.ID)
	}
	if _, err := env.eng.Tasks.ArchiveTask(env.ctx, root.ID, api.ArchiveTaskInput{}); err != nil {
		t.Fatal(err)
	}
	before := env.count(true)
	_, err = env.eng.Tasks.CreateTask(env.ctx, api.CreateTaskInput{Title: "late", ParentID: root.ID, CWD: env.cwd})
	i2WantErr(t, err, core.CodeValidation, root.ID, "archived")
	if env.count(true) != before {
		t.Fatal("a refused create left a task behind")
	}
	// The live child of an archived parent still takes children.
	env.create(api.CreateTaskInput{Title: "grandchild", ParentID: kid.ID})
}

// Cycles cannot happen: a parent must exist before its child, and the
// parent can never change afterwards (there is no edit for it, and the
// store's trigger refuses every other write).
func TestNoCycles(t *testing.T) {
	env := newEngineEnv(t)
	a := env.create(api.CreateTaskInput{Title: "a"})
	b := env.create(api.CreateTaskInput{Title: "b", ParentID: a.ID})
	c := env.create(api.CreateTaskInput{Title: "c", ParentID: b.ID})
	for _, move := range []struct{ id, parent string }{{a.ID, c.ID}, {a.ID, a.ID}, {b.ID, c.ID}, {c.ID, ""}} {
		err := env.db.SetTaskParent(env.ctx, move.id, move.parent)
		if !errors.Is(err, store.ErrConstraint) || !strings.Contains(err.Error(), "parent is fixed at creation") {
			t.Fatalf("re-parenting %s under %q: %v", move.id, move.parent, err)
		}
	}
	env.restart()
	tasks, err := env.eng.Tasks.ListTasks(env.ctx, api.ListTasksInput{All: true})
	if err != nil {
		t.Fatal(err)
	}
	parent := map[string]string{}
	for _, tk := range tasks {
		parent[tk.ID] = tk.ParentID
	}
	for id := range parent {
		seen := map[string]bool{}
		for cur := id; cur != ""; cur = parent[cur] {
			if seen[cur] {
				t.Fatalf("cycle through %s", cur)
			}
			seen[cur] = true
		}
	}
	if parent[a.ID] != "" || parent[b.ID] != a.ID || parent[c.ID] != b.ID {
		t.Fatalf("tree changed: %v", parent)
	}
}

// --- archive ------------------------------------------------------------------

func TestArchiveIsIdempotent(t *testing.T) {
	env := newEngineEnv(t)
	task := env.create(api.CreateTaskInput{Title: "done with"})
	first, err := env.eng.Tasks.ArchiveTask(env.ctx, task.ID, api.ArchiveTaskInput{})
	if err != nil {
		t.Fatal(err)
	}
	if !first.Archived || first.ArchivedAt.IsZero() {
		t.Fatalf("archived: %+v", first)
	}
	time.Sleep(2 * time.Millisecond) // a second archive must not move the time
	second, err := env.eng.Tasks.ArchiveTask(env.ctx, task.ID, api.ArchiveTaskInput{})
	if err != nil {
		t.Fatalf("archiving twice: %v", err)
	}
	if !second.Archived || !second.ArchivedAt.Equal(first.ArchivedAt) {
		t.Fatalf("second archive moved archived_at: %v → %v", first.ArchivedAt, second.ArchivedAt)
	}
	env.restart()
	got := env.get(task.ID)
	if !got.Archived || !got.ArchivedAt.Equal(first.ArchivedAt) {
		t.Fatalf("after restart: %+v", got)
	}
	if _, err := env.eng.Tasks.ArchiveTask(env.ctx, "nope22", api.ArchiveTaskInput{}); core.CodeOf(err) != core.CodeNotFound {
		t.Fatalf("archiving a missing task: %v", err)
	}
	// An archived task is read-only: edits and status moves are refused
	// and change nothing.
	title := "renamed"
	if _, err := env.eng.Tasks.EditTask(env.ctx, task.ID, api.EditTaskInput{Title: &title}); core.CodeOf(err) != core.CodeConflict {
		t.Fatalf("editing an archived task: %v", err)
	}
	if _, err := env.eng.Tasks.SetTaskStatus(env.ctx, task.ID, core.StatusInProgress); core.CodeOf(err) != core.CodeConflict {
		t.Fatalf("moving an archived task: %v", err)
	}
	if got := env.get(task.ID); got.Title != "done with" || got.Status != core.StatusTodo {
		t.Fatalf("refused writes changed the task: %q %s", got.Title, got.Status)
	}
}

// --- profiles, cwd, titles ------------------------------------------------------

func TestUnknownProfileIsRefused(t *testing.T) {
	env := newEngineEnv(t)
	_, err := env.eng.Tasks.CreateTask(env.ctx, api.CreateTaskInput{Title: "x", Profile: "nope", CWD: env.cwd})
	i2WantErr(t, err, core.CodeValidation, "unknown profile nope")
	if env.count(true) != 0 {
		t.Fatal("a refused create left a task behind")
	}
	// No profile means the default one.
	if got := env.create(api.CreateTaskInput{Title: "x"}); got.Profile != core.DefaultProfile {
		t.Fatalf("default profile %q", got.Profile)
	}
}

func TestWorkingDirectory(t *testing.T) {
	env := newEngineEnv(t)
	file := filepath.Join(env.dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		cwd  string
		says string
	}{
		{filepath.Join(env.dir, "missing"), "does not exist"},
		{file, "not a directory"},
		{"relative/dir", "absolute"},
	} {
		_, err := env.eng.Tasks.CreateTask(env.ctx, api.CreateTaskInput{Title: "x", CWD: c.cwd})
		i2WantErr(t, err, core.CodeValidation, c.says)
	}
	root := env.create(api.CreateTaskInput{Title: "root", CWD: env.cwd + "/../work/./"})
	if root.CWD != env.cwd {
		t.Fatalf("cwd %q, want it cleaned to %q", root.CWD, env.cwd)
	}
	// A child without a cwd works where its parent does.
	kid, err := env.eng.Tasks.CreateTask(env.ctx, api.CreateTaskInput{Title: "kid", ParentID: root.ID})
	if err != nil || kid.CWD != env.cwd {
		t.Fatalf("child cwd %q, %v", kid.CWD, err)
	}
	// A root without a cwd works where the caller is.
	wd, _ := os.Getwd()
	here, err := env.eng.Tasks.CreateTask(env.ctx, api.CreateTaskInput{Title: "here"})
	if err != nil || here.CWD != wd {
		t.Fatalf("default cwd %q, want %q (%v)", here.CWD, wd, err)
	}
}

func TestTitleRules(t *testing.T) {
	env := newEngineEnv(t)
	for _, in := range []api.CreateTaskInput{{Title: ""}, {Title: "   \t\n"}, {Title: "", Prompt: "  \n "}} {
		in.CWD = env.cwd
		_, err := env.eng.Tasks.CreateTask(env.ctx, in)
		i2WantErr(t, err, core.CodeValidation, "title")
	}
	if got := env.create(api.CreateTaskInput{Title: "  padded  ", Description: "  spaced\n"}); got.Title != "padded" || got.Description != "spaced" || got.TitlePending {
		t.Fatalf("trimmed: %+v", got)
	}
	max := strings.Repeat("é", 200)
	if got := env.create(api.CreateTaskInput{Title: max}); got.Title != max {
		t.Fatal("a 200-character title was changed")
	}
	_, err := env.eng.Tasks.CreateTask(env.ctx, api.CreateTaskInput{Title: max + "x", CWD: env.cwd})
	i2WantErr(t, err, core.CodeValidation, "201 characters")

	// No title: the prompt's first line stands in, marked pending.
	got := env.create(api.CreateTaskInput{Prompt: "\n  Fix the login bug  \nthen the rest"})
	if got.Title != "Fix the login bug" || !got.TitlePending || got.Queued != 1 {
		t.Fatalf("title from prompt: %+v", got)
	}
	long := env.create(api.CreateTaskInput{Prompt: strings.Repeat("word ", 40)})
	if n := utf8.RuneCountInString(long.Title); n != 60 || !strings.HasSuffix(long.Title, "…") {
		t.Fatalf("long prompt title %q (%d runes)", long.Title, n)
	}

	// Edits follow the same rules.
	task := env.create(api.CreateTaskInput{Title: "edit me", Description: "old"})
	for _, c := range []struct {
		in   api.EditTaskInput
		says string
	}{
		{api.EditTaskInput{}, "nothing to change"},
		{api.EditTaskInput{Title: i2Ptr("  ")}, "title cannot be empty"},
		{api.EditTaskInput{Title: i2Ptr(max + "x")}, "201 characters"},
	} {
		_, err := env.eng.Tasks.EditTask(env.ctx, task.ID, c.in)
		i2WantErr(t, err, core.CodeValidation, c.says)
	}
	edited, err := env.eng.Tasks.EditTask(env.ctx, task.ID, api.EditTaskInput{Description: i2Ptr("  new  ")})
	if err != nil || edited.Title != "edit me" || edited.Description != "new" {
		t.Fatalf("description edit: %+v %v", edited, err)
	}
	edited, err = env.eng.Tasks.EditTask(env.ctx, task.ID, api.EditTaskInput{Title: i2Ptr(" better ")})
	if err != nil || edited.Title != "better" || edited.Description != "new" || edited.UpdatedAt.Before(task.UpdatedAt) {
		t.Fatalf("title edit: %+v %v", edited, err)
	}
}

// --- ids and listing ------------------------------------------------------------

// seedI2 writes tasks with chosen ids straight into the store, then starts
// the engine over them.
func seedI2(t *testing.T, ids ...string) *engineEnv {
	t.Helper()
	env := newEngineEnv(t)
	env.close()
	db, err := store.Open(env.ctx, env.path)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now().UTC()
	for i, id := range ids {
		tk := store.Task{ID: id, Title: "task " + id, CWD: env.cwd, Profile: "mock", Status: "todo",
			CreatedBy: "person:operator", CreatedAt: at.Add(time.Duration(i) * time.Millisecond)}
		tk.UpdatedAt = tk.CreatedAt
		if err := db.InsertTask(env.ctx, tk); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	env.open()
	return env
}

func TestIDPrefixResolution(t *testing.T) {
	env := seedI2(t, "ab2345", "ab2399", "ac2345", "x23456")
	for ref, want := range map[string]string{
		"ab2345": "ab2345", "ab23": "", "ab234": "ab2345", "ab239": "ab2399", "ac": "ac2345", "x2": "x23456",
		" x23456 ": "x23456",
	} {
		got, err := env.eng.Tasks.GetTask(env.ctx, ref)
		if want == "" {
			i2WantErr(t, err, core.CodeValidation, "ambiguous", "ab2345", "ab2399")
			continue
		}
		if err != nil || got.ID != want {
			t.Errorf("GetTask(%q) = %s, %v; want %s", ref, got.ID, err, want)
		}
	}
	_, err := env.eng.Tasks.GetTask(env.ctx, "a")
	i2WantErr(t, err, core.CodeNotFound, "task a not found") // one character is too short to guess from
	_, err = env.eng.Tasks.GetTask(env.ctx, "zz")
	i2WantErr(t, err, core.CodeNotFound, "task zz not found")
	_, err = env.eng.Tasks.GetTask(env.ctx, "ab2345x")
	i2WantErr(t, err, core.CodeNotFound, "not found")
	_, err = env.eng.Tasks.GetTask(env.ctx, "  ")
	i2WantErr(t, err, core.CodeValidation, "task id is required")
	// Every verb that takes an id resolves it the same way.
	if _, err := env.eng.Tasks.ArchiveTask(env.ctx, "ab23", api.ArchiveTaskInput{}); core.CodeOf(err) != core.CodeValidation {
		t.Fatalf("archive of an ambiguous prefix: %v", err)
	}
	if got, err := env.eng.Tasks.SetTaskStatus(env.ctx, "ac", core.StatusReview); err != nil || got.ID != "ac2345" {
		t.Fatalf("status by prefix: %+v %v", got, err)
	}
	if got, err := env.eng.Tasks.EditTask(env.ctx, "x2", api.EditTaskInput{Title: i2Ptr("renamed")}); err != nil || got.ID != "x23456" {
		t.Fatalf("edit by prefix: %+v %v", got, err)
	}
}

func TestListingOrderAndArchived(t *testing.T) {
	env := newEngineEnv(t)
	a := env.create(api.CreateTaskInput{Title: "a"})
	b := env.create(api.CreateTaskInput{Title: "b"})
	a1 := env.create(api.CreateTaskInput{Title: "a1", ParentID: a.ID})
	a1x := env.create(api.CreateTaskInput{Title: "a1x", ParentID: a1.ID})
	b1 := env.create(api.CreateTaskInput{Title: "b1", ParentID: b.ID})
	a2 := env.create(api.CreateTaskInput{Title: "a2", ParentID: a.ID})
	if _, err := env.eng.Tasks.ArchiveTask(env.ctx, a1.ID, api.ArchiveTaskInput{}); err != nil {
		t.Fatal(err)
	}
	titles := func(in api.ListTasksInput) []string {
		t.Helper()
		ts, err := env.eng.Tasks.ListTasks(env.ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, tk := range ts {
			out = append(out, tk.Title)
		}
		return out
	}
	check := func(in api.ListTasksInput, want ...string) {
		t.Helper()
		if got := titles(in); !slices.Equal(got, want) {
			t.Errorf("list %+v: %v, want %v", in, got, want)
		}
	}
	// Creation order: a parent always comes before its children.
	check(api.ListTasksInput{}, "a", "b", "a1x", "b1", "a2")
	check(api.ListTasksInput{All: true}, "a", "b", "a1", "a1x", "b1", "a2")
	check(api.ListTasksInput{Root: a.ID, All: true}, "a", "a1", "a1x", "a2")
	check(api.ListTasksInput{Root: a.ID}, "a", "a2") // an archived task hides its subtree
	check(api.ListTasksInput{Root: b1.ID}, "b1")
	if _, err := env.eng.Tasks.ListTasks(env.ctx, api.ListTasksInput{Root: "nope22"}); core.CodeOf(err) != core.CodeNotFound {
		t.Fatalf("list under a missing root: %v", err)
	}
	// The same after a restart (the cache is rebuilt from the store).
	env.restart()
	check(api.ListTasksInput{}, "a", "b", "a1x", "b1", "a2")
	check(api.ListTasksInput{All: true}, "a", "b", "a1", "a1x", "b1", "a2")
	_ = a1x
	_ = a2
}

// --- status -------------------------------------------------------------------

func TestSetTaskStatus(t *testing.T) {
	env := newEngineEnv(t)
	task := env.create(api.CreateTaskInput{Title: "flow"})
	for _, st := range []core.Status{core.StatusInProgress, core.StatusReview, core.StatusDone} {
		got, err := env.eng.Tasks.SetTaskStatus(env.ctx, task.ID, st)
		if err != nil || got.Status != st {
			t.Fatalf("→ %s: %+v %v", st, got.Status, err)
		}
	}
	_, err := env.eng.Tasks.SetTaskStatus(env.ctx, task.ID, core.StatusReview)
	i2WantErr(t, err, core.CodeConflict, task.ID, "from done to review")
	_, err = env.eng.Tasks.SetTaskStatus(env.ctx, task.ID, core.StatusCancelled)
	i2WantErr(t, err, core.CodeConflict, "from done to cancelled")
	if got := env.get(task.ID); got.Status != core.StatusDone {
		t.Fatalf("a refused move changed the status to %s", got.Status)
	}
	// Staying put is allowed and changes nothing.
	if got, err := env.eng.Tasks.SetTaskStatus(env.ctx, task.ID, core.StatusDone); err != nil || got.Status != core.StatusDone {
		t.Fatalf("done → done: %v", err)
	}
	_, err = env.eng.Tasks.SetTaskStatus(env.ctx, task.ID, "finished")
	i2WantErr(t, err, core.CodeValidation, "unknown status")
	// Reopening is the way out of done; cancelled only goes back to todo.
	if _, err := env.eng.Tasks.SetTaskStatus(env.ctx, task.ID, core.StatusTodo); err != nil {
		t.Fatal(err)
	}
	if _, err := env.eng.Tasks.SetTaskStatus(env.ctx, task.ID, core.StatusCancelled); err != nil {
		t.Fatal(err)
	}
	_, err = env.eng.Tasks.SetTaskStatus(env.ctx, task.ID, core.StatusInProgress)
	i2WantErr(t, err, core.CodeConflict, "from cancelled to in_progress")
	env.restart()
	if got := env.get(task.ID); got.Status != core.StatusCancelled {
		t.Fatalf("after restart: %s", got.Status)
	}
}

func TestCreatedTaskShape(t *testing.T) {
	env := newEngineEnv(t)
	before := time.Now().UTC()
	task := env.create(api.CreateTaskInput{Title: "shape", Description: "d"})
	if len(task.ID) != core.IDLength || task.Status != core.StatusTodo || !task.CreatedBy.IsOperator() ||
		task.Archived || !task.ArchivedAt.IsZero() || task.ParentID != "" || task.Session != nil || task.Queued != 0 {
		t.Fatalf("new task: %+v", task)
	}
	if task.CreatedAt.Before(before) || !task.UpdatedAt.Equal(task.CreatedAt) {
		t.Fatalf("timestamps: %v %v (before %v)", task.CreatedAt, task.UpdatedAt, before)
	}
	if got := env.get(task.ID); got.ID != task.ID || !got.CreatedAt.Equal(task.CreatedAt) {
		t.Fatalf("read back: %+v", got)
	}
}
