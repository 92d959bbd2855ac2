package sandbox

// BwrapArgs are bubblewrap's arguments for the view, up to and including
// the "--" before the agent's command. The agent gets its own PID, IPC,
// UTS and cgroup namespaces and a fresh /proc, so it sees no other
// process; it stays in kandev's process group (no --new-session), so a
// stop's signals to the group reach it as they reach an agent on the
// host, and its environment still carries the session's marker, which
// the daemon reads from the host's /proc.
func (v View) BwrapArgs() []string {
	args := []string{"--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
		"--hostname", "kandev-sandbox", "--proc", "/proc", "--dev", "/dev"}
	if !v.Network {
		args = append(args, "--unshare-net")
	}
	for _, m := range v.Mounts {
		src := m.Src
		if src == "" {
			src = m.Path
		}
		switch {
		case m.Tmpfs:
			args = append(args, "--tmpfs", m.Path)
		case m.RW:
			args = append(args, "--bind", src, m.Path)
		default:
			args = append(args, "--ro-bind", src, m.Path)
		}
	}
	args = append(args, "--setenv", "HOME", v.Home, "--setenv", "TMPDIR", "/tmp", "--chdir", v.Dir, "--")
	return args
}
