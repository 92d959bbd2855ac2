package engine

import (
	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/hosts"
)

// Sandboxes on hosts (docs/hosts.md, ADR 0062): bubblewrap confines an
// agent on its host as it does here, and docker or podman run it in a
// container of the host's engine, with the view built from the host's
// paths (core/hosts/sandbox.go).

// hostSandboxErr refuses a task on a host whose sandbox kandev cannot
// apply there. Every mode kandev knows can be given on a host now
// (whether the host has it is checked when the run starts); an unknown
// one is refused rather than started less confined than it says.
func hostSandboxErr(host, mode string) error {
	switch mode {
	case "", sandboxAuto, core.SandboxNone, core.SandboxBwrap, core.SandboxDocker, core.SandboxPodman:
		return nil
	}
	if host == "" {
		return nil
	}
	return core.Errorf(core.CodeValidation, "sandbox %s on host %s: kandev cannot give it on a host (docs/hosts.md)", mode, host)
}

// hostSandboxMode is a sandbox mode resolved for a task on a host: auto
// (autopilot's default) is bwrap there whatever this machine has, and
// the host's bubblewrap is checked when the run starts (a host without it
// fails the run, which climbs), since creation does not reach the host.
func hostSandboxMode(mode string, autopilot bool) string {
	if mode == sandboxAuto || mode == "" {
		if autopilot {
			return core.SandboxBwrap
		}
		return core.SandboxNone
	}
	return mode
}

// confineOnHost tells the remote launcher how the task's agent is
// confined on its host: the mode, the task's private home there, the
// profile's declared paths, network and (for a container) image.
func confineOnHost(t core.Task, prof core.Profile, command string, r *hosts.Remote) {
	r.Command = command
	if core.SandboxRank(t.Sandbox) <= 0 {
		return
	}
	r.Sandbox = &hosts.Sandbox{Mode: t.Sandbox, TaskID: t.ID, Paths: prof.Paths, NoNetwork: prof.NoNetwork, Network: prof.Network, Image: prof.Image}
	for _, s := range prof.MCPServers {
		r.Sandbox.Servers = append(r.Sandbox.Servers, s.Command)
	}
}
