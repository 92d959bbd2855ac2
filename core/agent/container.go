package agent

import (
	"context"
	"os/exec"
	"time"

	"github.com/kandev/kandev/core/sandbox"
)

// containerRemoveTimeout bounds the removal of a session's container.
const containerRemoveTimeout = 30 * time.Second

// removeContainer removes the session's container, if it ran in one, once
// the container engine's client is gone: a stop's SIGKILL ends the client
// (docker run) only, and the container must not outlive the session. The
// container runs with --rm, so an agent that exited has usually taken it
// already; the removal of one that is gone fails harmlessly.
func removeContainer(spec Spec) {
	v := spec.Sandbox
	if v == nil || (v.Mode != "docker" && v.Mode != "podman") {
		return
	}
	RemoveContainers(v.Mode, sandbox.ContainerName(v.SessionID))
}

// RemoveContainers force-removes the named containers through engine
// (docker or podman), bounded in time; errors are ignored: a container
// that is not there is what we want.
func RemoveContainers(engine string, names ...string) {
	if len(names) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), containerRemoveTimeout)
	defer cancel()
	_ = exec.CommandContext(ctx, engine, append([]string{"rm", "--force"}, names...)...).Run()
}
