// Package doctor diagnoses a kandev setup without changing it: which
// profiles can run, the daemon, the database, git. It never starts the
// daemon and only reads the database.
package doctor

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/agent"
	"github.com/kandev/kandev/core/daemonclient"
	"github.com/kandev/kandev/core/workspace"
	"github.com/kandev/kandev/store"
)

// Options say what to diagnose.
type Options struct {
	Home    core.Home
	SelfExe string
	Getenv  func(string) string
	// DefaultProfile is the profile a new task gets and DefaultSource where
	// that came from (env or file); empty picks it as task create does.
	DefaultProfile string
	DefaultSource  string
	// Timeout bounds each agent's initialize answer.
	Timeout time.Duration
	// MCPServers are the mcp_servers setting's, given to every profile
	// that takes injected servers after its own.
	MCPServers []core.MCPServer
}

// DefaultTimeout bounds the ACP handshake of one profile.
const DefaultTimeout = 10 * time.Second

// versionTimeout bounds `CMD --version`: some agents take no such flag and
// start instead, so it must never be waited on for long.
const versionTimeout = 3 * time.Second

// Profile is one profile's diagnosis.
type Profile struct {
	Name    string `json:"name"`
	Source  string `json:"source"`
	Command string `json:"command"`
	// Found: the command is on PATH (Path is where).
	Found   bool   `json:"found"`
	Path    string `json:"path,omitempty"`
	Version string `json:"version,omitempty"`
	// ACP is the agent's answer to initialize; ACPError why there was none.
	ACP      *agent.Handshake `json:"acp,omitempty"`
	ACPError string           `json:"acp_error,omitempty"`
	// Usable: found and answered initialize.
	Usable bool `json:"usable"`
	// Credentials are the credentials variables the agent reads that are
	// set (names only), CredentialsKnown all those it reads.
	Credentials      []string `json:"credentials"`
	CredentialsKnown []string `json:"credentials_known"`
	Install          string   `json:"install,omitempty"`
	Default          bool     `json:"default"`
	// Usage says what the agent reports of its spend ("tokens and cost",
	// "context and cost"); "" when nothing is known (docs/usage.md).
	Usage string `json:"usage"`
	// MCPServers are the profile's own MCP servers, then the mcp_servers
	// setting's, and whether each command is found (ADR 0078).
	MCPServers []MCPServer `json:"mcp_servers,omitempty"`
}

// MCPServer is one of a profile's MCP servers: its command, found on PATH
// here (Path) or not (Error). The agent starts it, confined with it.
type MCPServer struct {
	Name    string `json:"name"`
	Command string `json:"command"`
	Found   bool   `json:"found"`
	Path    string `json:"path,omitempty"`
	Error   string `json:"error,omitempty"`
}

// checkServers says whether each of p's MCP servers' commands resolves
// as the launch resolves it (on PATH, or an absolute path that runs).
func checkServers(p core.Profile) []MCPServer {
	var out []MCPServer
	for _, s := range p.MCPServers {
		c := MCPServer{Name: s.Name, Command: strings.Join(append([]string{s.Command}, s.Args...), " ")}
		if path, err := exec.LookPath(s.Command); err != nil {
			c.Error = "command not found on PATH: " + s.Command
		} else {
			c.Found, c.Path = true, path
		}
		out = append(out, c)
	}
	return out
}

// Database is the database's diagnosis.
type Database struct {
	Path   string `json:"path"`
	Exists bool   `json:"exists"`
	// Via is how it was checked: "daemon" (the running daemon ran the
	// check on its connection) or "file" (opened read-only here).
	Via       string   `json:"via,omitempty"`
	Integrity []string `json:"integrity,omitempty"`
	OK        bool     `json:"ok"`
	Error     string   `json:"error,omitempty"`
}

// Git is whether git is on PATH.
type Git struct {
	Found   bool   `json:"found"`
	Path    string `json:"path,omitempty"`
	Version string `json:"version,omitempty"`
}

