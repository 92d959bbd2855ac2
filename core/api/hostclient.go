package api

import (
	"context"

	"github.com/kandev/kandev/core"
)

// HostClient manages the hosts agents can run on (docs/hosts.md). It is
// apart from Client so that front ends and fakes without hosts need not
// implement it; commands ask for it by interface.
type HostClient interface {
	ListHosts(ctx context.Context) ([]core.Host, error)
	GetHost(ctx context.Context, name string) (core.Host, error)
	AddHost(ctx context.Context, in HostInput) (core.Host, error)
	// RemoveHost refuses (CodeConflict) while unarchived tasks are on it.
	RemoveHost(ctx context.Context, name string) (core.Host, error)
	// CheckHost connects and reports what the host has.
	CheckHost(ctx context.Context, name string) (HostCheck, error)
	// EditHost changes what may change of a host with tasks on it: its
	// bound on agents (where they run, ssh and dir, does not change).
	EditHost(ctx context.Context, name string, in HostEdit) (core.Host, error)
}

// HostEdit changes a host; a nil field keeps its value.
type HostEdit struct {
	MaxAgents *int `json:"max_agents,omitempty"`
}

// HostInput adds a host.
type HostInput struct {
	Name      string `json:"name"`
	SSH       string `json:"ssh"`
	Identity  string `json:"identity,omitempty"`
	Dir       string `json:"dir,omitempty"`
	MaxAgents int    `json:"max_agents,omitempty"`
}

// HostCheck is what `host check` found on a host.
type HostCheck struct {
	Host string `json:"host"`
	// Reachable is false when ssh could not log in; Error then says why,
	// in ssh's own words.
	Reachable bool   `json:"reachable"`
	Error     string `json:"error,omitempty"`
	// Kandev is the kandev binary kandev keeps on the host.
	Kandev HostKandev `json:"kandev"`
	// Git is `git --version` there ("" when missing).
	Git string `json:"git"`
	// Agents are the commands of the profiles, as found on the host's PATH.
	Agents []HostCommand `json:"agents"`
	// Bwrap, Docker and Podman are their paths there ("" when missing).
	Bwrap  string `json:"bwrap"`
	Docker string `json:"docker"`
	Podman string `json:"podman"`
	// DockerServer is the version of the docker daemon that answered
	// docker info there; DockerDown, when docker is installed but its
	// daemon did not answer, is what docker said.
	DockerServer string `json:"docker_server,omitempty"`
	DockerDown   string `json:"docker_down,omitempty"`
	// MaxAgents, Running and FreeSlots: FreeSlots is -1 when unbounded.
	MaxAgents int `json:"max_agents"`
	Running   int `json:"running"`
	FreeSlots int `json:"free_slots"`
}

// HostKandev describes the kandev binary on a host.
type HostKandev struct {
	Path string `json:"path"`
	// Present: the file is there and runs.
	Present bool   `json:"present"`
	Version string `json:"version,omitempty"`
	SHA256  string `json:"sha256,omitempty"`
	// Current: its hash is this daemon's binary's, so no copy is needed.
	Current bool `json:"current"`
}

// HostCommand is one profile's agent command on a host.
type HostCommand struct {
	Profile string `json:"profile"`
	Command string `json:"command"`
	// Path is where the host's PATH finds it ("" when missing).
	Path string `json:"path"`
}
