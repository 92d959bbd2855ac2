package engine

import (
	"context"
	"errors"
	"time"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/store"
)

// profile resolves a profile name: a user profile wins over a built-in.
func (ro *Roles) profile(ctx context.Context, name string) (core.Profile, error) {
	p, err := ro.k.db.GetProfile(ctx, name)
	if err == nil {
		cp := profileFromStore(p)
		if _, ok := core.BuiltinProfile(name); ok {
			cp.Source = "override"
		}
		return cp, nil
	}
	if !errors.Is(err, store.ErrNotFound) {
		return core.Profile{}, mapStoreErr(err, "profile "+name)
	}
	if b, ok := core.BuiltinProfile(name); ok {
		return b, nil
	}
	return core.Profile{}, core.Errorf(core.CodeNotFound, "profile %s not found (see kandev profile list)", name)
}

func profileFromStore(p store.Profile) core.Profile {
	return core.Profile{Name: p.Name, Command: p.Command, Args: nonNil(p.Args), Env: nonNil(p.Env), MCP: p.MCP,
		StartTimeout: p.StartTimeout, Permission: p.Permission, AutopilotPermission: p.AutopilotPermission,
		Sandbox: p.Sandbox, Image: p.Image, Paths: p.Paths, NoNetwork: p.NoNetwork, Network: p.Network, Forwards: p.Forwards, Host: p.Host,
		MCPServers: mcpServersFromStore(p.MCPServers), Source: "user"}
}

func mcpServersFromStore(ss []store.MCPServer) []core.MCPServer {
	var out []core.MCPServer
	for _, s := range ss {
		out = append(out, core.MCPServer{Name: s.Name, Command: s.Command, Args: nonNil(s.Args), Env: s.Env})
	}
	return out
}

func mcpServersToStore(ss []core.MCPServer) []store.MCPServer {
	var out []store.MCPServer
	for _, s := range ss {
		out = append(out, store.MCPServer{Name: s.Name, Command: s.Command, Args: nonNil(s.Args), Env: nonNil(s.Env)})
	}
	return out
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// ListProfiles serves api.Client's operation of that name.
func (ro *Roles) ListProfiles(ctx context.Context) ([]core.Profile, error) {
	user, err := ro.k.db.ListProfiles(ctx)
	if err != nil {
		return nil, mapStoreErr(err, "profiles")
	}
	ps := make([]core.Profile, len(user))
	for i, p := range user {
		ps[i] = profileFromStore(p)
	}
	out := core.MergeProfiles(ps)
	for i := range out {
		out[i].Args, out[i].Env = nonNil(out[i].Args), nonNil(out[i].Env)
	}
	return out, nil
}

// GetProfile serves api.Client's operation of that name.
func (ro *Roles) GetProfile(ctx context.Context, name string) (core.Profile, error) {
	p, err := ro.profile(ctx, name)
	if err != nil {
		return core.Profile{}, err
	}
	p.Args, p.Env = nonNil(p.Args), nonNil(p.Env)
	return p, nil
}

// AddProfile serves api.Client's operation of that name: add or replace a user profile.
func (ro *Roles) AddProfile(ctx context.Context, p core.Profile) (core.Profile, error) {
	if err := ro.may(core.ActorFrom(ctx), ActAddProfile, core.Task{}); err != nil {
		return core.Profile{}, err
	}
	if err := core.ValidateProfile(p); err != nil {
		return core.Profile{}, err
	}
	if p.Command == core.SelfCommand {
		return core.Profile{}, core.Errorf(core.CodeValidation, "profile %s: %s is reserved for built-in profiles", p.Name, core.SelfCommand)
	}
	if p.StartTimeout != "" {
		d, _ := time.ParseDuration(p.StartTimeout) // checked by ValidateProfile
		p.StartTimeout = d.String()
	}
	if err := ro.checkProfileHost(ctx, p); err != nil {
		return core.Profile{}, err
	}
	err := ro.k.db.UpsertProfile(ctx, store.Profile{Name: p.Name, Command: p.Command, Args: p.Args, Env: p.Env, MCP: p.MCP,
		StartTimeout: p.StartTimeout, Permission: p.Permission, AutopilotPermission: p.AutopilotPermission,
		Sandbox: p.Sandbox, Image: p.Image, Paths: p.Paths, NoNetwork: p.NoNetwork, Network: p.Network, Forwards: p.Forwards, Host: p.Host,
		MCPServers: mcpServersToStore(p.MCPServers), CreatedAt: time.Now()})
	if err != nil {
		return core.Profile{}, mapStoreErr(err, "profile "+p.Name)
	}
	saved, err := ro.GetProfile(ctx, p.Name)
	if err == nil {
		sp := saved
		ro.k.bus.Publish(core.Event{Type: core.EventProfileChanged, Profile: &sp})
		ro.profileChanged(p.Name)
	}
	return saved, err
}

// RemoveProfile serves api.Client's operation of that name. Removing an override restores the
// built-in; a built-in itself cannot be removed.
func (ro *Roles) RemoveProfile(ctx context.Context, name string, _ api.RemoveProfileInput) (core.Profile, error) {
	if err := ro.may(core.ActorFrom(ctx), ActRemoveProfile, core.Task{}); err != nil {
		return core.Profile{}, err
	}
	p, err := ro.profile(ctx, name)
	if err != nil {
		return core.Profile{}, err
	}
	if p.Source == "builtin" {
		return core.Profile{}, core.Errorf(core.CodeValidation, "profile %s is built in and cannot be removed (add a profile of that name to override it)", name)
	}
	if err := ro.k.db.DeleteProfile(ctx, name); err != nil {
		return core.Profile{}, mapStoreErr(err, "profile "+name)
	}
	rp := p
	ro.k.bus.Publish(core.Event{Type: core.EventProfileChanged, Profile: &rp})
	ro.profileChanged(name)
	return p, nil
}

// profileChanged retries tasks that wait on a profile that may now run.
func (ro *Roles) profileChanged(name string) {
	cv := ro.k.cache.rlock()
	var ids []string
	for _, id := range cv.order {
		t := cv.tasks[id]
		if (t.Profile == name || t.WaitCause != core.WaitNone) && t.Queued > 0 && !t.Archived {
			ids = append(ids, id)
		}
	}
	cv.runlock()
	for _, id := range ids {
		ro.k.kickLoop(id)
	}
}
