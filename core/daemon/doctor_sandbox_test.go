package daemon_test

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/daemon/daemontest"
	"github.com/kandev/kandev/core/doctor"
)

// kandev doctor starts each confined profile's agent inside its sandbox
// (issue 36): the sandbox's program working says nothing of whether the
// agent's install is in view. One profile's agent starts inside; the
// other's needs a file the sandbox does not show, starts unconfined, and
// doctor names the line that says why.
func TestDoctorStartsTheAgentInsideItsSandbox(t *testing.T) {
	needBwrap(t)
	node := needNode(t)
	root, err := os.MkdirTemp("", "kddoc-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	home := filepath.Join(root, "home")
	// The launcher requires a library linked from outside its tree, which
	// no rule puts in the view.
	elsewhere := filepath.Join(root, "elsewhere", "lib.js")
	launcher := filepath.Join(root, "tools", "node_modules", "linked-acp", "index.js")
	files := map[string]string{
		elsewhere: "module.exports = { agent: " + strconv.Quote(daemontest.Binary(t)) + " };\n",
		launcher: "#!/usr/bin/env node\n" +
			"const lib = require(" + strconv.Quote(elsewhere) + ");\n" +
			"const { spawn } = require('child_process');\n" +
			"const c = spawn(lib.agent, ['mock-agent'], { stdio: 'inherit' });\n" +
			"c.on('exit', (code) => process.exit(code === null ? 1 : code));\n",
		filepath.Join(home, ".keep"): "",
	}
	writeFiles(t, 0o755, files)
	d := daemontest.Start(t, daemontest.WithEnv("HOME="+home, "PATH="+filepath.Dir(node)+":"+os.Getenv("PATH")))
	d.MustRun("profile", "add", "boxed", "--command", d.Bin, "--arg", "mock-agent", "--sandbox", "bwrap")
	d.MustRun("profile", "add", "linked", "--command", launcher, "--sandbox", "bwrap")

	var r doctor.Report
	res := d.Run("doctor", "--json")
	if err := json.Unmarshal([]byte(res.Stdout), &r); err != nil {
		t.Fatalf("doctor --json: %v\n%s\n%s", err, res.Stdout, res.Stderr)
	}
	byName := map[string]doctor.ProfileSandbox{}
	for _, p := range r.ProfileSandboxes {
		byName[p.Profile] = p
	}
	for _, p := range r.Profiles {
		if p.Name == "linked" && !p.Usable {
			t.Fatalf("unconfined, the linked agent should start: %+v", p)
		}
	}
	if b := byName["boxed"]; !b.CanStart || b.Agent == nil || b.Agent.AgentName == "" {
		t.Fatalf("boxed: %+v", b)
	}
	l := byName["linked"]
	if l.CanStart || !strings.Contains(l.Why, "Cannot find module '"+elsewhere+"'") || l.Log == "" {
		t.Fatalf("linked: %+v", l)
	}
	t.Cleanup(func() { os.Remove(l.Log) })
	if b, err := os.ReadFile(l.Log); err != nil || !strings.Contains(string(b), "Cannot find module") {
		t.Fatalf("the kept log %s: %v\n%s", l.Log, err, b)
	}
	text := d.MustRun("doctor")
	for _, want := range []string{"profile boxed: the agent starts inside bwrap (", "profile linked: sandbox bwrap CANNOT START: the agent does not start inside: initialize: agent exited", "Cannot find module"} {
		if !strings.Contains(text, want) {
			t.Errorf("doctor lacks %q:\n%s", want, text)
		}
	}
}

// A profile's HOME is refused, never silently replaced, where its agent
// would run confined (issue 36): at profile add with a sandbox, and at
// the start of a confined task whose profile has none of its own (an
// autopilot task confined by default). The refused start loses nothing:
// the prompt stays queued and the failed run climbs to a person.
func TestConfinedAgentRefusesAProfileHome(t *testing.T) {
	needBwrap(t)
	d := daemontest.Start(t)
	r := d.Run("profile", "add", "boxed", "--command", d.Bin, "--arg", "mock-agent", "--sandbox", "bwrap", "--env", "HOME=/elsewhere")
	if r.Code == 0 || !strings.Contains(r.Stderr, "a confined agent's HOME is its task's private home") {
		t.Fatalf("profile add: exit %d\n%s", r.Code, r.Stderr)
	}
	d.MustRun("profile", "add", "homed", "--command", d.Bin, "--arg", "mock-agent", "--env", "HOME=/elsewhere")
	task := create(t, d, api.CreateTaskInput{Title: "homed", Profile: "homed", CWD: t.TempDir(), Sandbox: core.SandboxBwrap, Start: true,
		Prompt: "mock: say never"})
	// The note comes first, then the task goes to a person with the
	// prompt still queued: wait for both.
	var got core.Task
	daemontest.Eventually(t, wait, "the refused start noted and the prompt waiting with a person", func() bool {
		got = get(t, d, task.ID)
		return countNotes(t, d, task.ID, "sets HOME=/elsewhere, but a confined agent's HOME") == 1 &&
			got.Queued == 1 && got.Assignee != nil && got.Assignee.IsPerson()
	})
	for _, m := range conversation(t, d, task.ID) {
		if m.Kind == core.MsgAgent {
			t.Fatalf("the agent ran: %+v", m)
		}
	}
}

// A confined agent whose network is cut reaches exactly the host loopback
// ports its profile forwards (issue 36, ADR 0074): a model server on
// 127.0.0.1 answers through the forward; another port of the host's
// loopback, not forwarded, does not.
func TestBwrapForwardsAHostPort(t *testing.T) {
	needBwrap(t)
	model, other := loopbackServer(t, "model here"), loopbackServer(t, "not for you")
	d := daemontest.Start(t, daemontest.WithEnv("KANDEV_PERMISSION=allow"))
	d.MustRun("profile", "add", "local", "--command", d.Bin, "--arg", "mock-agent", "--sandbox", "bwrap", "--no-network",
		"--forward", strconv.Itoa(model.port))
	if out := d.MustRun("profile", "show", "local"); !strings.Contains(out, "forward:  127.0.0.1:"+strconv.Itoa(model.port)) {
		t.Fatalf("profile show:\n%s", out)
	}
	task := create(t, d, api.CreateTaskInput{Title: "local model", Profile: "local", CWD: t.TempDir(), Start: true,
		Prompt: "mock: fetch " + model.url + "/v1/models\nmock: fetch " + other.url + "/\nmock: say done"})
	logTaskOnFailure(t, d, task.ID, nil)
	waitSaid(t, d, task.ID, "done")
	words := strings.Join(said(t, d, task.ID), "\n")
	if !strings.Contains(words, "fetched "+model.url+"/v1/models: 200 model here /v1/models") {
		t.Fatalf("the forwarded port did not answer:\n%s", words)
	}
	if !strings.Contains(words, "error fetch "+other.url+"/") || strings.Contains(words, "not for you") {
		t.Fatalf("a port not forwarded answered:\n%s", words)
	}
}

type served struct {
	url  string
	port int
}

// loopbackServer answers every request with body and the path asked.
func loopbackServer(t *testing.T, body string) served {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, body+" "+r.URL.Path)
	}))
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	p, _ := strconv.Atoi(port)
	return served{url: srv.URL, port: p}
}

