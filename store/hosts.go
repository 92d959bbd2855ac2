package store

import (
	"context"
	"fmt"
	"time"
)

// Host is a machine reached over ssh where agents run.
type Host struct {
	Name      string
	SSH       string
	Identity  string
	Dir       string
	MaxAgents int
	CreatedAt time.Time
}

const hostCols = `name, ssh, identity, dir, max_agents, created_at`

func scanHost(s scanner) (Host, error) {
	var h Host
	var created int64
	err := s.Scan(&h.Name, &h.SSH, &h.Identity, &h.Dir, &h.MaxAgents, &created)
	h.CreatedAt = fromNanos(created)
	return h, err
}

// InsertHost adds a host. ErrConflict when the name is taken.
func (q Queries) InsertHost(ctx context.Context, h Host) error {
	_, err := q.q.ExecContext(ctx, `INSERT INTO hosts (`+hostCols+`) VALUES (?, ?, ?, ?, ?, ?)`,
		h.Name, h.SSH, h.Identity, h.Dir, h.MaxAgents, nanos(h.CreatedAt))
	if err != nil {
		return fmt.Errorf("add host %s: %w", h.Name, mapErr(err))
	}
	return nil
}

// GetHost reads one host.
func (q Queries) GetHost(ctx context.Context, name string) (Host, error) {
	h, err := scanHost(q.q.QueryRowContext(ctx, `SELECT `+hostCols+` FROM hosts WHERE name = ?`, name))
	if err != nil {
		return Host{}, fmt.Errorf("host %s: %w", name, mapErr(err))
	}
	return h, nil
}

// ListHosts returns every host by name.
func (q Queries) ListHosts(ctx context.Context) ([]Host, error) {
	rows, err := q.q.QueryContext(ctx, `SELECT `+hostCols+` FROM hosts ORDER BY name`)
	return collect(rows, err, "list hosts", scanHost)
}

// DeleteHost removes a host.
func (q Queries) DeleteHost(ctx context.Context, name string) error {
	return q.execOne(ctx, "remove host "+name, `DELETE FROM hosts WHERE name = ?`, name)
}

// TasksOnHost lists the unarchived tasks placed on a host, in creation
// order: a host with any of them cannot be removed.
func (q Queries) TasksOnHost(ctx context.Context, host string) ([]string, error) {
	return q.ids(ctx, `SELECT id FROM tasks WHERE host = ? AND archived_at IS NULL ORDER BY created_at, id`, host)
}

// SetTaskHost places a task waiting for placement (host "auto") on a host.
// Only such a task changes: a task's host is fixed once it has one.
func (q Queries) SetTaskHost(ctx context.Context, id, host string, now time.Time) error {
	return q.execOne(ctx, "place task "+id, `UPDATE tasks SET host = ?, updated_at = ? WHERE id = ? AND host = 'auto'`, host, nanos(now), id)
}
