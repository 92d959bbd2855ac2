package daemon_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/daemon/daemontest"
)

// probeServer is a stdio MCP server in node, a few lines of JSON-RPC: its
// one tool, probe, writes the file it is told to, reports whether it
// could, whether it sees the host's files it is asked about, and what of
// its environment and its installed package it has.
const probeServer = `#!/usr/bin/env node
const fs = require('fs');
let lib = 'none';
try { lib = require('probe-lib').name; } catch (e) {}
const send = (m) => process.stdout.write(JSON.stringify(m) + '\n');
require('readline').createInterface({ input: process.stdin }).on('line', (line) => {
  let m;
  try { m = JSON.parse(line); } catch (e) { return; }
  if (m.id === undefined) return;
  if (m.method === 'initialize') {
    send({ jsonrpc: '2.0', id: m.id, result: { protocolVersion: m.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'probe', version: '1' } } });
  } else if (m.method === 'tools/list') {
    send({ jsonrpc: '2.0', id: m.id, result: { tools: [{ name: 'probe', description: 'write a file, look at others', inputSchema: { type: 'object' } }] } });
  } else if (m.method === 'tools/call') {
    const a = m.params.arguments || {};
    const out = { lib, env: process.env.PROBE_ENV || '', args: process.argv.slice(2).join(' '), seen: {}, wrote: {} };
    for (const p of a.look || []) out.seen[p] = fs.existsSync(p);
    for (const p of a.write || []) {
      try { fs.writeFileSync(p, 'probe\n'); out.wrote[p] = 'ok'; } catch (e) { out.wrote[p] = e.code; }
    }
    send({ jsonrpc: '2.0', id: m.id, result: { content: [{ type: 'text', text: JSON.stringify(out) }] } });
  } else {
    send({ jsonrpc: '2.0', id: m.id, error: { code: -32601, message: 'no method ' + m.method } });
  }
});
`

type probeResult struct {
	Lib   string            `json:"lib"`
	Env   string            `json:"env"`
	Args  string            `json:"args"`
	Seen  map[string]bool   `json:"seen"`
	Wrote map[string]string `json:"wrote"`
}

