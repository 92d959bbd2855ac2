package daemonclient

import (
	"context"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/wire"
)

// Roles is the client's roles and profiles area: roles, people and
// agent profiles.
type Roles struct{ c *caller }

var _ core.RoleClient = (*Roles)(nil)

// ListProfiles implements core.RoleClient.
func (r *Roles) ListProfiles(ctx context.Context) ([]core.Profile, error) {
	return call(ctx, r.c, wire.ListProfiles, wire.None{})
}

// GetProfile implements core.RoleClient.
func (r *Roles) GetProfile(ctx context.Context, name string) (core.Profile, error) {
	return call(ctx, r.c, wire.GetProfile, wire.Key(name))
}

// AddProfile implements core.RoleClient.
func (r *Roles) AddProfile(ctx context.Context, p core.Profile) (core.Profile, error) {
	return call(ctx, r.c, wire.AddProfile, wire.Keyed[core.Profile]{Key: p.Name, In: p})
}

// RemoveProfile implements core.RoleClient.
func (r *Roles) RemoveProfile(ctx context.Context, name string, in core.RemoveProfileInput) (core.Profile, error) {
	return call(ctx, r.c, wire.RemoveProfile, wire.WithOptions(name, in))
}

// ListRoles implements core.RoleClient.
func (r *Roles) ListRoles(ctx context.Context) ([]core.Role, error) {
	return call(ctx, r.c, wire.ListRoles, wire.None{})
}

// GetRole implements core.RoleClient.
func (r *Roles) GetRole(ctx context.Context, name string) (core.Role, error) {
	return call(ctx, r.c, wire.GetRole, wire.Key(name))
}

// AddRole implements core.RoleClient.
func (r *Roles) AddRole(ctx context.Context, in core.RoleInput) (core.Role, error) {
	return call(ctx, r.c, wire.AddRole, in)
}

// EditRole implements core.RoleClient.
func (r *Roles) EditRole(ctx context.Context, name string, in core.RoleInput) (core.Role, error) {
	return call(ctx, r.c, wire.EditRole, wire.Keyed[core.RoleInput]{Key: name, In: in})
}

// RemoveRole implements core.RoleClient.
func (r *Roles) RemoveRole(ctx context.Context, name string, in core.RemoveRoleInput) (core.Role, error) {
	return call(ctx, r.c, wire.RemoveRole, wire.WithOptions(name, in))
}

// ListPersons implements core.RoleClient.
func (r *Roles) ListPersons(ctx context.Context) ([]core.Person, error) {
	return call(ctx, r.c, wire.ListPersons, wire.None{})
}

// AddPerson implements core.RoleClient.
func (r *Roles) AddPerson(ctx context.Context, in core.AddPersonInput) (core.Person, error) {
	return call(ctx, r.c, wire.AddPerson, in)
}
