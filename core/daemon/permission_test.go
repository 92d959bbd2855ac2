package daemon_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/daemon/daemontest"
)

// writeConfig writes the test daemon's config.toml (KANDEV_CONFIG points
// into its home); the daemon reads it at every permission request.
func writeConfig(t *testing.T, d *daemontest.Daemon, body string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(d.Home.Dir, "config.toml"), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

// showTask reads a task as `kandev task show --json` prints it.
func showTask(t *testing.T, d *daemontest.Daemon, id string) core.Task {
	t.Helper()
	var task core.Task
	if err := json.Unmarshal([]byte(d.MustRun("task", "show", id, "--json")), &task); err != nil {
		t.Fatal(err)
	}
	return task
}

// waitPermission waits for a pending permission question on the task and
// returns it as `task show --json` shows it.
func waitPermission(t *testing.T, d *daemontest.Daemon, id string) core.QuestionInfo {
	t.Helper()
	var q *core.QuestionInfo
	daemontest.Eventually(t, wait, "a pending permission question on "+id, func() bool {
		q = showTask(t, d, id).PendingQuestion
		return q != nil && q.Kind == core.QuestionPermission && q.Status == core.QuestionPending
	})
	return *q
}

func permissionEntries(t *testing.T, d *daemontest.Daemon, id string) []core.Message {
	t.Helper()
	var out []core.Message
	for _, m := range conversation(t, d, id) {
		if m.Kind == core.MsgPermission {
			out = append(out, m)
		}
	}
	return out
}

func questionEntries(t *testing.T, d *daemontest.Daemon, id string) []core.Message {
	t.Helper()
	var out []core.Message
	for _, m := range conversation(t, d, id) {
		if m.Kind == core.MsgQuestion {
			out = append(out, m)
		}
	}
	return out
}

// waitPermissionEntries waits until the task's conversation holds n
// permission decisions and returns them.
func waitPermissionEntries(t *testing.T, d *daemontest.Daemon, id string, n int) []core.Message {
	t.Helper()
	var got []core.Message
	daemontest.Eventually(t, wait, "permission decisions on "+id, func() bool {
		got = permissionEntries(t, d, id)
		return len(got) >= n
	})
	if len(got) != n {
		t.Fatalf("%d permission decisions, want %d: %v", len(got), n, got)
	}
	return got
}

// With permission = "ask" in config.toml, the mock's permission request is
// the operator's pending question; reject reaches the agent as rejected,
// allow once lets it go on, allow always is not asked again in the task.
func TestPermissionAskFromConfigFile(t *testing.T) {
	d := daemontest.Start(t)
	writeConfig(t, d, "permission = \"ask\"\n")
	task := create(t, d, api.CreateTaskInput{Title: "perm", Start: true,
		Prompt: "mock: permission rm -rf build/\nmock: say after first"})

	q := waitPermission(t, d, task.ID)
	if q.Tool == nil || q.Tool.Title != "rm -rf build/" || q.Tool.Kind != "execute" || q.Tool.Input != `{"command":"rm -rf build/"}` {
		t.Fatalf("question tool %+v", q.Tool)
	}
	if len(q.Questions) != 1 || len(q.Questions[0].Options) != 3 || q.Questions[0].Options[0].Label != "Allow once" ||
		q.Questions[0].Options[1].Label != "Allow always" || q.Questions[0].Options[2].Label != "Reject" {
		t.Fatalf("question options %+v", q.Questions)
	}
	if !strings.Contains(q.Text, "rm -rf build/") {
		t.Fatalf("question text %q", q.Text)
	}
	if tk := showTask(t, d, task.ID); !tk.YourTurn || tk.Session == nil || tk.Session.State != core.SessionRunning {
		t.Fatalf("while asking: your_turn %v, session %+v", tk.YourTurn, tk.Session)
	}
	if saidContains(t, d, task.ID, "after first") {
		t.Fatal("the turn went on before the answer")
	}
	// Free text is not one of the agent's options.
	if r := d.Run("task", "answer", task.ID, "maybe"); r.Code == 0 || !strings.Contains(r.Stderr, "Allow once") {
		t.Fatalf("free-text answer: exit %d, %s", r.Code, r.Stderr)
	}
	d.MustRun("task", "answer", task.ID, "--option", "3")
	waitSaid(t, d, task.ID, "after first")
	if !saidContains(t, d, task.ID, "permission: reject") {
		t.Fatalf("the rejection did not reach the agent: %q", said(t, d, task.ID))
	}
	perms := waitPermissionEntries(t, d, task.ID, 1)
	if !strings.Contains(perms[0].Text, "Reject (reject_once), answered by person:operator") || metaField(perms[0], "selected") != "reject" {
		t.Fatalf("decision recorded as %q (%s)", perms[0].Text, perms[0].Meta)
	}
	if tk := showTask(t, d, task.ID); tk.PendingQuestion != nil && tk.PendingQuestion.Status == core.QuestionPending {
		t.Fatalf("still pending: %+v", tk.PendingQuestion)
	}

	// Allow once: the agent proceeds.
	waitSettled(t, d, task.ID)
	message(t, d, task.ID, "mock: permission ls build/\nmock: say after second")
	waitPermission(t, d, task.ID)
	d.MustRun("task", "answer", task.ID, "--option", "1")
	waitSaid(t, d, task.ID, "after second")
	if !saidContains(t, d, task.ID, "permission: allow\nafter second") {
		t.Fatalf("allow once did not reach the agent: %q", said(t, d, task.ID))
	}

	// Allow always: remembered by the tool kind for the rest of the task.
	waitSettled(t, d, task.ID)
	message(t, d, task.ID, "mock: permission rm -rf dist/\nmock: say after third")
	waitPermission(t, d, task.ID)
	d.MustRun("task", "answer", task.ID, "Allow always")
	waitSaid(t, d, task.ID, "after third")
	waitSettled(t, d, task.ID)
	message(t, d, task.ID, "mock: permission make clean\nmock: say after fourth")
	waitSaid(t, d, task.ID, "after fourth")
	if !saidContains(t, d, task.ID, "permission: allow-always\nafter fourth") {
		t.Fatalf("the remembered allow did not reach the agent: %q", said(t, d, task.ID))
	}
	if n := len(questionEntries(t, d, task.ID)); n != 3 {
		t.Fatalf("%d questions asked, want 3 (the fourth request was remembered)", n)
	}
	perms = waitPermissionEntries(t, d, task.ID, 4)
	if metaField(perms[2], "remember") != "kind:execute" || !strings.Contains(perms[3].Text, "allow always for kind:execute earlier in this task") {
		t.Fatalf("allow always: %q / %q", perms[2].Text, perms[3].Text)
	}

	// Another task is asked again: the memory is the task's.
	other := create(t, d, api.CreateTaskInput{Title: "other", Start: true, Prompt: "mock: permission make clean"})
	waitPermission(t, d, other.ID)
	d.MustRun("task", "answer", other.ID, "--option", "3")
	waitSaid(t, d, other.ID, "permission: reject")
}

// A profile's own policy beats the environment, which beats the file;
// deny answers with the agent's reject option and asks nobody.
func TestPermissionPolicyPrecedence(t *testing.T) {
	d := daemontest.Start(t, daemontest.WithEnv("KANDEV_PERMISSION=allow"))
	writeConfig(t, d, "permission = \"ask\"\n")
	d.MustRun("profile", "add", "asker", "--command", d.Bin, "--arg", "mock-agent", "--permission", "ask")
	d.MustRun("profile", "add", "denier", "--command", d.Bin, "--arg", "mock-agent", "--permission", "deny")
	if r := d.Run("profile", "add", "bad", "--command", d.Bin, "--permission", "maybe"); r.Code == 0 || !strings.Contains(r.Stderr, "allow, deny or ask") {
		t.Fatalf("bad policy accepted: %d %s", r.Code, r.Stderr)
	}
	var p core.Profile
	if err := json.Unmarshal([]byte(d.MustRun("profile", "show", "asker", "--json")), &p); err != nil || p.Permission != "ask" {
		t.Fatalf("profile show: %+v %v", p, err)
	}

	byEnv := create(t, d, api.CreateTaskInput{Title: "env", Start: true, Prompt: "mock: permission rm -rf build/"})
	waitSaid(t, d, byEnv.ID, "permission: allow")
	if e := waitPermissionEntries(t, d, byEnv.ID, 1); !strings.Contains(e[0].Text, "by policy allow ($KANDEV_PERMISSION)") {
		t.Fatalf("env decision %q", e[0].Text)
	}

	denied := create(t, d, api.CreateTaskInput{Title: "deny", Profile: "denier", Start: true, Prompt: "mock: permission rm -rf build/"})
	waitSaid(t, d, denied.ID, "permission: reject")
	if e := waitPermissionEntries(t, d, denied.ID, 1); !strings.Contains(e[0].Text, "Reject (reject_once) by policy deny (profile denier)") {
		t.Fatalf("deny decision %q", e[0].Text)
	}

	asked := create(t, d, api.CreateTaskInput{Title: "ask", Profile: "asker", Start: true, Prompt: "mock: permission rm -rf build/"})
	waitPermission(t, d, asked.ID)
	d.MustRun("task", "answer", asked.ID, "--option", "1")
	waitSaid(t, d, asked.ID, "permission: allow")
	for _, id := range []string{byEnv.ID, denied.ID} {
		if n := len(questionEntries(t, d, id)); n != 0 {
			t.Fatalf("task %s asked %d questions", id, n)
		}
	}
}

// Autopilot tasks never ask a person: the autopilot policy (allow by
// default, a profile's deny) answers even when the normal policy is ask.
// kandev's own MCP tools are allowed without asking.
func TestPermissionAutopilotAndKandevTools(t *testing.T) {
	d := daemontest.Start(t)
	writeConfig(t, d, "permission = \"ask\"\n")
	d.MustRun("profile", "add", "careful", "--command", d.Bin, "--arg", "mock-agent", "--permission", "ask", "--autopilot-permission", "deny")

	auto := create(t, d, api.CreateTaskInput{Title: "auto", Autopilot: true, Start: true, Prompt: "mock: permission rm -rf build/"})
	careful := create(t, d, api.CreateTaskInput{Title: "careful", Autopilot: true, Profile: "careful", Start: true, Prompt: "mock: permission rm -rf build/"})
	own := create(t, d, api.CreateTaskInput{Title: "own", Start: true, Prompt: "mock: mcppermission list_tasks_kandev\nmock: permission rm -rf build/"})

	waitSaid(t, d, auto.ID, "permission: allow")
	if e := waitPermissionEntries(t, d, auto.ID, 1); !strings.Contains(e[0].Text, "by policy allow (autopilot, default)") {
		t.Fatalf("autopilot decision %q", e[0].Text)
	}
	waitSaid(t, d, careful.ID, "permission: reject")
	if e := waitPermissionEntries(t, d, careful.ID, 1); !strings.Contains(e[0].Text, "by policy deny (autopilot, profile careful)") {
		t.Fatalf("careful decision %q", e[0].Text)
	}
	// kandev's tool went through; the shell command after it is asked.
	waitSaid(t, d, own.ID, "permission: allow")
	q := waitPermission(t, d, own.ID)
	if q.Tool == nil || q.Tool.Title != "rm -rf build/" {
		t.Fatalf("asked about %+v", q.Tool)
	}
	if e := permissionEntries(t, d, own.ID); len(e) != 1 || !strings.Contains(e[0].Text, "list_tasks_kandev is kandev's own tool") {
		t.Fatalf("kandev tool decision %v", e)
	}
	d.MustRun("task", "answer", own.ID, "--option", "3")
	waitSaid(t, d, own.ID, "permission: reject")
	for _, id := range []string{auto.ID, careful.ID} {
		if n := len(questionEntries(t, d, id)); n != 0 {
			t.Fatalf("autopilot task %s asked %d questions", id, n)
		}
	}
}

// A stop while the permission question waits answers the agent cancelled,
// leaves no question pending and ends the session cleanly; the task takes
// new input afterwards. A message from the operator supersedes the
// question the same way, and is then delivered.
func TestPermissionStopAndMessageWhilePending(t *testing.T) {
	d := daemontest.Start(t)
	writeConfig(t, d, "permission = \"ask\"\n")
	task := create(t, d, api.CreateTaskInput{Title: "stop", Start: true, Prompt: "mock: permission rm -rf build/\nmock: say never"})
	q := waitPermission(t, d, task.ID)
	pid := showTask(t, d, task.ID).Session.PID
	if out := d.MustRun("task", "stop", task.ID, "--json"); !strings.Contains(out, `"stopped"`) {
		t.Fatalf("stop: %s", out)
	}
	groupGone(t, pid)
	tk := showTask(t, d, task.ID)
	if tk.PendingQuestion != nil {
		t.Fatalf("question left pending after stop: %+v", tk.PendingQuestion)
	}
	if tk.Session == nil || tk.Session.State != core.SessionCancelled {
		t.Fatalf("session after stop: %+v", tk.Session)
	}
	var status core.QuestionStatus
	for _, m := range questionEntries(t, d, task.ID) {
		status = core.QuestionStatus(metaField(m, "status"))
	}
	if status != core.QuestionStale {
		t.Fatalf("question %s is %q after stop, want stale", q.ID, status)
	}
	if e := waitPermissionEntries(t, d, task.ID, 1); !strings.Contains(e[0].Text, "cancelled") {
		t.Fatalf("stop decision %q", e[0].Text)
	}
	if saidContains(t, d, task.ID, "never") {
		t.Fatal("the stopped turn went on")
	}
	if r := d.Run("task", "answer", task.ID, "--option", "1"); r.Code == 0 {
		t.Fatalf("answered a stale permission question: %s", r.Stdout)
	}
	message(t, d, task.ID, "mock: say back after stop")
	waitSaid(t, d, task.ID, "back after stop")

	// The operator's message supersedes a waiting permission question:
	// the agent is told cancelled, its turn ends, the message follows.
	waitSettled(t, d, task.ID)
	message(t, d, task.ID, "mock: permission rm -rf dist/\nmock: say turn went on")
	waitPermission(t, d, task.ID)
	message(t, d, task.ID, "mock: say the new message")
	waitSaid(t, d, task.ID, "the new message")
	if !saidContains(t, d, task.ID, "permission: cancelled\nturn went on") {
		t.Fatalf("the superseded request did not reach the agent as cancelled: %q", said(t, d, task.ID))
	}
	if tk := waitSettled(t, d, task.ID); tk.PendingQuestion != nil {
		t.Fatalf("question left pending: %+v", tk.PendingQuestion)
	}
}

// A daemon killed, or stopped, while a permission question waits leaves
// nothing pending after its restart: the request died with it, and the
// cut prompt is delivered again (and asks again).
func TestPermissionPendingAcrossDaemonRestart(t *testing.T) {
	for _, mode := range []string{"kill -9", "stop"} {
		t.Run(mode, func(t *testing.T) {
			d := daemontest.Start(t, daemontest.WithEnv("KANDEV_PERMISSION=ask"))
			task := create(t, d, api.CreateTaskInput{Title: "restart", Start: true, Prompt: "mock: permission rm -rf build/\nmock: say went on"})
			first := waitPermission(t, d, task.ID)
			if mode == "stop" {
				d.Stop()
			} else {
				d.Kill9()
			}
			d.Restart()
			q := waitPermission(t, d, task.ID)
			if q.ID == first.ID {
				t.Fatalf("question %s still pending after the restart", q.ID)
			}
			qs := questionEntries(t, d, task.ID)
			if len(qs) != 2 || metaField(qs[0], "status") != string(core.QuestionStale) {
				t.Fatalf("questions after restart: %v", qs)
			}
			d.MustRun("task", "answer", task.ID, "--question", q.ID, "--option", "1")
			waitSaid(t, d, task.ID, "went on")
		})
	}
}