// Report is the whole diagnosis.
type Report struct {
	DefaultProfile string              `json:"default_profile"`
	DefaultSource  string              `json:"default_source"`
	DefaultUsable  bool                `json:"default_usable"`
	Profiles       []Profile           `json:"profiles"`
	Daemon         daemonclient.Status `json:"daemon"`
	Home           string              `json:"home"`
	Socket         string              `json:"socket"`
	Database       Database            `json:"database"`
	Git            Git                 `json:"git"`
	// Sandboxes are the confinement modes this machine has, and
	// ProfileSandboxes whether each profile's own sandbox can start.
	Sandboxes        []Sandbox        `json:"sandboxes"`
	ProfileSandboxes []ProfileSandbox `json:"profile_sandboxes"`
}

// Run diagnoses the setup.
func Run(ctx context.Context, o Options) (Report, error) {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	r := Report{Home: o.Home.Dir, Socket: o.Home.Socket(), DefaultProfile: o.DefaultProfile, DefaultSource: o.DefaultSource}
	st, err := daemonclient.Probe(ctx, o.Home)
	if err != nil {
		return r, err
	}
	r.Daemon = st
	var client *daemonclient.Client
	if st.Answering {
		client = daemonclient.Dial(o.Home.Socket())
		defer client.Close()
	}
	profiles, db := profilesAndDB(ctx, o.Home, client)
	r.Database = db
	if r.DefaultProfile == "" {
		r.DefaultProfile, r.DefaultSource = core.PickDefaultProfile(profiles, o.SelfExe), "picked"
	}
	// Each check may wait out its timeout on a mute agent: run them side
	// by side so doctor takes one timeout, not one per profile.
	r.Profiles = make([]Profile, len(profiles))
	var wg sync.WaitGroup
	for i, p := range profiles {
		wg.Go(func() { r.Profiles[i] = checkProfile(ctx, o, p.WithServers(o.MCPServers)) })
	}
	wg.Wait()
	for i := range r.Profiles {
		r.Profiles[i].Default = r.Profiles[i].Name == r.DefaultProfile
		if r.Profiles[i].Default {
			r.DefaultUsable = r.Profiles[i].Usable
		}
	}
	r.Git = checkGit(ctx)
	r.Sandboxes, r.ProfileSandboxes = checkSandboxes(ctx, o, profiles)
	return r, nil
}

// profilesAndDB reads the user's profiles and checks the database: through
// the daemon when it answers (it holds the database), else by opening the
// file read-only, never creating or migrating it.
func profilesAndDB(ctx context.Context, home core.Home, client *daemonclient.Client) ([]core.Profile, Database) {
	d := Database{Path: home.DB()}
	if client != nil {
		d.Exists, d.Via = true, "daemon"
		d.Integrity, d.OK, d.Error = integrity(client.IntegrityCheck(ctx))
		ps, err := client.ListProfiles(ctx)
		if err == nil {
			return ps, d
		}
		d.Error = join(d.Error, "list profiles: "+err.Error())
		return core.MergeProfiles(nil), d
	}
	if _, err := os.Stat(home.DB()); err != nil {
		// No database yet: the daemon makes it on its first start.
		d.OK = true
		return core.MergeProfiles(nil), d
	}
	d.Exists, d.Via = true, "file"
	db, err := store.OpenReadOnly(ctx, home.DB())
	if err != nil {
		d.Error = err.Error()
		return core.MergeProfiles(nil), d
	}
	defer db.Close()
	d.Integrity, d.OK, d.Error = integrity(db.IntegrityCheck(ctx))
	user, err := db.ListProfiles(ctx)
	if err != nil {
		d.Error = join(d.Error, "list profiles: "+err.Error())
		return core.MergeProfiles(nil), d
	}
	ps := make([]core.Profile, len(user))
	for i, p := range user {
		ps[i] = core.Profile{Name: p.Name, Command: p.Command, Args: p.Args, Env: p.Env, MCP: p.MCP, StartTimeout: p.StartTimeout}
	}
	return core.MergeProfiles(ps), d
}

