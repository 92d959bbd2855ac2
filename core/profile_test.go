package core

import (
	"os"
	"slices"
	"strings"
	"testing"
)

func TestBuiltinProfiles(t *testing.T) {
	want := map[string]string{
		"mock":     "kandev mock-agent",
		"claude":   "claude-agent-acp",
		"codex":    "codex-acp",
		"gemini":   "gemini --acp",
		"qwen":     "qwen --acp",
		"opencode": "opencode acp",
	}
	got := BuiltinProfiles()
	if len(got) != len(want) {
		t.Fatalf("%d built-ins, want %d", len(got), len(want))
	}
	for _, p := range got {
		line, ok := want[p.Name]
		if !ok {
			t.Errorf("unexpected built-in %s", p.Name)
			continue
		}
		if p.CommandLine() != line {
			t.Errorf("%s runs %q, want %q", p.Name, p.CommandLine(), line)
		}
		if !p.MCP || p.Source != "builtin" {
			t.Errorf("%s: mcp %v source %q", p.Name, p.MCP, p.Source)
		}
		if err := ValidateProfile(p); err != nil {
			t.Errorf("built-in %s is invalid: %v", p.Name, err)
		}
		if b, ok := BuiltinProfile(p.Name); !ok || b.Name != p.Name {
			t.Errorf("BuiltinProfile(%s) = %v, %v", p.Name, b, ok)
		}
	}
	// Claude Code must connect kandev's MCP server before its first model
	// request, within a bound.
	claude, _ := BuiltinProfile("claude")
	if !slices.Contains(claude.Env, "MCP_CONNECTION_NONBLOCKING=0") || !slices.ContainsFunc(claude.Env, func(kv string) bool {
		return strings.HasPrefix(kv, "MCP_TIMEOUT=")
	}) {
		t.Errorf("claude env %q: want MCP_CONNECTION_NONBLOCKING=0 and MCP_TIMEOUT", claude.Env)
	}
	if _, ok := BuiltinProfile("nope"); ok {
		t.Error("BuiltinProfile found a profile that does not exist")
	}
	if _, ok := BuiltinProfile(DefaultProfile); !ok {
		t.Errorf("the default profile %s is not built in", DefaultProfile)
	}
	// Callers may modify what they get without changing the built-ins.
	ps := BuiltinProfiles()
	ps[0].Name = "changed"
	ps[0].Args = append(ps[0].Args, "x")
	if BuiltinProfiles()[0].Name == "changed" {
		t.Error("BuiltinProfiles returns shared state")
	}
}

func TestValidateProfile(t *testing.T) {
	home, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err)
	}
	ok := []Profile{
		{Name: "a", Command: "x"},
		{Name: "claude-opus", Command: "claude-agent-acp", Env: []string{"ANTHROPIC_MODEL=opus"}},
		{Name: "v1.2_beta-3", Command: "/usr/bin/agent", Args: []string{"--acp", ""}},
		{Name: "0day", Command: "x", Env: []string{"EMPTY=", "K=a=b", "_U=1"}},
		{Name: strings.Repeat("a", 32), Command: "x"},
		{Name: "slow", Command: "x", StartTimeout: "3m"},
		{Name: "ownhome", Command: "x", Env: []string{"HOME=/elsewhere"}},
		{Name: "local", Command: "x", Sandbox: SandboxDocker, Network: "none", Forwards: []int{11434, 1}},
		{Name: "boxedhome", Command: "x", Sandbox: SandboxBwrap, Env: []string{"HOME=" + home}},
	}
	for _, p := range ok {
		if err := ValidateProfile(p); err != nil {
			t.Errorf("%+v refused: %v", p, err)
		}
	}
	bad := []struct {
		p    Profile
		says string
	}{
		{Profile{Name: "", Command: "x"}, "profile name"},
		{Profile{Name: "Claude", Command: "x"}, "lowercase"},
		{Profile{Name: "-dash", Command: "x"}, "starting with"},
		{Profile{Name: ".dot", Command: "x"}, "starting with"},
		{Profile{Name: "has space", Command: "x"}, "profile name"},
		{Profile{Name: "slash/x", Command: "x"}, "profile name"},
		{Profile{Name: strings.Repeat("a", 33), Command: "x"}, "1-32"},
		{Profile{Name: "nocmd", Command: ""}, "--command is required"},
		{Profile{Name: "blank", Command: "   "}, "--command is required"},
		{Profile{Name: "env1", Command: "x", Env: []string{"NOEQUALS"}}, "KEY=VALUE"},
		{Profile{Name: "env2", Command: "x", Env: []string{"=v"}}, "KEY=VALUE"},
		{Profile{Name: "env3", Command: "x", Env: []string{"1K=v"}}, "KEY=VALUE"},
		{Profile{Name: "env4", Command: "x", Env: []string{"K-Y=v"}}, "KEY=VALUE"},
		{Profile{Name: "st1", Command: "x", StartTimeout: "soon"}, "start timeout"},
		{Profile{Name: "st2", Command: "x", StartTimeout: "-1s"}, "positive duration"},
		{Profile{Name: "boxed", Command: "x", Sandbox: SandboxBwrap, Env: []string{"HOME=/elsewhere"}}, "a confined agent's HOME is its task's private home"},
		{Profile{Name: "net1", Command: "x", Network: "bridge"}, "must be none, default or host"},
		{Profile{Name: "net2", Command: "x", Network: "host", NoNetwork: true}, "contradict"},
		{Profile{Name: "fwd1", Command: "x", Forwards: []int{0}}, "from 1 to 65535"},
		{Profile{Name: "fwd2", Command: "x", Forwards: []int{70000}}, "from 1 to 65535"},
		{Profile{Name: "fwd3", Command: "x", Forwards: []int{80, 80}}, "forwarded twice"},
		{Profile{Name: "docked", Command: "x", Sandbox: SandboxDocker, Env: []string{"HOME="}}, "drop --env HOME"},
	}
	for _, c := range bad {
		err := ValidateProfile(c.p)
		if err == nil {
			t.Errorf("%+v accepted", c.p)
			continue
		}
		if CodeOf(err) != CodeValidation || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%+v: %v (code %s), want a validation error saying %q", c.p, err, CodeOf(err), c.says)
		}
	}
}

