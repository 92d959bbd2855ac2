package doctor

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/agent"
	"github.com/kandev/kandev/core/sandbox"
)

// sandboxTimeout bounds each sandbox probe (a container engine that does
// not answer).
const sandboxTimeout = 5 * time.Second

// Sandbox is one confinement mode this machine may run (docs/sandbox.md).
type Sandbox struct {
	Mode    string `json:"mode"`
	Found   bool   `json:"found"`
	Path    string `json:"path,omitempty"`
	Version string `json:"version,omitempty"`
	// Works: bubblewrap made its namespaces, or the container engine's
	// daemon answered.
	Works bool   `json:"works"`
	Error string `json:"error,omitempty"`
	Hint  string `json:"hint,omitempty"`
}

// ProfileSandbox is whether a profile's agent starts inside the profile's
// own sandbox here: CanStart means it answered ACP's initialize from
// inside (the sandbox's program working is not enough: an agent whose
// install the sandbox does not see cannot start there).
type ProfileSandbox struct {
	Profile  string `json:"profile"`
	Mode     string `json:"mode"`
	Image    string `json:"image,omitempty"`
	CanStart bool   `json:"can_start"`
	// Agent is the agent's answer to initialize from inside.
	Agent *agent.Handshake `json:"agent,omitempty"`
	Why   string           `json:"why,omitempty"`
	// Log is the agent's stderr from its failed start, kept for reading.
	Log string `json:"log,omitempty"`
}

func run(ctx context.Context, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, sandboxTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// checkSandboxes probes bubblewrap, docker and podman, then each profile
// that names a sandbox.
func checkSandboxes(ctx context.Context, o Options, profiles []core.Profile) ([]Sandbox, []ProfileSandbox) {
	var out []Sandbox
	byMode := map[string]Sandbox{}
	for _, mode := range []string{core.SandboxBwrap, core.SandboxDocker, core.SandboxPodman} {
		s := Sandbox{Mode: mode, Hint: core.SandboxInstallHint(mode)}
		prog := core.SandboxProgram(mode)
		if p, err := exec.LookPath(prog); err == nil {
			s.Found, s.Path = true, p
			switch mode {
			case core.SandboxBwrap:
				s.Version, _ = run(ctx, p, "--version")
				if msg, err := run(ctx, p, "--ro-bind", "/", "/", "--unshare-pid", "--proc", "/proc", "--dev", "/dev", "true"); err != nil {
					s.Error = strings.TrimSpace(err.Error() + " " + msg)
				} else {
					s.Works = true
				}
			default:
				v, err := run(ctx, p, "version", "--format", "{{.Server.Version}}")
				if err != nil {
					s.Error = "the " + mode + " daemon does not answer (DOCKER_HOST, docker context): " + v
				} else {
					s.Version, s.Works = v, true
				}
			}
		}
		if s.Works {
			s.Hint = ""
		}
		out = append(out, s)
		byMode[mode] = s
	}
	var per []ProfileSandbox
	for _, p := range profiles {
		if p.Sandbox == "" || p.Sandbox == core.SandboxNone {
			continue
		}
		ps := ProfileSandbox{Profile: p.Name, Mode: p.Sandbox, Image: p.Image}
		s := byMode[p.Sandbox]
		switch {
		case !s.Works:
			ps.Why = p.Sandbox + " cannot run here: " + firstNonEmpty(s.Error, s.Hint)
		case (p.Sandbox == core.SandboxDocker || p.Sandbox == core.SandboxPodman) && p.Image == "":
			ps.Why = "no image (kandev profile add " + p.Name + " --image IMAGE)"
		case p.Sandbox == core.SandboxDocker || p.Sandbox == core.SandboxPodman:
			if _, err := run(ctx, s.Path, "image", "inspect", p.Image); err != nil {
				ps.Why = "image " + p.Image + " is not present (build or load it; kandev never pulls)"
			} else {
				ps.CanStart = true
			}
		default:
			ps.CanStart = true
		}
		per = append(per, ps)
	}
	// Each start may wait out its timeout on a mute agent: side by side.
	var wg sync.WaitGroup
	for i := range per {
		if per[i].CanStart {
			wg.Go(func() { startConfined(ctx, o, profiles[profileIndex(profiles, per[i].Profile)], &per[i]) })
		}
	}
	wg.Wait()
	return out, per
}

func profileIndex(profiles []core.Profile, name string) int {
	for i, p := range profiles {
		if p.Name == name {
			return i
		}
	}
	return -1
}

// startConfined starts the profile's agent inside its sandbox as a task's
// run would start there (its runtime, its declared paths, a private home,
// the profile's network), in a scratch working directory and home, and
// sends initialize: no session, no prompt, nothing spent. A failure keeps
// the agent's stderr and names its first meaningful line.
func startConfined(ctx context.Context, o Options, p core.Profile, ps *ProfileSandbox) {
	fail := func(why string) { ps.CanStart, ps.Why = false, why }
	if err := core.CheckConfinedHome(p); err != nil {
		fail(err.Error())
		return
	}
	path, err := core.LookCommand(p, o.SelfExe)
	if err != nil {
		fail("command not found on PATH: " + p.Command)
		return
	}
	opHome, err := os.UserHomeDir()
	if err != nil {
		fail("the operator's home: " + err.Error())
		return
	}
	scratch, err := os.MkdirTemp("", "kandev-doctor-")
	if err != nil {
		fail(err.Error())
		return
	}
	defer os.RemoveAll(scratch)
	work := filepath.Join(scratch, "work")
	if err := os.Mkdir(work, 0o700); err != nil {
		fail(err.Error())
		return
	}
	sid := "doctor-" + core.NewID()
	in := sandbox.Input{Mode: p.Sandbox, Image: p.Image, Worktree: work, PrivateHome: filepath.Join(scratch, "home"),
		OperatorHome: opHome, Paths: p.Paths, SelfExe: o.SelfExe, NoNetwork: p.NoNetwork, Network: p.Network,
		Forwards: p.Forwards, ForwardDir: scratch, SessionID: sid}
	env := append([]string(nil), p.Env...)
	if path == o.SelfExe {
		// The mock agent keeps its state in the home it is given, as in
		// a task (engine.confine).
		env = append(env, "KANDEV_MOCK_STATE_DIR="+filepath.Join(opHome, ".local", "state", "kandev-mock"))
	} else {
		in.Executables = []string{path}
	}
	v, err := sandbox.Describe(in)
	if err != nil {
		fail(err.Error())
		return
	}
	// The log outlives the scratch directory when the start fails, so
	// the line doctor shows can be read in full.
	logf, err := os.CreateTemp("", "kandev-doctor-"+p.Name+"-*.log")
	if err != nil {
		fail(err.Error())
		return
	}
	logf.Close()
	hs, err := agent.Initialize(ctx, agent.Spec{Command: path, Args: p.Args, Env: env, Dir: work, SessionID: sid, LogPath: logf.Name(), Sandbox: &v}, o.Timeout)
	if err != nil {
		fail("the agent does not start inside: " + err.Error())
		ps.Log = logf.Name()
		return
	}
	os.Remove(logf.Name())
	ps.Agent = &hs
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
