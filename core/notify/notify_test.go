package notify

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kandev/kandev/core"
)

// hostile is a task whose agent wrote markup and terminal controls into
// what a notification shows.
func hostile() *core.Task {
	role := core.RoleRef("eng")
	return &core.Task{ID: "abc123", Title: "fix <a href=\"https://evil.example\">this</a>\x1b]0;owned\x07 now",
		Status: core.StatusInProgress, Assignee: &role, YourTurn: true, Session: &core.SessionInfo{State: core.SessionRunning},
		PendingQuestion: &core.QuestionInfo{ID: "q1", Kind: core.QuestionUser, Status: core.QuestionPending,
			Text: "look <img src=\"file:///etc/passwd\"> & say\nyes\x1b[31m"}}
}

// recorder writes a script that appends its arguments (one per line, then
// a line "--end--") and its stdin to a file, and returns both paths.
func recorder(t *testing.T, name string) (script, log string) {
	t.Helper()
	dir := t.TempDir()
	log = filepath.Join(dir, "log")
	script = filepath.Join(dir, name)
	body := "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\" >> " + log + "; done\ncat >> " + log + "\necho --end-- >> " + log + "\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return script, log
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A desktop notification's body is plain text: the markup an agent put in
// a title or a question reaches notify-send escaped, terminal controls
// removed; the notify_command gets the same text, cleaned, as JSON.
func TestNotificationsArePlainText(t *testing.T) {
	send, sendLog := recorder(t, "notify-send")
	cmd, cmdLog := recorder(t, "hook")
	n := New(Options{
		Settings: func() (Settings, error) { return Settings{Desktop: true, Command: cmd}, nil },
		LookPath: func(name string) (string, error) {
			if name != "notify-send" {
				t.Errorf("looked up %q", name)
			}
			return send, nil
		},
		GOOS: "linux",
	})
	ev := FromTask(hostile(), time.Unix(1700000000, 0))
	n.deliver(context.Background(), ev)

	got := read(t, sendLog)
	if strings.Contains(got, "<a href") || strings.Contains(got, "<img") || strings.Contains(got, "\x1b") {
		t.Fatalf("notify-send got markup or controls:\n%q", got)
	}
	for _, want := range []string{"--app-name=kandev", "&lt;a href=\"https://evil.example\"&gt;", "&lt;img src=\"file:///etc/passwd\"&gt; &amp; say yes",
		"task abc123 asks you a question"} {
		if !strings.Contains(got, want) {
			t.Fatalf("notify-send args lack %q:\n%s", want, got)
		}
	}

	lines := strings.Split(strings.TrimSpace(read(t, cmdLog)), "\n")
	if len(lines) != 2 || lines[1] != "--end--" {
		t.Fatalf("notify_command stdin: %q", lines)
	}
	var back Event
	if err := json.Unmarshal([]byte(lines[0]), &back); err != nil {
		t.Fatal(err)
	}
	if back.Type != EventNeedsYou || back.TaskID != "abc123" || back.Why != "question" || back.Urgency != "blocking" || !back.Urgent ||
		strings.ContainsAny(back.Title+back.Text, "\x1b\x07\n") || !strings.Contains(back.Text, "file:///etc/passwd") {
		t.Fatalf("event %+v", back)
	}
}

// A notify_command runs in its own process group: what it leaves running
// is ended when it returns, and one that hangs is killed at the timeout.
func TestNotifyCommandProcessesEnd(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	for _, c := range []struct {
		name, command string
		timeout       time.Duration
	}{
		{"leaves a child", "sleep 300 & echo $! > " + pidFile, time.Minute},
		{"hangs", "echo $$ > " + pidFile + "; exec sleep 300", 300 * time.Millisecond},
		// Out of the group: found by the marker the command carries.
		{"leaves a setsid child", "setsid sleep 300 </dev/null >/dev/null 2>&1 & echo $! > " + pidFile, time.Minute},
	} {
		t.Run(c.name, func(t *testing.T) {
			_ = os.Remove(pidFile)
			n := New(Options{Settings: func() (Settings, error) { return Settings{Command: c.command}, nil }, Timeout: c.timeout})
			n.deliver(context.Background(), FromTask(hostile(), time.Now()))
			pid, err := strconv.Atoi(strings.TrimSpace(read(t, pidFile)))
			if err != nil {
				t.Fatal(err)
			}
			// Killed already; a zombie waits for its new parent to reap it.
			for syscall.Kill(pid, 0) == nil && !zombie(pid) {
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}

func zombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && i+2 < len(s) && s[i+2] == 'Z'
}

// Past the burst, the events that come are folded into one delivery that
// counts them; nothing is delivered again until the interval passes.
func TestNotifyRateLimitFolds(t *testing.T) {
	_, log := recorder(t, "unused")
	hook := "cat >> " + log
	n := New(Options{Settings: func() (Settings, error) { return Settings{Command: hook}, nil },
		Burst: 2, Every: time.Hour, Now: func() time.Time { return time.Unix(1700000000, 0) }})
	for i := range 5 {
		ev := FromTask(hostile(), time.Now())
		ev.TaskID = "t" + strconv.Itoa(i)
		n.Notify(ev)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { n.Run(ctx); close(done) }()
	var got []Event
	for len(got) < 2 {
		got = got[:0]
		f, err := os.Open(log)
		if err == nil {
			sc := bufio.NewScanner(f)
			for sc.Scan() {
				var ev Event
				if json.Unmarshal(sc.Bytes(), &ev) == nil {
					got = append(got, ev)
				}
			}
			f.Close()
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-done
	if len(got) != 2 || got[0].TaskID != "t0" || got[0].Folded != 0 || got[1].TaskID != "t4" || got[1].Folded != 3 {
		t.Fatalf("delivered %+v", got)
	}
}

func TestEscape(t *testing.T) {
	if got := Escape(`<b>&x</b>`); got != "&lt;b&gt;&amp;x&lt;/b&gt;" {
		t.Fatal(got)
	}
}

// A parent with a person that a subtask asks (ADR 0069): the notification
// names the subtask and its newest question, cleaned, and whom it is for.
func TestFromTaskChildQuestion(t *testing.T) {
	op := core.OperatorRef()
	at := time.Unix(1700000000, 0)
	p := &core.Task{ID: "p1", Title: "plan", Status: core.StatusInProgress, Assignee: &op, YourTurn: true,
		Stalled: &core.Stall{Reason: "Stalled", Detail: "unanswered question qb from subtask b", QuestionID: "qb"},
		ChildQuestions: []core.ChildQuestion{
			{TaskID: "b", Named: true, Question: core.QuestionInfo{ID: "qb", Text: "Which database?", AskedAt: at}},
			{TaskID: "a", Question: core.QuestionInfo{ID: "qa", Text: "Which size?\x1b[31m", AskedAt: at.Add(time.Minute)}},
		}}
	ev := FromTask(p, at)
	if ev.Summary != "task p1 has a question from subtask a for you: plan" || ev.Text != "subtask a asks: Which size?" || ev.TaskID != "p1" {
		t.Fatalf("event %+v", ev)
	}
	alice := core.Ref{Kind: core.RefPerson, Name: "alice"}
	p.Assignee = &alice
	if ev := FromTask(p, at); ev.Summary != "task p1 has a question from subtask a for alice: plan" {
		t.Fatalf("for alice: %+v", ev)
	}
}
