package engine

import (
	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/hosts"
)

// Sandboxes on hosts (docs/hosts.md, ADR 0062): bubblewrap confines an
// agent on its host as it does here, with the view built from the host's
// paths (core/hosts/sandbox.go); containers run on this machine only.

// hostSandboxErr refuses a task on a host whose sandbox kandev cannot
// apply there: docker and podman (kandev runs containers on this machine
// only). A task never runs less confined than its sandbox says, so it is
// refused rather than started there as bwrap or none.
func hostSandboxErr(host, mode string) error {
	if host == "" || (mode != core.SandboxDocker && mode != core.SandboxPodman) {
		return nil
	}
	return core.Errorf(core.CodeValidation, "sandbox %s on host %s: kandev runs containers on this machine only, not on hosts (docs/hosts.md): run it here (--host local), or on the host with --sandbox bwrap",
		mode, host)
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
// profile's declared paths and network.
func confineOnHost(t core.Task, prof core.Profile, command string, r *hosts.Remote) {
	r.Command = command
	if core.SandboxRank(t.Sandbox) <= 0 {
		return
	}
	r.Sandbox = &hosts.Sandbox{Mode: t.Sandbox, TaskID: t.ID, Paths: prof.Paths, NoNetwork: prof.NoNetwork}
}
