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

// With the web inbox on, a notification carries the item's page (at
// web_url when set); kandev web pair gives a code for its pairing form.
func TestWebInboxLinksNotifications(t *testing.T) {
	hookLog := filepath.Join(t.TempDir(), "hook.log")
	d := daemontest.Start(t, daemontest.WithEnv("KANDEV_WEB_LISTEN=127.0.0.1:0", "KANDEV_WEB_URL=https://box.example.ts.net/",
		"KANDEV_NOTIFY_COMMAND=cat >> "+hookLog))
	task := create(t, d, api.CreateTaskInput{Title: "asks", Start: true,
		Prompt: "mock: call ask_user_question_kandev " + askUserArgs("Which one?")})
	read := func() string { b, _ := os.ReadFile(hookLog); return string(b) }
	daemontest.Eventually(t, wait, "the notify_command", func() bool { return strings.Contains(read(), task.ID) })
	var ev notify.Event
	if err := json.Unmarshal([]byte(strings.Split(strings.TrimSpace(read()), "\n")[0]), &ev); err != nil {
		t.Fatal(err)
	}
	if ev.URL != "https://box.example.ts.net/task/"+task.ID {
		t.Fatalf("notification url %q", ev.URL)
	}
	var p api.WebPairing
	if err := json.Unmarshal([]byte(d.MustRun("web", "pair", "--json")), &p); err != nil {
		t.Fatal(err)
	}
	if len(p.Code) != 9 || p.Code[4] != '-' || p.URL != "https://box.example.ts.net/pair?code="+strings.ReplaceAll(p.Code, "-", "") ||
		p.Name != "browser" || p.Warning != "" {
		t.Fatalf("pairing %+v", p)
	}
	// The text form draws a QR code and names the code and the URL.
	out := d.MustRun("web", "pair", "--name", "phone")
	if !strings.Contains(out, "Pairing code: ") || !strings.Contains(out, "https://box.example.ts.net/pair?code=") || !strings.ContainsAny(out, "█▀▄") {
		t.Fatalf("web pair printed:\n%s", out)
	}
}

// With the inbox off, pairing says how to turn it on; devices can still
// be listed and revoked; a listen address beyond loopback without TLS or
// consent stops the daemon's start with the reason.
func TestWebInboxOff(t *testing.T) {
	d := daemontest.Start(t)
	r := d.Run("web", "pair")
	if r.Code == 0 || !strings.Contains(r.Stderr, "the web inbox is off") || !strings.Contains(r.Stderr, "web_listen") {
		t.Fatalf("web pair with the inbox off: exit %d, %s", r.Code, r.Stderr)
	}
	if out := d.MustRun("web", "devices", "--json"); strings.TrimSpace(out) != "[]" {
		t.Fatalf("devices: %s", out)
	}
	if r := d.Run("web", "revoke", "dnope"); r.Code == 0 || !strings.Contains(r.Stderr, "no paired device") {
		t.Fatalf("revoke unknown: exit %d, %s", r.Code, r.Stderr)
	}
	home := t.TempDir()
	r = d.RunEnv([]string{"PATH=" + os.Getenv("PATH"), "KANDEV_HOME=" + home, "KANDEV_CONFIG=" + filepath.Join(home, "config.toml"),
		"KANDEV_WEB_LISTEN=0.0.0.0:0"}, "", "serve")
	if r.Code == 0 || !strings.Contains(r.Stderr, "reaches beyond this machine") {
		t.Fatalf("serve beyond loopback: exit %d, %s", r.Code, r.Stderr)
	}
}
