package daemon_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/daemon/daemontest"
	"github.com/kandev/kandev/core/notify"
)

// The daemon notifies without any TUI: with notifications on, a task that
// starts asking you reaches a (recording) notify-send on the daemon's PATH
// with its agent's markup escaped, and the notify_command gets one JSON
// object on stdin, cleaned; a task that merely runs notifies nobody.
func TestDaemonNotifiesWithoutTheTUI(t *testing.T) {
	bin := t.TempDir()
	sendLog := filepath.Join(bin, "notify-send.log")
	hookLog := filepath.Join(bin, "hook.log")
	script := "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\" >> " + sendLog + "; done\necho --end-- >> " + sendLog + "\n"
	if err := os.WriteFile(filepath.Join(bin, "notify-send"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	d := daemontest.Start(t, daemontest.WithEnv("PATH="+bin+":"+os.Getenv("PATH"),
		"KANDEV_NOTIFICATIONS=true", "KANDEV_NOTIFY_COMMAND=cat >> "+hookLog))

	busy := create(t, d, api.CreateTaskInput{Title: "just runs", Start: true, Prompt: "mock: say working\nmock: hang"})
	waitSaid(t, d, busy.ID, "working")
	title := `deploy <a href="https://evil.example/x">here</a>`
	task := create(t, d, api.CreateTaskInput{Title: title, Start: true,
		Prompt: "mock: call ask_user_question_kandev " + askUserArgs(`Look: <img src="file:///etc/passwd"> & confirm`)})

	read := func(p string) string { b, _ := os.ReadFile(p); return string(b) }
	daemontest.Eventually(t, wait, "notify-send and the notify_command", func() bool {
		return strings.Contains(read(sendLog), task.ID) && strings.Contains(read(hookLog), task.ID)
	})
	sent := read(sendLog)
	if strings.Contains(sent, "<a href") || strings.Contains(sent, "<img") {
		t.Fatalf("notify-send got markup:\n%s", sent)
	}
	for _, want := range []string{"--app-name=kandev", "task " + task.ID + " asks you a question", "&lt;a href=", "&lt;img src=\"file:///etc/passwd\"&gt; &amp; confirm"} {
		if !strings.Contains(sent, want) {
			t.Fatalf("notify-send lacks %q:\n%s", want, sent)
		}
	}
	if strings.Contains(sent, busy.ID) {
		t.Fatalf("a running task notified:\n%s", sent)
	}
	lines := strings.Split(strings.TrimSpace(read(hookLog)), "\n")
	var ev notify.Event
	if err := json.Unmarshal([]byte(lines[0]), &ev); err != nil {
		t.Fatalf("notify_command stdin %q: %v", lines, err)
	}
	if ev.Type != "needs_you" || ev.TaskID != task.ID || ev.Title != title || ev.Why != "question" || !ev.Urgent ||
		!strings.Contains(ev.Text, "file:///etc/passwd") || ev.URL != "" {
		t.Fatalf("event %+v (no web inbox: no url)", ev)
	}
	for _, l := range lines {
		if strings.Contains(l, busy.ID) {
			t.Fatalf("a running task notified: %s", l)
		}
	}
}
