package core

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestResolveHomePrecedence(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("HOME", filepath.Join(tmp, "user"))
	t.Setenv("KANDEV_HOME", filepath.Join(tmp, "env"))
	t.Setenv("XDG_DATA_HOME", filepath.Join(tmp, "xdg"))

	check := func(flag, want string) {
		t.Helper()
		h, err := ResolveHome(flag)
		if err != nil {
			t.Fatal(err)
		}
		if h.Dir != want {
			t.Fatalf("ResolveHome(%q) = %s, want %s", flag, h.Dir, want)
		}
	}
	check(filepath.Join(tmp, "flag"), filepath.Join(tmp, "flag")) // the flag beats everything
	check("", filepath.Join(tmp, "env"))                          // then $KANDEV_HOME
	t.Setenv("KANDEV_HOME", "")
	check("", filepath.Join(tmp, "xdg", "kandev")) // then $XDG_DATA_HOME/kandev
	t.Setenv("XDG_DATA_HOME", "")
	check("", filepath.Join(tmp, "user", ".local", "share", "kandev")) // then ~/.local/share/kandev

	// A relative flag or variable becomes absolute.
	t.Chdir(tmp)
	check("rel/home", filepath.Join(tmp, "rel", "home"))
	t.Setenv("KANDEV_HOME", "relenv")
	check("", filepath.Join(tmp, "relenv"))
}

func TestHomePaths(t *testing.T) {
	h := Home{Dir: "/h"}
	for got, want := range map[string]string{
		h.DB(): "/h/kandev.db", h.Socket(): "/h/kandev.sock", h.Lock(): "/h/daemon.lock",
		h.DaemonLog(): "/h/daemon.log", h.LogDir(): "/h/logs", h.SessionLog("s1"): "/h/logs/s1.log",
	} {
		if got != want {
			t.Errorf("%s, want %s", got, want)
		}
	}
}

func TestHomeEnsureIsPrivate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "home")
	h := Home{Dir: dir}
	if err := h.Ensure(); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(dir)
	if err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("home mode %v, %v", st.Mode().Perm(), err)
	}
	if st, err := os.Stat(h.LogDir()); err != nil || !st.IsDir() {
		t.Fatalf("log dir: %v", err)
	}
	// An existing, too-open home is tightened.
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := h.Ensure(); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(dir); st.Mode().Perm() != 0o700 {
		t.Fatalf("home mode %v after Ensure, want 0700", st.Mode().Perm())
	}
}

func TestNewID(t *testing.T) {
	seen := map[string]bool{}
	used := map[rune]bool{}
	for range 20000 {
		id := NewID()
		if len(id) != IDLength {
			t.Fatalf("id %q has length %d, want %d", id, len(id), IDLength)
		}
		for _, r := range id {
			if !strings.ContainsRune(idAlphabet, r) {
				t.Fatalf("id %q has %q outside the alphabet", id, r)
			}
			used[r] = true
		}
		seen[id] = true
	}
	for _, r := range "01ilo" + "ABCDEFGHIJKLMNOPQRSTUVWXYZ" + "-_" {
		if strings.ContainsRune(idAlphabet, r) {
			t.Errorf("alphabet has the easily misread %q", r)
		}
	}
	if len(used) != len(idAlphabet) {
		t.Errorf("20000 ids used %d of %d characters", len(used), len(idAlphabet))
	}
	// 31^6 ids: 20000 draws collide about 0.2 times on average.
	if len(seen) < 19990 {
		t.Errorf("only %d distinct ids in 20000", len(seen))
	}
	if IDLength != 6 {
		t.Errorf("IDLength %d: ids must stay short to type", IDLength)
	}
}

func TestActorRoundTrip(t *testing.T) {
	for _, c := range []struct {
		a    Actor
		want string
	}{
		{OperatorActor(), "person:operator"},
		{Actor{Kind: ActorPerson, Name: "alice"}, "person:alice"},
		{Actor{Kind: ActorAgent, TaskID: "k3f9qa", SessionID: "s1"}, "task:k3f9qa"},
		{Actor{Kind: ActorExternal}, "external"},
		// A handoff's hander is a role: the supersede reason it writes
		// must name it, not "external".
		{Actor{Kind: ActorRole, Name: "eng"}, "role:eng"},
	} {
		if got := c.a.String(); got != c.want {
			t.Errorf("%+v.String() = %q, want %q", c.a, got, c.want)
		}
		back := ParseActor(c.want)
		if back.String() != c.want || back.Kind != c.a.Kind {
			t.Errorf("ParseActor(%q) = %+v", c.want, back)
		}
	}
	if a := ParseActor("person:operator"); !a.IsPerson() || a.Name != Operator {
		t.Errorf("operator parses as %+v", a)
	}
	if a := ParseActor("garbage"); a.Kind != ActorExternal {
		t.Errorf("unknown actor parses as %+v", a)
	}
	if a := ActorFrom(context.Background()); a != OperatorActor() {
		t.Errorf("no actor in context: %+v, want the operator", a)
	}
	agent := Actor{Kind: ActorAgent, TaskID: "k3f9qa"}
	if a := ActorFrom(WithActor(context.Background(), agent)); a != agent {
		t.Errorf("ActorFrom(WithActor) = %+v", a)
	}
}

