package engine

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	acp "github.com/coder/acp-go-sdk"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/config"
)

// profileServers are a profile's own MCP servers as session/new carries
// them, after kandev's (ADR 0078): stdio servers the agent starts itself,
// so inside its sandbox. For a run on this machine (local) a command is
// found on PATH here, as the agent's is, so that the sandbox can show its
// runtime; one not found stays as written, for the agent to find or to
// fail on (kandev doctor says which). Args and Env are never nil: real
// agents reject null.
func profileServers(prof core.Profile, local bool) []acp.McpServer {
	out := make([]acp.McpServer, 0, len(prof.MCPServers))
	for _, s := range prof.MCPServers {
		cmd := s.Command
		if local {
			if p, err := exec.LookPath(cmd); err == nil {
				if abs, err := filepath.Abs(p); err == nil {
					cmd = abs
				}
			}
		}
		args := append([]string{}, s.Args...)
		env := make([]acp.EnvVariable, 0, len(s.Env))
		for _, kv := range s.Env {
			k, v, _ := strings.Cut(kv, "=")
			env = append(env, acp.EnvVariable{Name: k, Value: v})
		}
		out = append(out, acp.McpServer{Stdio: &acp.McpServerStdio{Name: s.Name, Command: cmd, Args: args, Env: env}})
	}
	return out
}

// serverExecutables are what the sandbox view shows of the servers beside
// kandev's own: each command's runtime, and that of each argument that is
// an absolute path of a file (node /opt/x/server.js), as for the agent's
// command; never a file right in the operator's home or above it, whose
// directory would be the whole home.
func serverExecutables(servers []acp.McpServer, selfExe string) []string {
	home, _ := os.UserHomeDir()
	var out []string
	for _, s := range servers {
		if s.Stdio == nil || s.Stdio.Name == core.KandevMCPServer || s.Stdio.Command == selfExe {
			continue
		}
		if filepath.IsAbs(s.Stdio.Command) {
			out = append(out, s.Stdio.Command)
		}
		for _, a := range s.Stdio.Args {
			if !filepath.IsAbs(a) || aboveOrAt(filepath.Dir(a), home) {
				continue
			}
			if fi, err := os.Stat(a); err == nil && fi.Mode().IsRegular() {
				out = append(out, a)
			}
		}
	}
	return out
}

// aboveOrAt reports whether dir is home or one of its parents.
func aboveOrAt(dir, home string) bool {
	if home == "" {
		return dir == "/"
	}
	home = filepath.Clean(home)
	return dir == home || dir == "/" || strings.HasPrefix(home, dir+"/")
}

// serverNames are the names of the servers a profile's agent is given:
// kandev's own first, then the profile's.
func serverNames(prof core.Profile) []string {
	out := []string{core.KandevMCPServer}
	for _, s := range prof.MCPServers {
		out = append(out, s.Name)
	}
	return out
}

// withConfigServers is prof with the mcp_servers setting's servers after
// its own (core.Profile.WithServers). Unlike most settings, a value that
// does not parse fails the start that would have used it, naming it: the
// agent is never started quietly without the servers the operator named.
func (k *kernel) withConfigServers(prof core.Profile) (core.Profile, error) {
	var cfg config.Config
	if k.opts.Config != nil {
		// A file that does not load gives every setting its default (the
		// permission keys fail closed on it, ADR 0024), none here.
		if c, err := k.opts.Config(); err == nil {
			cfg = c
		}
	}
	v, err := cfg.Get("mcp_servers") // its error names the variable or key
	if err != nil {
		return prof, err
	}
	if strings.TrimSpace(v.Value) == "" {
		return prof, nil
	}
	list, err := core.ParseMCPServerList(v.Value)
	if err != nil {
		return prof, fmt.Errorf("the mcp_servers setting: %w", err)
	}
	return prof.WithServers(list), nil
}
