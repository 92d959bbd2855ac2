package engine

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/store"
)

// Roles is the engine's roles and profiles area: the directory of who and
// what a task can be assigned to. Roles (ListRoles, GetRole, AddRole,
// EditRole, RemoveRole), people (ListPersons, AddPerson) and profiles
// (profiles.go: ListProfiles, GetProfile, AddProfile, RemoveProfile),
// api.Client's operations, which the daemon routes here; a name resolved
// to the role or person it names (lookupAssignee, managerRef), a task's
// role and its profile (roleOf, profile) and the profile of a top-level
// task created without one (defaultprofile.go). Its fields are all it may
// touch: the kernel and what other areas give it, each named.
//
// Locks: none of its own. Its reads and writes are the store's (EditRole's
// through the kernel's commit); profileChanged holds the cache's read lock
// only while it lists the tasks to kick, and kicks them after.
type Roles struct {
	k *kernel

	// What the other areas give it (compose.go):
	// may is the authorizer (authorize.go): who adds, edits, removes roles,
	// people and profiles.
	may func(a core.Actor, act Action, t core.Task) error
	// checkProfileHost is the hosts area's (hosts.go): a profile's host
	// must exist when the profile is added.
	checkProfileHost func(ctx context.Context, p core.Profile) error
}

// nameRE is compiled on first use, not at package init: init runs in every
// kandev process, and the {0,31} repetition made this ~0.2 ms and ~350
// allocations of every `kandev version` (issue 14).
var nameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,31}$`) })

func validName(kind core.RefKind, name string) error {
	if !nameRE().MatchString(name) {
		return core.Errorf(core.CodeValidation, "%s name %q: use 1-32 lowercase letters, digits, '.', '_' or '-', starting with a letter or digit", kind, name)
	}
	if name == "back" {
		return core.Errorf(core.CodeValidation, "%q is reserved: handoffs use it for whoever handed the task over", name)
	}
	return nil
}

// ref forms of assignees as stored: "role:NAME" / "person:NAME", and
// "task:ID" for a task handed back to the task that delegated it, whose
// agent signs it off.
func roleRef(name string) string   { return core.RoleRef(name).String() }
func personRef(name string) string { return core.PersonRef(name).String() }

func roleFromStore(r store.Role) api.Role {
	return api.Role{Name: r.Name, Profile: r.Profile, ReportsTo: core.ParseRefPtr(r.Manager), Implicit: r.Implicit, CreatedAt: r.CreatedAt}
}

// lookupAssignee resolves a name to the role or person it names.
func (ro *Roles) lookupAssignee(ctx context.Context, name string) (core.Ref, error) {
	name = strings.TrimSpace(name)
	if _, err := ro.k.db.GetRole(ctx, name); err == nil {
		return core.RoleRef(name), nil
	} else if !errors.Is(err, store.ErrNotFound) {
		return core.Ref{}, mapStoreErr(err, "role "+name)
	}
	if _, err := ro.k.db.GetPerson(ctx, name); err == nil {
		return core.PersonRef(name), nil
	} else if !errors.Is(err, store.ErrNotFound) {
		return core.Ref{}, mapStoreErr(err, "person "+name)
	}
	// A profile's own role exists as soon as it is named.
	if _, err := ro.profile(ctx, name); err == nil {
		if err := ro.k.db.EnsureImplicitRole(ctx, name, time.Now().UTC()); err != nil {
			return core.Ref{}, mapStoreErr(err, "role "+name)
		}
		return core.RoleRef(name), nil
	}
	return core.Ref{}, core.Errorf(core.CodeNotFound, "no role or person named %s (see kandev role list, kandev person list)", name)
}

// ListRoles serves api.Client's operation of that name.
func (ro *Roles) ListRoles(ctx context.Context) ([]api.Role, error) {
	rs, err := ro.k.db.ListRoles(ctx)
	if err != nil {
		return nil, mapStoreErr(err, "roles")
	}
	out := make([]api.Role, 0, len(rs))
	for _, r := range rs {
		out = append(out, roleFromStore(r))
	}
	return out, nil
}

// GetRole serves api.Client's operation of that name.
func (ro *Roles) GetRole(ctx context.Context, name string) (api.Role, error) {
	r, err := ro.k.db.GetRole(ctx, name)
	if err != nil {
		return api.Role{}, mapStoreErr(err, "role "+name)
	}
	return roleFromStore(r), nil
}

// AddRole serves api.Client's operation of that name.
func (ro *Roles) AddRole(ctx context.Context, in api.RoleInput) (api.Role, error) {
	if err := ro.may(core.ActorFrom(ctx), ActAddRole, core.Task{}); err != nil {
		return api.Role{}, err
	}
	if err := validName(core.RefRole, in.Name); err != nil {
		return api.Role{}, err
	}
	if _, err := ro.profile(ctx, in.Name); err == nil {
		return api.Role{}, core.Errorf(core.CodeValidation, "%s is a profile name: tasks created with --profile %s already belong to the role %s; choose another name", in.Name, in.Name, in.Name)
	}
	if _, err := ro.k.db.GetPerson(ctx, in.Name); err == nil {
		return api.Role{}, core.Errorf(core.CodeConflict, "%s is already a person; roles and people share names", in.Name)
	}
	if strings.TrimSpace(in.Profile) == "" {
		return api.Role{}, core.Errorf(core.CodeValidation, "role %s needs --profile", in.Name)
	}
	if _, err := ro.profile(ctx, in.Profile); err != nil {
		return api.Role{}, core.Errorf(core.CodeValidation, "unknown profile %s (see kandev profile list)", in.Profile)
	}
	manager, err := ro.managerRef(ctx, in.Name, in.ReportsTo)
	if err != nil {
		return api.Role{}, err
	}
	r := store.Role{Name: in.Name, Profile: in.Profile, Manager: manager, CreatedAt: time.Now().UTC()}
	if err := ro.k.db.InsertRole(ctx, r); err != nil {
		return api.Role{}, mapStoreErr(err, "role "+in.Name)
	}
	return roleFromStore(r), nil
}

// EditRole serves api.Client's operation of that name.
func (ro *Roles) EditRole(ctx context.Context, name string, in api.RoleInput) (api.Role, error) {
	if err := ro.may(core.ActorFrom(ctx), ActEditRole, core.Task{}); err != nil {
		return api.Role{}, err
	}
	r, err := ro.k.db.GetRole(ctx, name)
	if err != nil {
		return api.Role{}, mapStoreErr(err, "role "+name)
	}
	if in.Profile != "" {
		if r.Implicit && in.Profile != r.Name {
			return api.Role{}, core.Errorf(core.CodeValidation, "role %s stands for the profile %s; its profile cannot change", name, name)
		}
		if _, err := ro.profile(ctx, in.Profile); err != nil {
			return api.Role{}, core.Errorf(core.CodeValidation, "unknown profile %s (see kandev profile list)", in.Profile)
		}
		r.Profile = in.Profile
	}
	switch in.ReportsTo {
	case "":
	case "-":
		r.Manager = ""
	default:
		if r.Manager, err = ro.managerRef(ctx, name, in.ReportsTo); err != nil {
			return api.Role{}, err
		}
	}
	err = ro.k.commit(ctx, func(tx *store.Tx, c *changes) error {
		if err := tx.UpdateRole(ctx, r); err != nil {
			return err
		}
		// The role's tasks show its profile and manager: their views are
		// reloaded. A failed lookup does not undo the edit; those views
		// then stay stale until their next change.
		if ids, err := tx.TasksAssignedTo(ctx, roleRef(name)); err == nil {
			c.touch(ids...)
		}
		return nil
	})
	if err != nil {
		return api.Role{}, mapStoreErr(err, "role "+name)
	}
	return roleFromStore(r), nil
}

// RemoveRole serves api.Client's operation of that name. A role that still has work, or that
// someone reports to, stays.
func (ro *Roles) RemoveRole(ctx context.Context, name string, _ api.RemoveRoleInput) (api.Role, error) {
	if err := ro.may(core.ActorFrom(ctx), ActRemoveRole, core.Task{}); err != nil {
		return api.Role{}, err
	}
	r, err := ro.k.db.GetRole(ctx, name)
	if err != nil {
		return api.Role{}, mapStoreErr(err, "role "+name)
	}
	if ids, err := ro.k.db.TasksAssignedTo(ctx, roleRef(name)); err == nil && len(ids) > 0 {
		return api.Role{}, core.Errorf(core.CodeConflict, "role %s still has tasks (%s); hand them on first", name, strings.Join(ids, ", "))
	}
	if rs, err := ro.k.db.RolesReportingTo(ctx, roleRef(name)); err == nil && len(rs) > 0 {
		return api.Role{}, core.Errorf(core.CodeConflict, "roles %s report to %s; change their manager first", strings.Join(rs, ", "), name)
	}
	if err := ro.k.db.DeleteRole(ctx, name); err != nil {
		return api.Role{}, mapStoreErr(err, "role "+name)
	}
	return roleFromStore(r), nil
}

// ListPersons serves api.Client's operation of that name.
func (ro *Roles) ListPersons(ctx context.Context) ([]api.Person, error) {
	ps, err := ro.k.db.ListPersons(ctx)
	if err != nil {
		return nil, mapStoreErr(err, "people")
	}
	out := make([]api.Person, 0, len(ps))
	for _, p := range ps {
		out = append(out, api.Person{Name: p.Name, CreatedAt: p.CreatedAt})
	}
	return out, nil
}

// AddPerson serves api.Client's operation of that name.
func (ro *Roles) AddPerson(ctx context.Context, in api.AddPersonInput) (api.Person, error) {
	name := in.Name
	if err := ro.may(core.ActorFrom(ctx), ActAddPerson, core.Task{}); err != nil {
		return api.Person{}, err
	}
	if err := validName(core.RefPerson, name); err != nil {
		return api.Person{}, err
	}
	if _, err := ro.k.db.GetRole(ctx, name); err == nil {
		return api.Person{}, core.Errorf(core.CodeConflict, "%s is already a role; roles and people share names", name)
	}
	if _, err := ro.profile(ctx, name); err == nil {
		return api.Person{}, core.Errorf(core.CodeConflict, "%s is a profile (and so a role) name; choose another", name)
	}
	p := store.Person{Name: name, CreatedAt: time.Now().UTC()}
	if err := ro.k.db.InsertPerson(ctx, p); err != nil {
		return api.Person{}, mapStoreErr(err, "person "+name)
	}
	return api.Person{Name: p.Name, CreatedAt: p.CreatedAt}, nil
}

// managerRef resolves --reports-to and refuses a chain that would loop.
func (ro *Roles) managerRef(ctx context.Context, role, to string) (string, error) {
	to = strings.TrimSpace(to)
	if to == "" {
		return "", nil
	}
	if to == role {
		return "", core.Errorf(core.CodeValidation, "role %s cannot report to itself", role)
	}
	a, err := ro.lookupAssignee(ctx, to)
	if err != nil {
		return "", err
	}
	if a.IsPerson() {
		return personRef(a.Name), nil
	}
	chain := []string{role, a.Name}
	seen := map[string]bool{role: true}
	for cur := a.Name; ; {
		if seen[cur] {
			return "", core.Errorf(core.CodeValidation, "reporting cycle: %s", strings.Join(chain, " → "))
		}
		seen[cur] = true
		r, err := ro.k.db.GetRole(ctx, cur)
		if err != nil {
			break
		}
		m := roleFromStore(r).ReportsTo
		if m == nil || !m.IsRole() {
			break
		}
		chain = append(chain, m.Name)
		cur = m.Name
	}
	return roleRef(a.Name), nil
}

// roleOf returns a role, its profile name, and whether it is explicit.
func (ro *Roles) roleOf(ctx context.Context, name string) (store.Role, error) {
	r, err := ro.k.db.GetRole(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		if _, perr := ro.profile(ctx, name); perr == nil {
			return store.Role{Name: name, Profile: name, Implicit: true}, nil
		}
		return store.Role{}, fmt.Errorf("role %s no longer exists", name)
	}
	return r, err
}
