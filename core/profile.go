package core

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// SelfCommand stands for the running kandev executable in a profile's
// command; the runtime swaps in os.Executable() at launch.
const SelfCommand = "@kandev"

// Permission policies: how kandev answers an agent's
// session/request_permission (ADR 0024).
const (
	PermissionAllow = "allow"
	PermissionDeny  = "deny"
	PermissionAsk   = "ask"
)

// DefaultProfile runs when a task names none.
const DefaultProfile = "mock"

// BuiltinProfiles are the agents kandev knows out of the box. A user profile
// of the same name overrides one; removing it brings the built-in back.
func BuiltinProfiles() []Profile {
	return []Profile{
		{Name: "mock", Command: SelfCommand, Args: []string{"mock-agent"}, MCP: true, Source: "builtin"},
		// Claude Code connects MCP servers in the background unless told
		// not to, so its first model request could go out without kandev's
		// tools; MCP_TIMEOUT (ms) bounds that now-blocking connect.
		// Paths: each agent's own config, credentials and session state,
		// what a confined session of it may reach besides its worktree
		// (docs/agents.md, docs/sandbox.md).
		{Name: "claude", Command: "claude-agent-acp", Env: []string{"MCP_CONNECTION_NONBLOCKING=0", "MCP_TIMEOUT=60000"}, MCP: true, Source: "builtin",
			Paths: []string{"~/.claude", "~/.claude.json", "~/.config/claude"}},
		{Name: "codex", Command: "codex-acp", MCP: true, Source: "builtin", Paths: []string{"~/.codex"}},
		{Name: "gemini", Command: "gemini", Args: []string{"--acp"}, MCP: true, Source: "builtin", Paths: []string{"~/.gemini"}},
		{Name: "qwen", Command: "qwen", Args: []string{"--acp"}, MCP: true, Source: "builtin", Paths: []string{"~/.qwen"}},
		{Name: "opencode", Command: "opencode", Args: []string{"acp"}, MCP: true, Source: "builtin",
			Paths: []string{"~/.config/opencode", "~/.local/share/opencode", "~/.local/state/opencode"}},
	}
}

// BuiltinProfile returns the built-in of that name.
func BuiltinProfile(name string) (Profile, bool) {
	for _, p := range BuiltinProfiles() {
		if p.Name == name {
			return p, true
		}
	}
	return Profile{}, false
}

// Compiled on first use, not in every kandev process's init.
var (
	profileNameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,31}$`) })
	envKeyRE      = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })
	mcpNameRE     = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,31}$`) })
)

// KandevMCPServer is the name of kandev's own MCP server in every
// session/new; no profile's server may take it.
const KandevMCPServer = "kandev"

// ParseMCPServer reads a --mcp-server value, NAME=COMMAND ARG...: the
// command and its arguments split at spaces (no quoting; an argument with
// a space needs a wrapper script).
func ParseMCPServer(s string) (MCPServer, error) {
	name, rest, ok := strings.Cut(s, "=")
	fields := strings.Fields(rest)
	if !ok || strings.TrimSpace(name) == "" || len(fields) == 0 {
		return MCPServer{}, Errorf(CodeValidation, "--mcp-server %q: want NAME=COMMAND [ARG...], e.g. browser=/usr/local/bin/mcp-browser --headless", s)
	}
	return MCPServer{Name: name, Command: fields[0], Args: fields[1:]}, nil
}

// ParseMCPServerEnv reads a --mcp-server-env value, NAME:KEY=VALUE, into
// its server's name and the entry.
func ParseMCPServerEnv(s string) (name, kv string, err error) {
	name, kv, ok := strings.Cut(s, ":")
	if !ok || name == "" || !strings.Contains(kv, "=") {
		return "", "", Errorf(CodeValidation, "--mcp-server-env %q: want NAME:KEY=VALUE, NAME one of the profile's --mcp-server", s)
	}
	return name, kv, nil
}

// validateMCPServers checks a profile's own MCP servers.
func validateMCPServers(p Profile) error {
	if len(p.MCPServers) > 0 && !p.MCP {
		return Errorf(CodeValidation, "profile %s has MCP servers but does not accept injected MCP servers (--no-mcp, mcp: false): drop --no-mcp or the --mcp-server flags", p.Name)
	}
	return validateMCPServerList("profile "+p.Name, p.MCPServers)
}

