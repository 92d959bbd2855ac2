package doctor

import (
	"context"
	"os/exec"
	"strings"
	"time"

	"github.com/kandev/kandev/core"
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

// ProfileSandbox is whether a profile's own sandbox can start here.
type ProfileSandbox struct {
	Profile  string `json:"profile"`
	Mode     string `json:"mode"`
	Image    string `json:"image,omitempty"`
	CanStart bool   `json:"can_start"`
	Why      string `json:"why,omitempty"`
}

func run(ctx context.Context, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, sandboxTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// checkSandboxes probes bubblewrap, docker and podman, then each profile
// that names a sandbox.
func checkSandboxes(ctx context.Context, profiles []core.Profile) ([]Sandbox, []ProfileSandbox) {
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
	return out, per
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