func TestCheckAutopilotProfile(t *testing.T) {
	if err := CheckAutopilotProfile(Profile{Name: "claude", Command: "claude-agent-acp", MCP: true}); err != nil {
		t.Fatalf("an MCP-capable profile was refused: %v", err)
	}
	err := CheckAutopilotProfile(Profile{Name: "plain", Command: "x", MCP: false})
	if err == nil {
		t.Fatal("a profile without MCP may run autopilot")
	}
	if CodeOf(err) != CodeValidation {
		t.Fatalf("code %s", CodeOf(err))
	}
	for _, want := range []string{"plain", "autopilot", "mcp: false", "MCP server"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

func TestMergeProfiles(t *testing.T) {
	names := func(ps []Profile) []string {
		var out []string
		for _, p := range ps {
			out = append(out, p.Name)
		}
		return out
	}
	base := MergeProfiles(nil)
	if !slices.IsSorted(names(base)) || len(base) != len(BuiltinProfiles()) {
		t.Fatalf("built-ins alone: %v", names(base))
	}
	for _, p := range base {
		if p.Source != "builtin" {
			t.Errorf("%s: source %q", p.Name, p.Source)
		}
	}
	merged := MergeProfiles([]Profile{
		{Name: "claude", Command: "my-claude", MCP: false, Source: "whatever"},
		{Name: "aaa", Command: "first", MCP: true},
		{Name: "zeta", Command: "last"},
	})
	got := names(merged)
	if !slices.IsSorted(got) {
		t.Fatalf("not sorted by name: %v", got)
	}
	if len(merged) != len(base)+2 {
		t.Fatalf("merged %v", got)
	}
	by := map[string]Profile{}
	for _, p := range merged {
		by[p.Name] = p
	}
	if c := by["claude"]; c.Source != "override" || c.Command != "my-claude" || c.MCP {
		t.Errorf("override: %+v", c)
	}
	if a := by["aaa"]; a.Source != "user" || a.Command != "first" {
		t.Errorf("user profile: %+v", a)
	}
	if z := by["zeta"]; z.Source != "user" {
		t.Errorf("user profile: %+v", z)
	}
	if g := by["gemini"]; g.Source != "builtin" || g.Command != "gemini" {
		t.Errorf("untouched built-in: %+v", g)
	}
	// Merging did not change the built-ins.
	if b, _ := BuiltinProfile("claude"); b.Command != "claude-agent-acp" || b.Source != "builtin" {
		t.Errorf("built-in claude changed: %+v", b)
	}
}

func TestProfileMCPServers(t *testing.T) {
	srv := func(name string) MCPServer { return MCPServer{Name: name, Command: "mcp-x", Args: []string{}} }
	base := Profile{Name: "p", Command: "agent", MCP: true}
	good := base
	good.MCPServers = []MCPServer{srv("browser"), srv("pg_1"), srv("0-db")}
	if err := ValidateProfile(good); err != nil {
		t.Fatalf("good servers: %v", err)
	}
	for _, c := range []struct {
		name    string
		mcp     bool
		servers []MCPServer
		want    string
	}{
		{"kandev's own name", true, []MCPServer{srv("kandev")}, "kandev's own server"},
		{"upper case", true, []MCPServer{srv("Browser")}, `name "Browser": use 1-32 lowercase`},
		{"a dot", true, []MCPServer{srv("a.b")}, `name "a.b"`},
		{"leading dash", true, []MCPServer{srv("-a")}, `name "-a"`},
		{"too long", true, []MCPServer{srv(strings.Repeat("a", 33))}, "use 1-32"},
		{"twice", true, []MCPServer{srv("db"), srv("db")}, `"db" is named twice`},
		{"no command", true, []MCPServer{{Name: "db"}}, `"db" has no command`},
		{"bad env", true, []MCPServer{{Name: "db", Command: "x", Env: []string{"NOEQUALS"}}}, `env "NOEQUALS"`},
		{"no mcp", false, []MCPServer{srv("db")}, "does not accept injected MCP servers"},
	} {
		p := base
		p.MCP = c.mcp
		p.MCPServers = c.servers
		err := ValidateProfile(p)
		if err == nil || !strings.Contains(err.Error(), c.want) || CodeOf(err) != CodeValidation {
			t.Errorf("%s: got %v, want a validation error with %q", c.name, err, c.want)
		}
	}
}

func TestParseMCPServer(t *testing.T) {
	s, err := ParseMCPServer("db=/opt/pg/bin/pg-mcp --read-only  --port 5")
	if err != nil || s.Name != "db" || s.Command != "/opt/pg/bin/pg-mcp" || !slices.Equal(s.Args, []string{"--read-only", "--port", "5"}) {
		t.Fatalf("got %+v, %v", s, err)
	}
	if s, err := ParseMCPServer("x=cmd"); err != nil || s.Args == nil || len(s.Args) != 0 {
		t.Errorf("no args: got %#v, %v (want empty, not nil)", s.Args, err)
	}
	for _, bad := range []string{"", "db", "db=", "db=   ", "=cmd"} {
		if _, err := ParseMCPServer(bad); err == nil || !strings.Contains(err.Error(), "want NAME=COMMAND") {
			t.Errorf("%q: got %v", bad, err)
		}
	}
	if n, kv, err := ParseMCPServerEnv("db:URL=a:b=c"); err != nil || n != "db" || kv != "URL=a:b=c" {
		t.Errorf("env: %q %q %v", n, kv, err)
	}
	for _, bad := range []string{"db", "db:URL", ":K=V"} {
		if _, _, err := ParseMCPServerEnv(bad); err == nil {
			t.Errorf("env %q: no error", bad)
		}
	}
}

// The mcp_servers setting: entries separated by ';', each checked as a
// profile's server is; a profile's server of the same name wins, and a
// profile that takes no injected servers gets none.
func TestMCPServerList(t *testing.T) {
	list, err := ParseMCPServerList(" browser=mcp-browser --headless ; db=/opt/db/mcp ;")
	if err != nil {
		t.Fatal(err)
	}
	if got := FormatMCPServerList(list); got != "browser=mcp-browser --headless; db=/opt/db/mcp" {
		t.Fatalf("canonical form %q", got)
	}
	for _, bad := range []string{"kandev=x", "Browser=x", "a=x; a=y", "noequals", "a="} {
		if _, err := ParseMCPServerList(bad); err == nil || CodeOf(err) != CodeValidation {
			t.Errorf("%q: %v, want a validation error", bad, err)
		}
	}
	own := Profile{Name: "p", MCP: true, MCPServers: []MCPServer{{Name: "db", Command: "mine"}}}
	got := own.WithServers(list)
	if len(got.MCPServers) != 2 || got.MCPServers[0].Command != "mine" || got.MCPServers[1].Name != "browser" {
		t.Fatalf("merged servers %+v", got.MCPServers)
	}
	if len(own.MCPServers) != 1 {
		t.Fatal("WithServers changed the profile it was given")
	}
	if got := (Profile{Name: "q", MCP: false}).WithServers(list); len(got.MCPServers) != 0 {
		t.Fatalf("a profile without injected MCP got %+v", got.MCPServers)
	}
}
