package sandbox

import (
	"os"
	"strconv"
)

// LabelSession is the label every kandev container carries, valued with
// its session's id: stop, shutdown and the startup sweep find containers
// by it.
const LabelSession = "kandev.session"

// PidsLimit bounds the processes of one container.
const PidsLimit = 1024

// ContainerName is the container of a session.
func ContainerName(sessionID string) string { return "kandev-" + sessionID }

// ContainerArgs are `docker run` (or `podman run`) arguments for the view,
// up to and including the image; the agent's command follows. The image
// brings its own system directories, so only the task's own mounts are
// bound, each at the same path as on the host. env is the agent's
// environment (KEY=VALUE), passed by name so values stay off the command
// line.
func (v View) ContainerArgs(envNames []string) []string {
	user := v.User
	if user == "" {
		user = strconv.Itoa(os.Getuid()) + ":" + strconv.Itoa(os.Getgid())
	}
	args := []string{"run", "-i", "--rm", "--pull", "never", "--name", ContainerName(v.SessionID),
		"--label", LabelSession + "=" + v.SessionID,
		"--user", user,
		"--cap-drop=ALL", "--security-opt", "no-new-privileges",
		"--pids-limit", strconv.Itoa(PidsLimit),
		"--read-only", "--tmpfs", "/tmp:rw,nosuid,nodev",
		"--workdir", v.Dir, "--env", "HOME=" + v.Home, "--env", "TMPDIR=/tmp",
		// docker run forwards the signals it gets to the agent; a stop's
		// SIGKILL ends the client only, so teardown also removes the
		// container by its label.
		"--sig-proxy=true"}
	switch {
	case !v.Network:
		args = append(args, "--network", "none")
	case v.NetworkMode == NetworkHost:
		args = append(args, "--network", "host")
	}
	for _, n := range envNames {
		args = append(args, "--env", n)
	}
	for _, m := range v.Mounts {
		if m.Tmpfs || m.Why == "system" || m.Path == "/tmp" {
			continue
		}
		src := m.Src
		if src == "" {
			src = m.Path
		}
		opt := src + ":" + m.Path
		if !m.RW {
			opt += ":ro"
		}
		args = append(args, "--volume", opt)
	}
	return append(args, v.Image)
}
