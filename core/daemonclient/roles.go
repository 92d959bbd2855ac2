package daemonclient

import (
	"context"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/wire"
)

// Roles is the client's roles and profiles area: roles, people and
// agent profiles.
type Roles struct{ c *caller }

var _ api.RoleClient = (*Roles)(nil)

// ListProfiles implements api.RoleClient.
func (r *Roles) ListProfiles(ctx context.Context) ([]core.Profile, error) {
	return call(ctx, r.c, wire.ListProfiles, wire.None{})
}

// GetProfile implements api.RoleClient.
func (r *Roles) GetProfile(ctx context.Context, name string) (core.Profile, error) {
	return call(ctx, r.c, wire.GetProfile, wire.Key(name))
}

// AddProfile implements api.RoleClient.
func (r *Roles) AddProfile(ctx context.Context, p core.Profile) (core.Profile, error) {
	return call(ctx, r.c, wire.AddProfile, wire.Keyed[core.Profile]{Key: p.Name, In: p})
}

// RemoveProfile implements api.RoleClient.
func (r *Roles) RemoveProfile(ctx context.Context, name string, in api.RemoveProfileInput) (core.Profile, error) {
	return call(ctx, r.c, wire.RemoveProfile, wire.WithOptions(name, in))
}

// ListRoles implements api.RoleClient.
func (r *Roles) ListRoles(ctx context.Context) ([]api.Role, error) {
	return call(ctx, r.c, wire.ListRoles, wire.None{})
}

// GetRole implements api.RoleClient.
func (r *Roles) GetRole(ctx context.Context, name string) (api.Role, error) {
	return call(ctx, r.c, wire.GetRole, wire.Key(name))
}

// AddRole implements api.RoleClient.
func (r *Roles) AddRole(ctx context.Context, in api.RoleInput) (api.Role, error) {
	return call(ctx, r.c, wire.AddRole, in)
}

// EditRole implements api.RoleClient.
func (r *Roles) EditRole(ctx context.Context, name string, in api.RoleInput) (api.Role, error) {
	return call(ctx, r.c, wire.EditRole, wire.Keyed[api.RoleInput]{Key: name, In: in})
}

// RemoveRole implements api.RoleClient.
func (r *Roles) RemoveRole(ctx context.Context, name string, in api.RemoveRoleInput) (api.Role, error) {
	return call(ctx, r.c, wire.RemoveRole, wire.WithOptions(name, in))
}

// ListPersons implements api.RoleClient.
func (r *Roles) ListPersons(ctx context.Context) ([]api.Person, error) {
	return call(ctx, r.c, wire.ListPersons, wire.None{})
}

// AddPerson implements api.RoleClient.
func (r *Roles) AddPerson(ctx context.Context, in api.AddPersonInput) (api.Person, error) {
	return call(ctx, r.c, wire.AddPerson, in)
}
