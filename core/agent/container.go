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
// (docker or podman), bounded in time; a container that is not there is
// what we want. A failed removal is tried again while one is still there:
// podman cannot remove a container whose conmon died (the engine killed
// mid-turn) until it has marked it exited, a moment later.
func RemoveContainers(engine string, names ...string) {
	if len(names) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), containerRemoveTimeout)
	defer cancel()
	for {
		if exec.CommandContext(ctx, engine, append([]string{"rm", "--force"}, names...)...).Run() == nil {
			return
		}
		// Usually the failure is a container already gone (docker's rm
		// says so of one its --rm took), or an engine that no longer
		// answers: then none is found and we are done.
		if names = existingContainers(ctx, engine, names); len(names) == 0 {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(containerRetryPause):
		}
	}
}

// containerRetryPause spaces the tries of a removal that failed.
const containerRetryPause = 200 * time.Millisecond

// existingContainers are those of names the engine still has.
func existingContainers(ctx context.Context, engine string, names []string) []string {
	var left []string
	for _, n := range names {
		if exec.CommandContext(ctx, engine, "container", "inspect", "--format", "{{.Id}}", n).Run() == nil {
			left = append(left, n)
		}
	}
	return left
}