func TestErrorHelpers(t *testing.T) {
	e := Errorf(CodeNotFound, "task %s not found", "x")
	if e.Error() != "task x not found" || CodeOf(e) != CodeNotFound {
		t.Fatalf("%v %s", e, CodeOf(e))
	}
	wrapped := errors.Join(errors.New("ctx"), e)
	if CodeOf(wrapped) != CodeNotFound || AsError(wrapped) != e {
		t.Fatal("a wrapped *Error loses its code")
	}
	plain := errors.New("boom")
	if CodeOf(plain) != CodeInternal || AsError(plain).Message != "boom" || AsError(plain).Code != CodeInternal {
		t.Fatal("a plain error is not internal")
	}
	d := e.WithDetails(map[string]int{"n": 1})
	if e.Details != nil || d.Details == nil || d.Message != e.Message {
		t.Fatal("WithDetails must copy")
	}
}

// The wire shape of a task: every field the issue lists, parent_id and
// archived_at null when empty.
func TestTaskJSONShape(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	root := Task{ID: "k3f9qa", Title: "Split the auth module", Description: "d", Status: StatusTodo, Autopilot: true,
		Profile: "claude", CWD: "/src", CreatedBy: ParseBy("person:operator"), CreatedAt: at, UpdatedAt: at}
	b, err := json.Marshal(root)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"id", "title", "description", "parent_id", "status", "autopilot", "profile", "cwd",
		"created_by", "created_at", "updated_at", "archived", "archived_at"} {
		if _, ok := m[f]; !ok {
			t.Errorf("task JSON has no %q: %s", f, b)
		}
	}
	if m["parent_id"] != nil || m["archived_at"] != nil {
		t.Errorf("a live root must have parent_id and archived_at null: %s", b)
	}
	if m["autopilot"] != true || m["status"] != "todo" || m["id"] != "k3f9qa" || m["created_at"] != "2026-01-02T03:04:05.000000006Z" {
		t.Errorf("values: %s", b)
	}

	child := root
	child.ID, child.ParentID, child.Autopilot = "c41d22", "k3f9qa", false
	child.Archived, child.ArchivedAt = true, at.Add(time.Hour)
	b, _ = json.Marshal(child)
	m = nil
	_ = json.Unmarshal(b, &m)
	if m["parent_id"] != "k3f9qa" || m["archived_at"] != "2026-01-02T04:04:05.000000006Z" || m["archived"] != true || m["autopilot"] != false {
		t.Errorf("child: %s", b)
	}

	// Unmarshal reads the wire shape back to the same task.
	for _, in := range []Task{root, child} {
		b1, _ := json.Marshal(in)
		var back Task
		if err := json.Unmarshal(b1, &back); err != nil {
			t.Fatal(err)
		}
		if back.ID != in.ID || back.ParentID != in.ParentID || !back.ArchivedAt.Equal(in.ArchivedAt) ||
			back.Autopilot != in.Autopilot || !back.CreatedAt.Equal(in.CreatedAt) {
			t.Errorf("round trip of %s: %+v", in.ID, back)
		}
		b2, _ := json.Marshal(back)
		if string(b1) != string(b2) {
			t.Errorf("round trip changed the JSON:\n%s\n%s", b1, b2)
		}
	}
}

func TestResolveHomeResolvesLinks(t *testing.T) {
	tmp := t.TempDir()
	real := filepath.Join(tmp, "real")
	if err := os.Mkdir(real, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, filepath.Join(tmp, "link")); err != nil {
		t.Fatal(err)
	}
	for _, spelling := range []string{filepath.Join(tmp, "link"), filepath.Join(tmp, "link", "..", "real"), real} {
		h, err := ResolveHome(spelling)
		if err != nil || h.Dir != real {
			t.Fatalf("ResolveHome(%s) = %s, %v; want %s", spelling, h.Dir, err, real)
		}
	}
	// Not made yet: the existing part is resolved, the rest kept.
	h, err := ResolveHome(filepath.Join(tmp, "link", "later", "home"))
	if err != nil || h.Dir != filepath.Join(real, "later", "home") {
		t.Fatalf("a home not made yet: %s, %v", h.Dir, err)
	}
}
