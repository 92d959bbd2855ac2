package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// Profile is a user-defined profile row.
type Profile struct {
	Name    string
	Command string
	Args    []string
	Env     []string // KEY=VALUE
	MCP     bool
	// StartTimeout is a Go duration, or "" for the daemon's default.
	StartTimeout string
	// Permission and AutopilotPermission are the profile's own policies,
	// or "" to follow the configuration.
	Permission          string
	AutopilotPermission string
	// The sandbox a new task of the profile gets, its container image,
	// the paths it declares for a confined agent, and whether a confined
	// agent of it is cut off the network.
	Sandbox   string
	Image     string
	Paths     []string
	NoNetwork bool
	// Network is '', 'none' or 'host'; Forwards are host loopback ports.
	Network  string
	Forwards []int
	// Host is the default host of its new top-level tasks ('' = none).
	Host string
	// MCPServers are the agent's own stdio MCP servers.
	MCPServers []MCPServer
	CreatedAt  time.Time
}

// MCPServer is one of a profile's MCP servers, stored as JSON.
type MCPServer struct {
	Name    string   `json:"name"`
	Command string   `json:"command"`
	Args    []string `json:"args"`
	Env     []string `json:"env"`
}

// UpsertProfile adds a profile or replaces the one of that name.
func (q Queries) UpsertProfile(ctx context.Context, p Profile) error {
	args, err := json.Marshal(nonNil(p.Args))
	if err != nil {
		return err
	}
	env, err := json.Marshal(nonNil(p.Env))
	if err != nil {
		return err
	}
	paths, err := json.Marshal(nonNil(p.Paths))
	if err != nil {
		return err
	}
	forwards, err := json.Marshal(nonNil(p.Forwards))
	if err != nil {
		return err
	}
	servers, err := json.Marshal(nonNil(p.MCPServers))
	if err != nil {
		return err
	}
	_, err = q.q.ExecContext(ctx, `INSERT INTO profiles (name, command, args, env, mcp, start_timeout, permission, autopilot_permission,
			sandbox, image, paths, no_network, network, forwards, host, mcp_servers, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT(name) DO UPDATE SET command = excluded.command, args = excluded.args,
			env = excluded.env, mcp = excluded.mcp, start_timeout = excluded.start_timeout,
			permission = excluded.permission, autopilot_permission = excluded.autopilot_permission,
			sandbox = excluded.sandbox, image = excluded.image, paths = excluded.paths, no_network = excluded.no_network,
			network = excluded.network, forwards = excluded.forwards, host = excluded.host, mcp_servers = excluded.mcp_servers`,
		p.Name, p.Command, string(args), string(env), p.MCP, p.StartTimeout, p.Permission, p.AutopilotPermission,
		p.Sandbox, p.Image, string(paths), p.NoNetwork, p.Network, string(forwards), p.Host, string(servers), nanos(p.CreatedAt))
	if err != nil {
		return fmt.Errorf("save profile %s: %w", p.Name, mapErr(err))
	}
	return nil
}

// GetProfile reads one user profile.
func (q Queries) GetProfile(ctx context.Context, name string) (Profile, error) {
	p, err := scanProfile(q.q.QueryRowContext(ctx,
		`SELECT name, command, args, env, mcp, start_timeout, permission, autopilot_permission, sandbox, image, paths, no_network, network, forwards, host, mcp_servers, created_at FROM profiles WHERE name = ?`, name))
	if err != nil {
		return Profile{}, fmt.Errorf("profile %s: %w", name, mapErr(err))
	}
	return p, nil
}

// ListProfiles returns the user profiles by name.
func (q Queries) ListProfiles(ctx context.Context) ([]Profile, error) {
	rows, err := q.q.QueryContext(ctx, `SELECT name, command, args, env, mcp, start_timeout, permission, autopilot_permission, sandbox, image, paths, no_network, network, forwards, host, mcp_servers, created_at FROM profiles ORDER BY name`)
	return collect(rows, err, "list profiles", scanProfile)
}

// DeleteProfile removes a user profile. ErrNotFound when there is none.
func (q Queries) DeleteProfile(ctx context.Context, name string) error {
	return q.execOne(ctx, "remove profile "+name, `DELETE FROM profiles WHERE name = ?`, name)
}

func scanProfile(s scanner) (Profile, error) {
	var p Profile
	var args, env, paths, forwards, servers string
	var created int64
	if err := s.Scan(&p.Name, &p.Command, &args, &env, &p.MCP, &p.StartTimeout, &p.Permission, &p.AutopilotPermission,
		&p.Sandbox, &p.Image, &paths, &p.NoNetwork, &p.Network, &forwards, &p.Host, &servers, &created); err != nil {
		return Profile{}, err
	}
	if err := json.Unmarshal([]byte(args), &p.Args); err != nil {
		return Profile{}, fmt.Errorf("profile %s args: %w", p.Name, err)
	}
	if err := json.Unmarshal([]byte(env), &p.Env); err != nil {
		return Profile{}, fmt.Errorf("profile %s env: %w", p.Name, err)
	}
	if err := json.Unmarshal([]byte(forwards), &p.Forwards); err != nil {
		return Profile{}, fmt.Errorf("profile %s forwards: %w", p.Name, err)
	}
	if err := json.Unmarshal([]byte(paths), &p.Paths); err != nil {
		return Profile{}, fmt.Errorf("profile %s paths: %w", p.Name, err)
	}
	if err := json.Unmarshal([]byte(servers), &p.MCPServers); err != nil {
		return Profile{}, fmt.Errorf("profile %s mcp servers: %w", p.Name, err)
	}
	p.CreatedAt = fromNanos(created)
	return p, nil
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