func integrity(res []string, err error) ([]string, bool, string) {
	if err != nil {
		return nil, false, err.Error()
	}
	return res, len(res) == 1 && res[0] == "ok", ""
}

func join(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

func checkProfile(ctx context.Context, o Options, p core.Profile) Profile {
	pr := Profile{Name: p.Name, Source: p.Source, Command: p.CommandLine(), Credentials: []string{}, CredentialsKnown: []string{},
		MCPServers: checkServers(p)}
	if a, ok := core.AgentInfoFor(p.Name); ok && p.Source == "builtin" {
		pr.Install = a.Install
	}
	if p.Command == core.SelfCommand {
		pr.Usage = core.UsageTokensCost // the mock agent's `mock: usage`
	}
	if a, ok := core.AgentInfoFor(p.Name); ok {
		pr.Usage = a.Usage
		pr.CredentialsKnown = a.Credentials
		for _, name := range a.Credentials {
			if o.Getenv(name) != "" || profileSets(p, name) {
				pr.Credentials = append(pr.Credentials, name)
			}
		}
	}
	path, err := core.LookCommand(p, o.SelfExe)
	if err != nil {
		pr.ACPError = "command not found on PATH: " + p.Command
		return pr
	}
	pr.Found, pr.Path = true, path
	pr.Version = version(ctx, path)
	args := p.Args
	hs, err := agent.Initialize(ctx, agent.Spec{Command: path, Args: args, Env: p.Env, SessionID: "doctor-" + core.NewID()}, o.Timeout)
	if err != nil {
		pr.ACPError = err.Error()
		return pr
	}
	pr.ACP, pr.Usable = &hs, true
	return pr
}

func profileSets(p core.Profile, name string) bool {
	for _, kv := range p.Env {
		if k, v, _ := strings.Cut(kv, "="); k == name && v != "" {
			return true
		}
	}
	return false
}

// maxProbeOutput is how much of a probe's output doctor keeps: a version
// is one line, and a command that prints without end must not fill memory.
const maxProbeOutput = 4 << 10

// version runs `PATH --version` in its own process group with a session
// marker, bounded in time and in what is kept of its output: the first
// line it prints, or "" when it prints nothing usable in time. Whatever
// it started is ended when it returns (ADR 0013's marker).
func version(ctx context.Context, path string) string {
	ctx, cancel := context.WithTimeout(ctx, versionTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "--version")
	session := agent.HelperMarker("doctor")
	cmd.Env = append(os.Environ(), agent.SessionEnv+"="+session)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// Kill the whole group: an agent that ignores --version and starts
	// may have started helpers.
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	out := &capped{max: maxProbeOutput}
	cmd.Stdout, cmd.Stderr = out, out
	// No stdin: an agent that starts anyway reads EOF and ends.
	// A failure (an agent that takes no --version) says nothing of its
	// version: only a clean exit counts.
	err := cmd.Run()
	if cmd.Process != nil {
		agent.EndHelper(cmd.Process.Pid, session)
	}
	if err != nil && !(errors.Is(err, exec.ErrWaitDelay) && cmd.ProcessState != nil && cmd.ProcessState.Success()) {
		return ""
	}
	line, _, _ := strings.Cut(strings.TrimSpace(out.buf.String()), "\n")
	if len(line) > 200 {
		line = line[:200]
	}
	return strings.TrimSpace(line)
}

// capped keeps the first max bytes written to it and drops the rest.
type capped struct {
	mu  sync.Mutex
	max int
	buf bytes.Buffer
}

func (c *capped) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if room := c.max - c.buf.Len(); room > 0 {
		c.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func checkGit(ctx context.Context) Git {
	path, err := exec.LookPath("git")
	if err != nil {
		return Git{}
	}
	// git runs only through kandev's one runner (ADR 0065), here outside
	// any repository.
	out, err := workspace.Git(ctx, workspace.GitCall{Dir: "/", Timeout: versionTimeout, Args: []string{"version"}})
	if err != nil {
		return Git{Found: true, Path: path}
	}
	return Git{Found: true, Path: path, Version: strings.TrimSpace(out)}
}
