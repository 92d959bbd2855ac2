package daemon_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/daemon/daemontest"
)

// chromium finds a headless-capable Chromium (Debian's package: CI
// installs it, .ci/run). Outside CI a machine without one skips the
// browser test, as the tmux tests skip without tmux.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "" {
		t.Skip("no chromium installed (CI installs it; this test then runs)")
	}
	t.Fatal("chromium is required in CI (apt-get install chromium)")
	return ""
}

// screenshotDir is where the browser test saves its screenshots:
// $KANDEV_WEB_SCREENSHOTS when set (to look at them), else the test's own
// temporary directory.
func screenshotDir(t *testing.T) string {
	if dir := os.Getenv("KANDEV_WEB_SCREENSHOTS"); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	return t.TempDir()
}

// A real browser pairs with a code, sees what needs the person appear
// by itself, answers a mock agent's question, allows a permission and
// stops a task, and each agent's turn sees it.
func TestWebInboxInABrowser(t *testing.T) {
	exe := chromium(t)
	d := daemontest.Start(t, daemontest.WithEnv("KANDEV_WEB_LISTEN=127.0.0.1:0", "KANDEV_PERMISSION=ask"))
	var pairing api.WebPairing
	if err := json.Unmarshal([]byte(d.MustRun("web", "pair", "--name", "test phone", "--json")), &pairing); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(pairing.URL, "http://127.0.0.1:") || !strings.Contains(pairing.URL, "/pair?code=") {
		t.Fatalf("pairing URL %q", pairing.URL)
	}
	base := pairing.URL[:strings.Index(pairing.URL, "/pair")]

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox,
		chromedp.Headless, chromedp.DisableGPU, chromedp.WindowSize(1280, 800), chromedp.UserDataDir(t.TempDir()))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()
	// The browser starts here, without a deadline (a deadline on the first
	// call would stop the browser with it); the steps wait on conditions.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	run := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		sctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if err := chromedp.Do(sctx, steps...); err != nil {
			t.Fatalf("%s: %v\ndaemon log:\n%s", what, err, d.Log())
		}
	}
	get := func(what string, a chromedp.Action[string]) string {
		t.Helper()
		sctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		v, err := chromedp.Run(sctx, a)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return v
	}
	js := func(expr string) string { return get(expr, chromedp.Evaluate[string](expr)) }

	// Without a device the inbox sends the browser to the pairing form.
	run("open the inbox unpaired", chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.ID("code")))
	if loc := get("location", chromedp.Location()); !strings.HasSuffix(loc, "/pair") {
		t.Fatalf("unpaired inbox went to %s", loc)
	}
	// The code's URL fills the form in; Pair opens the inbox.
	run("open the pairing URL", chromedp.Navigate(pairing.URL), chromedp.WaitVisible(chromedp.ID("code")))
	if code := get("code", chromedp.Value(chromedp.ID("code"))); code != pairing.Code {
		t.Fatalf("the form holds %q, the code is %q", code, pairing.Code)
	}
	run("pair", chromedp.Click(chromedp.CSS(`form[action="/pair"] button`)), chromedp.WaitVisible(chromedp.ID("items")))
	// The embedded style sheet applied (the CSP allows it by its hash),
	// and the script connected to the event stream.
	if pos := js(`getComputedStyle(document.querySelector("header")).position`); pos != "sticky" {
		t.Fatalf("the style sheet did not apply: header position %q", pos)
	}
	get("live", chromedp.Poll[string](`document.getElementById("live").textContent === "live" ? "live" : ""`))

	// Three agents stop on the person while the page is open.
	hostile := "<script>alert(1)</script>\u202Egnp.exe"
	q := create(t, d, api.CreateTaskInput{Title: "Pick a database " + hostile, Start: true, Prompt: call("ask_user_question_kandev",
		map[string]any{"questions": []map[string]any{{"prompt": "Which database? " + hostile,
			"options": []map[string]any{{"label": "Postgres"}, {"label": "SQLite", "description": "one file"}}}}})})
	p := create(t, d, api.CreateTaskInput{Title: "Clean the build", Start: true, Prompt: "mock: permission rm -rf build/\nmock: say after allow"})
	s := create(t, d, api.CreateTaskInput{Title: "Clean everything", Start: true, Prompt: "mock: permission rm -rf /\nmock: say never"})
	waitQuestion(t, d, q.ID)
	waitPermission(t, d, p.ID)
	waitPermission(t, d, s.ID)
	// They appear without a reload.
	for _, id := range []string{q.ID, p.ID, s.ID} {
		run("see "+id, chromedp.WaitVisible(chromedp.ID("task-"+id)))
	}
	if n := js(`String(document.querySelectorAll("#items script, #items img").length)`); n != "0" {
		t.Fatalf("agent text became %s elements", n)
	}

	dir := screenshotDir(t)
	// shot saves the viewport at w×h, and the whole page as name-full.
	shot := func(name string, w, h int64) {
		t.Helper()
		run("viewport "+name, chromedp.EmulateViewport(w, h))
		sctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		png, err := chromedp.Run(sctx, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		full, err := chromedp.Run(sctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		if err := os.WriteFile(filepath.Join(dir, strings.TrimSuffix(name, ".png")+"-full.png"), full, 0o644); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot %s", path)
	}
	shot("inbox-360x800.png", 360, 800)
	shot("inbox-1280x800.png", 1280, 800)

	// Answer the question: nothing is preselected; pick SQLite.
	if n := js(`String(document.querySelectorAll("#items input[type=radio]:checked").length)`); n != "0" {
		t.Fatalf("%s options preselected", n)
	}
	run("answer", chromedp.Click(chromedp.CSS(`#task-`+q.ID+` input[name="option0"][value="2"]`)),
		chromedp.Click(chromedp.CSS(`#task-`+q.ID+` form.answer button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`p.done`)))
	waitSaid(t, d, q.ID, "SQLite")

	// Allow the permission once.
	run("allow", chromedp.WaitVisible(chromedp.ID("task-"+p.ID)),
		chromedp.Click(chromedp.CSS(`#task-`+p.ID+` button[name="option0"][value="1"]`)),
		chromedp.WaitVisible(chromedp.CSS(`p.done`)))
	waitSaid(t, d, p.ID, "permission: allow\nafter allow")

	// Stop the third: its waiting call is answered cancelled.
	run("stop", chromedp.WaitVisible(chromedp.ID("task-"+s.ID)),
		chromedp.Click(chromedp.CSS(`#task-`+s.ID+` details summary`)),
		chromedp.Click(chromedp.CSS(`#task-`+s.ID+` form[action$="/stop"] button`)),
		chromedp.WaitVisible(chromedp.CSS(`p.done`)))
	if e := waitPermissionEntries(t, d, s.ID, 1); !strings.Contains(e[0].Text, "cancelled") {
		t.Fatalf("stop decision %q", e[0].Text)
	}
	waitState(t, d, s.ID, core.SessionCancelled)
	if saidContains(t, d, s.ID, "never") {
		t.Fatal("the stopped turn went on")
	}
	// The permission was decided as the person.
	if e := waitPermissionEntries(t, d, p.ID, 1); !strings.Contains(e[0].Text, "answered by person:operator") {
		t.Fatalf("allow recorded as %q", e[0].Text)
	}

	// The task's page shows its recent conversation, escaped.
	run("conversation", chromedp.Navigate(base+"/task/"+q.ID), chromedp.WaitVisible(chromedp.CSS(`.conversation`)))
	text := get("conversation text", chromedp.Text(chromedp.CSS(`.conversation`)))
	if !strings.Contains(text, "SQLite") {
		t.Fatalf("conversation: %q", text)
	}
	shot("task-360x800.png", 360, 800)

	// The device is listed with what it did; revoked, it opens nothing.
	var devs []api.WebDevice
	if err := json.Unmarshal([]byte(d.MustRun("web", "devices", "--json")), &devs); err != nil {
		t.Fatal(err)
	}
	if len(devs) != 1 || devs[0].Name != "test phone" || devs[0].Actions != 3 || devs[0].Revoked {
		t.Fatalf("devices %+v", devs)
	}
	d.MustRun("web", "revoke", devs[0].ID)
	run("revoked", chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.ID("code")))
}