// validateMCPServerList checks servers named in one place (a profile, the
// configuration), where names the errors.
func validateMCPServerList(where string, servers []MCPServer) error {
	seen := map[string]bool{}
	for _, s := range servers {
		switch {
		case s.Name == KandevMCPServer:
			return Errorf(CodeValidation, "%s: MCP server name %q is kandev's own server, always given to the agent: pick another name", where, s.Name)
		case !mcpNameRE().MatchString(s.Name):
			return Errorf(CodeValidation, "%s: MCP server name %q: use 1-32 lowercase letters, digits, '_' or '-', starting with a letter or digit", where, s.Name)
		case seen[s.Name]:
			return Errorf(CodeValidation, "%s: MCP server %q is named twice", where, s.Name)
		case strings.TrimSpace(s.Command) == "":
			return Errorf(CodeValidation, "%s: MCP server %q has no command", where, s.Name)
		}
		seen[s.Name] = true
		for _, kv := range s.Env {
			k, _, ok := strings.Cut(kv, "=")
			if !ok || !envKeyRE().MatchString(k) {
				return Errorf(CodeValidation, "%s: MCP server %s env %q must be KEY=VALUE with a shell-style KEY", where, s.Name, kv)
			}
		}
	}
	return nil
}

// ParseMCPServerList reads the mcp_servers setting: NAME=COMMAND ARG...
// entries separated by ';', checked as a profile's are.
func ParseMCPServerList(s string) ([]MCPServer, error) {
	var out []MCPServer
	for _, entry := range strings.Split(s, ";") {
		if strings.TrimSpace(entry) == "" {
			continue
		}
		srv, err := ParseMCPServer(strings.TrimSpace(entry))
		if err != nil {
			return nil, Errorf(CodeValidation, "mcp_servers entry %q: want NAME=COMMAND [ARG...], entries separated by ';'", strings.TrimSpace(entry))
		}
		out = append(out, srv)
	}
	if err := validateMCPServerList("mcp_servers", out); err != nil {
		return nil, err
	}
	return out, nil
}

// FormatMCPServerList is the mcp_servers setting's canonical text.
func FormatMCPServerList(servers []MCPServer) string {
	parts := make([]string, len(servers))
	for i, s := range servers {
		parts[i] = s.Name + "=" + strings.Join(append([]string{s.Command}, s.Args...), " ")
	}
	return strings.Join(parts, "; ")
}

// WithServers is the profile with the configuration's MCP servers after
// its own: only where it takes injected MCP servers, and a server the
// profile names itself is the profile's (ADR 0078).
func (p Profile) WithServers(configured []MCPServer) Profile {
	if !p.MCP || len(configured) == 0 {
		return p
	}
	servers := append([]MCPServer{}, p.MCPServers...)
	for _, c := range configured {
		if !slices.ContainsFunc(servers, func(s MCPServer) bool { return s.Name == c.Name }) {
			servers = append(servers, c)
		}
	}
	p.MCPServers = servers
	return p
}

