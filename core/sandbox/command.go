package sandbox

import (
	"runtime"
	"strings"
)

// Command is the program and arguments that run cmd confined by the view,
// and the environment to give that program: env (the agent's, KEY=VALUE)
// with HOME and TMPDIR set for inside. For a container the environment
// reaches the agent by name through the container engine's own.
func (v View) Command(cmd string, args, env []string) (string, []string, []string) {
	env = append(env, "HOME="+v.Home, "TMPDIR=/tmp")
	cmd, args = v.forwardArgs(cmd, args)
	switch v.Mode {
	case "docker", "podman":
		return v.Mode, append(append(v.ContainerArgs(EnvNames(env)), cmd), args...), env
	}
	if runtime.GOOS == "darwin" {
		// Seatbelt cannot mount the private home over the operator's: the
		// agent's HOME is the private home itself.
		for _, m := range v.Mounts {
			if m.Why == "private home" {
				env = append(env, "HOME="+m.Src)
			}
		}
		return "sandbox-exec", append([]string{"-p", v.Seatbelt(), cmd}, args...), env
	}
	return "bwrap", append(append(v.BwrapArgs(), cmd), args...), env
}

// EnvNames are the names in an agent's environment (KEY=VALUE), each once,
// that a container is given by name (ContainerArgs): HOME and TMPDIR are
// the view's own, and PATH the image's.
func EnvNames(env []string) []string {
	var names []string
	seen := map[string]bool{}
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if k == "HOME" || k == "TMPDIR" || k == "PATH" || seen[k] {
			continue
		}
		seen[k] = true
		names = append(names, k)
	}
	return names
}
