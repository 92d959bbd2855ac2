package core

import (
	"os/exec"
	"strings"
)

// Sandbox modes: where a task's agent runs (ADR 0048). The mode is fixed
// at creation like autopilot, and a child never runs less confined than
// its parent.
const (
	SandboxNone   = "none"   // on the host, as the operator
	SandboxBwrap  = "bwrap"  // bubblewrap on Linux, Seatbelt on macOS
	SandboxDocker = "docker" // a container of the profile's image
	SandboxPodman = "podman" // the same through podman
)

// SandboxModes lists the modes in the order of how much they confine.
func SandboxModes() []string {
	return []string{SandboxNone, SandboxBwrap, SandboxDocker, SandboxPodman}
}

// SandboxRank orders modes by confinement: none below bwrap below a
// container (docker and podman rank alike: the same mounts, and a
// container adds dropped capabilities, a seccomp filter and a pids limit
// to what bwrap hides). -1 for an unknown mode.
func SandboxRank(mode string) int {
	switch mode {
	case SandboxNone, "":
		return 0
	case SandboxBwrap:
		return 1
	case SandboxDocker, SandboxPodman:
		return 2
	}
	return -1
}

// ValidateSandbox checks a mode a user gave.
func ValidateSandbox(what, mode string) error {
	if mode != "" && SandboxRank(mode) < 0 {
		return Errorf(CodeValidation, "%s: sandbox %q must be one of %s", what, mode, strings.Join(SandboxModes(), ", "))
	}
	return nil
}

// CheckChildSandbox refuses a child less confined than its parent.
func CheckChildSandbox(parentID, parentMode, childMode string) error {
	if SandboxRank(childMode) < SandboxRank(parentMode) {
		return Errorf(CodeValidation,
			"sandbox %s is less confined than its parent task %s's sandbox %s; a child runs at least as confined as its parent (drop --sandbox to take %s)",
			orNone(childMode), parentID, orNone(parentMode), orNone(parentMode))
	}
	return nil
}

func orNone(mode string) string {
	if mode == "" {
		return SandboxNone
	}
	return mode
}

// SandboxProgram is the program a mode runs the agent under ("" for none).
func SandboxProgram(mode string) string {
	switch mode {
	case SandboxBwrap:
		return "bwrap"
	case SandboxDocker:
		return "docker"
	case SandboxPodman:
		return "podman"
	}
	return ""
}

// SandboxAvailable reports whether this machine can run the mode: its
// program on PATH. It does not start anything.
func SandboxAvailable(mode string) error {
	prog := SandboxProgram(mode)
	if prog == "" {
		return nil
	}
	if mode == SandboxBwrap && isDarwin {
		prog = "sandbox-exec"
	}
	if _, err := exec.LookPath(prog); err != nil {
		return Errorf(CodeValidation, "sandbox %s needs %s, which is not on PATH; %s", mode, prog, SandboxInstallHint(mode))
	}
	return nil
}

// SandboxInstallHint says how to get a mode's program.
func SandboxInstallHint(mode string) string {
	switch mode {
	case SandboxBwrap:
		if isDarwin {
			return "sandbox-exec ships with macOS (/usr/bin/sandbox-exec)"
		}
		return "install bubblewrap (apt-get install bubblewrap, dnf install bubblewrap) or pick --sandbox none"
	case SandboxDocker:
		return "install Docker (apt-get install docker.io) and start it, or set DOCKER_HOST"
	case SandboxPodman:
		return "install podman (apt-get install podman)"
	}
	return ""
}