// ValidateProfile checks a profile a user wants to add.
func ValidateProfile(p Profile) error {
	if !profileNameRE().MatchString(p.Name) {
		return Errorf(CodeValidation, "profile name %q: use 1-32 lowercase letters, digits, '.', '_' or '-', starting with a letter or digit", p.Name)
	}
	if strings.TrimSpace(p.Command) == "" {
		return Errorf(CodeValidation, "profile %s: --command is required", p.Name)
	}
	if p.StartTimeout != "" {
		if d, err := time.ParseDuration(p.StartTimeout); err != nil || d <= 0 {
			return Errorf(CodeValidation, "profile %s: start timeout %q must be a positive duration such as 90s or 3m", p.Name, p.StartTimeout)
		}
	}
	switch p.Permission {
	case "", PermissionAllow, PermissionDeny, PermissionAsk:
	default:
		return Errorf(CodeValidation, "profile %s: permission %q must be allow, deny or ask", p.Name, p.Permission)
	}
	switch p.AutopilotPermission {
	case "", PermissionAllow, PermissionDeny:
	default:
		return Errorf(CodeValidation, "profile %s: autopilot permission %q must be allow or deny (nobody is asked on autopilot)", p.Name, p.AutopilotPermission)
	}
	if err := ValidateSandbox("profile "+p.Name, p.Sandbox); err != nil {
		return err
	}
	if p.Sandbox != "" && p.Sandbox != SandboxNone {
		if err := CheckConfinedHome(p); err != nil {
			return err
		}
	}
	switch p.Network {
	case "", "none", "host":
	default:
		return Errorf(CodeValidation, "profile %s: network %q must be none, default or host", p.Name, p.Network)
	}
	if p.NoNetwork && p.Network == "host" {
		return Errorf(CodeValidation, "profile %s: --no-network and --network host contradict each other", p.Name)
	}
	seen := map[int]bool{}
	for _, port := range p.Forwards {
		if port < 1 || port > 65535 {
			return Errorf(CodeValidation, "profile %s: forward %d must be a port from 1 to 65535", p.Name, port)
		}
		if seen[port] {
			return Errorf(CodeValidation, "profile %s: port %d is forwarded twice", p.Name, port)
		}
		seen[port] = true
	}
	for _, path := range p.Paths {
		if q := strings.TrimPrefix(path, "ro:"); !strings.HasPrefix(q, "/") && q != "~" && !strings.HasPrefix(q, "~/") {
			return Errorf(CodeValidation, "profile %s: path %q must be absolute or start with ~/ (ro: in front for read-only)", p.Name, path)
		}
	}
	for _, kv := range p.Env {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || !envKeyRE().MatchString(k) {
			return Errorf(CodeValidation, "profile %s: env %q must be KEY=VALUE with a shell-style KEY", p.Name, kv)
		}
	}
	return validateMCPServers(p)
}

// CheckConfinedHome refuses a profile that sets HOME for an agent that
// runs confined: there HOME is the task's private home, mounted at the
// operator's home path (docs/sandbox.md, "The environment"), and a HOME of
// the profile's would be either silently replaced or a path the sandbox
// does not show. A HOME equal to the operator's own is what the agent
// gets anyway and passes.
func CheckConfinedHome(p Profile) error {
	for _, kv := range p.Env {
		k, v, _ := strings.Cut(kv, "=")
		if k != "HOME" {
			continue
		}
		if own, err := os.UserHomeDir(); err == nil && filepath.Clean(v) == filepath.Clean(own) {
			continue
		}
		return Errorf(CodeValidation,
			"profile %s sets HOME=%s, but a confined agent's HOME is its task's private home, at your home's path "+
				"(docs/sandbox.md, The environment): drop --env HOME, and give the agent the directories it needs with --path", p.Name, v)
	}
	return nil
}

// CheckAutopilotProfile enforces rule 1's last clause: an autopilot agent
// coordinates only through kandev's MCP tools, so a profile that cannot take
// an injected MCP server cannot run an autopilot task.
func CheckAutopilotProfile(p Profile) error {
	if !p.MCP {
		return Errorf(CodeValidation,
			"profile %s cannot run an autopilot task: it does not accept an injected MCP server (mcp: false), "+
				"so its agent could not reach kandev's coordination tools; pick a profile with mcp: true or drop --autopilot", p.Name)
	}
	return nil
}

// MergeProfiles lays user profiles over the built-ins, sorted by name.
func MergeProfiles(user []Profile) []Profile {
	byName := map[string]Profile{}
	for _, p := range BuiltinProfiles() {
		byName[p.Name] = p
	}
	for _, p := range user {
		if _, ok := byName[p.Name]; ok {
			p.Source = "override"
		} else {
			p.Source = "user"
		}
		byName[p.Name] = p
	}
	out := make([]Profile, 0, len(byName))
	for _, p := range byName {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// CommandLine renders the profile's command as a person would type it.
func (p Profile) CommandLine() string {
	cmd := p.Command
	if cmd == SelfCommand {
		cmd = "kandev"
	}
	return strings.Join(append([]string{cmd}, p.Args...), " ")
}