// A profile's own MCP servers (ADR 0078): the agent is given them after
// kandev's, lists their tools and calls them; under bwrap they run
// confined with it, their install and script found where they are.
func TestProfileMCPServers(t *testing.T) {
	node := needNode(t)
	root, err := os.MkdirTemp("", "kdmcp-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	home := filepath.Join(root, "home")
	secret := filepath.Join(home, ".ssh", "id_ed25519")
	outside := filepath.Join(root, "host-file")
	// A global npm layout: PREFIX/bin/probe-mcp leads to the package,
	// which requires another package beside it.
	prefix := filepath.Join(root, "tools")
	modules := filepath.Join(prefix, "lib", "node_modules")
	script := filepath.Join(root, "servers", "probe.js") // node SCRIPT: the script is an argument
	writeFiles(t, 0o755, map[string]string{
		filepath.Join(modules, "probe-mcp", "index.js"): probeServer,
		filepath.Join(modules, "probe-lib", "index.js"): "module.exports = { name: 'probe-lib' };\n",
		script:  probeServer,
		secret:  "operator's key\n",
		outside: "the host's\n",
	})
	bin := filepath.Join(prefix, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../lib/node_modules/probe-mcp/index.js", filepath.Join(bin, "probe-mcp")); err != nil {
		t.Fatal(err)
	}
	d := daemontest.Start(t, daemontest.WithEnv("HOME="+home, "KANDEV_PERMISSION=allow",
		"PATH="+bin+":"+filepath.Dir(node)+":"+os.Getenv("PATH")))
	d.MustRun("profile", "add", "tools", "--command", d.Bin, "--arg", "mock-agent",
		"--mcp-server", "probe=probe-mcp --greeting hi", "--mcp-server-env", "probe:PROBE_ENV=from-profile",
		"--mcp-server", "js=node "+script)

	for _, mode := range []string{core.SandboxNone, core.SandboxBwrap} {
		t.Run(mode, func(t *testing.T) {
			if mode == core.SandboxBwrap {
				needBwrap(t)
			}
			work := filepath.Join(root, "work-"+mode)
			if err := os.MkdirAll(work, 0o755); err != nil {
				t.Fatal(err)
			}
			inside, escape := filepath.Join(work, "from-probe"), filepath.Join(root, "escape-"+mode)
			args, _ := json.Marshal(map[string][]string{"look": {secret, outside}, "write": {inside, escape}})
			task := create(t, d, api.CreateTaskInput{Title: "tools " + mode, Profile: "tools", CWD: work, Sandbox: mode, Start: true,
				Prompt: "mock: servers\nmock: servercall probe probe " + string(args) + "\nmock: servercall js probe " + string(args) + "\nmock: say done"})
			logTaskOnFailure(t, d, task.ID, nil)
			waitSaid(t, d, task.ID, "done")
			words := said(t, d, task.ID)
			all := strings.Join(words, "\n")
			if !strings.Contains(all, "; probe (probe); js (probe)") || !strings.HasPrefix(all, "servers: kandev (") {
				t.Fatalf("the servers the agent lists:\n%s", all)
			}
			for _, server := range []string{"probe", "js"} {
				r := probeSaid(t, words, server)
				if server == "probe" && (r.Lib != "probe-lib" || r.Env != "from-profile" || r.Args != "--greeting hi") {
					t.Errorf("%s: the installed server ran without its package, env or args: %+v", server, r)
				}
				if r.Wrote[inside] != "ok" {
					t.Errorf("%s could not write in the worktree: %+v", server, r)
				}
				if b, err := os.ReadFile(inside); err != nil || string(b) != "probe\n" {
					t.Errorf("%s: the worktree's file on the host: %q %v", server, b, err)
				}
				_, err := os.Stat(escape)
				if mode == core.SandboxNone {
					if !r.Seen[secret] || !r.Seen[outside] || r.Wrote[escape] != "ok" || err != nil {
						t.Errorf("%s unconfined sees and writes as the operator: %+v (escape on the host: %v)", server, r, err)
					}
					continue
				}
				if r.Seen[secret] || r.Seen[outside] {
					t.Errorf("%s under bwrap sees the host's files: %+v", server, r)
				}
				if err == nil {
					t.Errorf("%s under bwrap wrote %s on the host", server, escape)
				}
			}
			os.Remove(escape)
			show := d.MustRun("task", "show", task.ID)
			if !regexp.MustCompile(`(?m)^mcp servers: +kandev, probe, js$`).MatchString(show) {
				t.Errorf("task show:\n%s", show)
			}
			var note bool
			for _, m := range conversation(t, d, task.ID) {
				if m.Kind == core.MsgStatus && strings.Contains(m.Text, "MCP servers: kandev, probe, js") {
					note = true
				}
			}
			if !note {
				t.Error("the run's start note does not say the MCP servers it was given")
			}
		})
	}
}

// probeSaid is the probe's answer to server's servercall.
func probeSaid(t *testing.T, words []string, server string) probeResult {
	t.Helper()
	prefix := "result " + server + " probe: "
	for _, w := range words {
		for _, line := range strings.Split(w, "\n") {
			if rest, ok := strings.CutPrefix(line, prefix); ok {
				var r probeResult
				if err := json.Unmarshal([]byte(rest), &r); err != nil {
					t.Fatalf("%s said %q: %v", server, rest, err)
				}
				return r
			}
		}
	}
	t.Fatalf("no result of %s's probe in:\n%s", server, strings.Join(words, "\n"))
	return probeResult{}
}

// The mcp_servers setting's servers (ADR 0078) go to every agent that
// takes injected servers, after kandev's and its profile's own; a
// profile's server of the same name is the profile's, and task show names
// what each agent was given. A setting that does not parse holds the start
// that would use it, saying why, rather than starting the agent without.
func TestConfiguredMCPServers(t *testing.T) {
	node := needNode(t)
	root := t.TempDir()
	script := filepath.Join(root, "servers", "probe.js")
	writeFiles(t, 0o755, map[string]string{script: probeServer})
	d := daemontest.Start(t, daemontest.WithEnv("KANDEV_PERMISSION=allow",
		"KANDEV_MCP_SERVERS=shared="+node+" "+script+" from-config; other="+node+" "+script,
		"PATH="+filepath.Dir(node)+":"+os.Getenv("PATH")))
	d.MustRun("profile", "add", "own", "--command", d.Bin, "--arg", "mock-agent",
		"--mcp-server", "shared="+node+" "+script+" from-profile")
	for _, c := range []struct{ profile, servers, args string }{
		{core.DefaultProfile, "kandev, shared, other", "from-config"},
		{"own", "kandev, shared, other", "from-profile"},
	} {
		task := create(t, d, api.CreateTaskInput{Title: "configured " + c.profile, Profile: c.profile, CWD: root, Start: true,
			Prompt: "mock: servers\nmock: servercall shared probe {}\nmock: say done"})
		logTaskOnFailure(t, d, task.ID, nil)
		waitSaid(t, d, task.ID, "done")
		words := said(t, d, task.ID)
		if all := strings.Join(words, "\n"); !strings.Contains(all, "; shared (probe); other (probe)") {
			t.Fatalf("%s: the servers the agent lists:\n%s", c.profile, all)
		}
		if r := probeSaid(t, words, "shared"); r.Args != c.args {
			t.Errorf("%s: the server named shared ran with %q, want %q's", c.profile, r.Args, c.args)
		}
		show := d.MustRun("task", "show", task.ID)
		if !regexp.MustCompile(`(?m)^mcp servers: +` + regexp.QuoteMeta(c.servers) + `$`).MatchString(show) {
			t.Errorf("%s: task show:\n%s", c.profile, show)
		}
	}

	bad := daemontest.Start(t, daemontest.WithEnv("KANDEV_MCP_SERVERS=kandev="+node+" "+script))
	task := create(t, bad, api.CreateTaskInput{Title: "bad setting", CWD: root, Start: true, Prompt: "mock: say never"})
	logTaskOnFailure(t, bad, task.ID, nil)
	daemontest.Eventually(t, wait, "the start to wait on the setting", func() bool {
		w := get(t, bad, task.ID).Waiting
		return strings.Contains(w, "$KANDEV_MCP_SERVERS: mcp_servers") && strings.Contains(w, "kandev's own server")
	})
	if saidContains(t, bad, task.ID, "never") {
		t.Fatal("the agent started without the servers the setting names")
	}
}
