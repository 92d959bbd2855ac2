package core

import (
	"time"
)

// Host is a machine reached over the system ssh.
type Host struct {
	Name string `json:"name"`
	// SSH is the destination: [user@]host[:port] or an ssh_config alias.
	SSH      string `json:"ssh"`
	Identity string `json:"identity,omitempty"`
	// Dir is kandev's directory on the host ("" = ~/.kandev there).
	Dir string `json:"dir"`
	// MaxAgents bounds the agents running there at once (0 = no bound).
	MaxAgents int `json:"max_agents"`
	// Tasks counts the unarchived tasks placed on it.
	Tasks     int       `json:"tasks"`
	CreatedAt time.Time `json:"created_at"`
}