// An agent installed in ~/bin runs confined without the operator's home
// (issue 36): its install prefix was the home itself, mounted read-only
// over the private one, so the agent read ~/.ssh.
func TestBwrapAgentInHomeBin(t *testing.T) {
	needBwrap(t)
	root, err := os.MkdirTemp("", "kdbin-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	home := filepath.Join(root, "home")
	agent := filepath.Join(home, "bin", "agent")
	secret := filepath.Join(home, ".ssh", "id_ed25519")
	writeFiles(t, 0o700, map[string]string{agent: "#!/bin/sh\nexec " + daemontest.Binary(t) + " mock-agent\n", secret: "operator's key\n"})
	d := daemontest.Start(t, daemontest.WithEnv("HOME="+home, "KANDEV_PERMISSION=allow"))
	d.MustRun("profile", "add", "homebin", "--command", agent, "--sandbox", "bwrap")
	work := filepath.Join(root, "work")
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	task := create(t, d, api.CreateTaskInput{Title: "home bin", Profile: "homebin", CWD: work, Start: true,
		Prompt: "mock: sh cat " + secret + "; echo read-done"})
	logTaskOnFailure(t, d, task.ID, nil)
	out := shSaid(t, d, task.ID, 1)
	if strings.Contains(out, "operator's key") || !strings.Contains(out, "No such file") {
		t.Fatalf("the agent's shell:\n%s", out)
	}
}
