package store

import (
	"context"
	"fmt"
	"time"
)

// Role is a named agent identity.
type Role struct {
	Name      string
	Profile   string
	Manager   string // "role:NAME", "person:NAME" or ""
	Implicit  bool
	CreatedAt time.Time
}

// Person is a human.
type Person struct {
	Name      string
	CreatedAt time.Time
}

// InsertRole adds a role. ErrConflict when the name is taken.
func (q Queries) InsertRole(ctx context.Context, r Role) error {
	_, err := q.q.ExecContext(ctx, `INSERT INTO roles (name, profile, manager, implicit, created_at) VALUES (?, ?, ?, ?, ?)`,
		r.Name, r.Profile, r.Manager, r.Implicit, nanos(r.CreatedAt))
	if err != nil {
		return fmt.Errorf("add role %s: %w", r.Name, mapErr(err))
	}
	return nil
}

// EnsureImplicitRole adds the implicit role of a profile if missing.
func (q Queries) EnsureImplicitRole(ctx context.Context, profile string, now time.Time) error {
	_, err := q.q.ExecContext(ctx, `INSERT OR IGNORE INTO roles (name, profile, implicit, created_at) VALUES (?, ?, 1, ?)`,
		profile, profile, nanos(now))
	return mapErr(err)
}

// UpdateRole rewrites a role's profile and manager.
func (q Queries) UpdateRole(ctx context.Context, r Role) error {
	return q.execOne(ctx, "edit role "+r.Name, `UPDATE roles SET profile = ?, manager = ?, implicit = ? WHERE name = ?`,
		r.Profile, r.Manager, r.Implicit, r.Name)
}

// GetRole reads one role.
func (q Queries) GetRole(ctx context.Context, name string) (Role, error) {
	var r Role
	var created int64
	err := q.q.QueryRowContext(ctx, `SELECT name, profile, manager, implicit, created_at FROM roles WHERE name = ?`, name).
		Scan(&r.Name, &r.Profile, &r.Manager, &r.Implicit, &created)
	if err != nil {
		return Role{}, fmt.Errorf("role %s: %w", name, mapErr(err))
	}
	r.CreatedAt = fromNanos(created)
	return r, nil
}

// ListRoles returns every role by name.
func (q Queries) ListRoles(ctx context.Context) ([]Role, error) {
	rows, err := q.q.QueryContext(ctx, `SELECT name, profile, manager, implicit, created_at FROM roles ORDER BY name`)
	return collect(rows, err, "list roles", func(s scanner) (Role, error) {
		var r Role
		var created int64
		err := s.Scan(&r.Name, &r.Profile, &r.Manager, &r.Implicit, &created)
		r.CreatedAt = fromNanos(created)
		return r, err
	})
}

// DeleteRole removes a role.
func (q Queries) DeleteRole(ctx context.Context, name string) error {
	return q.execOne(ctx, "remove role "+name, `DELETE FROM roles WHERE name = ?`, name)
}

// InsertPerson adds a person.
func (q Queries) InsertPerson(ctx context.Context, p Person) error {
	_, err := q.q.ExecContext(ctx, `INSERT INTO persons (name, created_at) VALUES (?, ?)`, p.Name, nanos(p.CreatedAt))
	if err != nil {
		return fmt.Errorf("add person %s: %w", p.Name, mapErr(err))
	}
	return nil
}

// GetPerson reads one person.
func (q Queries) GetPerson(ctx context.Context, name string) (Person, error) {
	var p Person
	var created int64
	err := q.q.QueryRowContext(ctx, `SELECT name, created_at FROM persons WHERE name = ?`, name).Scan(&p.Name, &created)
	if err != nil {
		return Person{}, fmt.Errorf("person %s: %w", name, mapErr(err))
	}
	p.CreatedAt = fromNanos(created)
	return p, nil
}

// ListPersons returns every person by name.
func (q Queries) ListPersons(ctx context.Context) ([]Person, error) {
	rows, err := q.q.QueryContext(ctx, `SELECT name, created_at FROM persons ORDER BY name`)
	return collect(rows, err, "list people", func(s scanner) (Person, error) {
		var p Person
		var created int64
		err := s.Scan(&p.Name, &created)
		p.CreatedAt = fromNanos(created)
		return p, err
	})
}

// TasksAssignedTo lists unarchived, unfinished tasks of an assignee.
func (q Queries) TasksAssignedTo(ctx context.Context, assignee string) ([]string, error) {
	return q.ids(ctx, `SELECT id FROM tasks WHERE assignee = ? AND archived_at IS NULL
		AND status NOT IN ('done', 'cancelled') ORDER BY created_at, id`, assignee)
}

// RolesReportingTo lists roles whose manager is ref.
func (q Queries) RolesReportingTo(ctx context.Context, ref string) ([]string, error) {
	return q.ids(ctx, `SELECT name FROM roles WHERE manager = ? ORDER BY name`, ref)
}

// AddBlocker records that task waits on blocker.
func (q Queries) AddBlocker(ctx context.Context, task, blocker string) error {
	_, err := q.q.ExecContext(ctx, `INSERT OR IGNORE INTO blockers (task_id, blocker_id) VALUES (?, ?)`, task, blocker)
	if err != nil {
		return fmt.Errorf("block %s on %s: %w", task, blocker, mapErr(err))
	}
	return nil
}

// RemoveBlocker drops a blocker.
func (q Queries) RemoveBlocker(ctx context.Context, task, blocker string) error {
	return q.execOne(ctx, "unblock "+task, `DELETE FROM blockers WHERE task_id = ? AND blocker_id = ?`, task, blocker)
}

// BlockedBy lists the tasks that wait on blocker.
func (q Queries) BlockedBy(ctx context.Context, blocker string) ([]string, error) {
	return q.ids(ctx, `SELECT task_id FROM blockers WHERE blocker_id = ? ORDER BY task_id`, blocker)
}

// Blockers lists every blocker of a task.
func (q Queries) Blockers(ctx context.Context, task string) ([]string, error) {
	return q.ids(ctx, `SELECT blocker_id FROM blockers WHERE task_id = ? ORDER BY blocker_id`, task)
}
