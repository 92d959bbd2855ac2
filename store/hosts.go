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
	// UnreachableSince is when the connection to the host was lost, zero
	// while it is reachable (hostfaults.go).
	UnreachableSince time.Time
}

const hostCols = `name, ssh, identity, dir, max_agents, created_at, unreachable_since`

func scanHost(s scanner) (Host, error) {
	var h Host
	var created, down int64
	err := s.Scan(&h.Name, &h.SSH, &h.Identity, &h.Dir, &h.MaxAgents, &created, &down)
	h.CreatedAt, h.UnreachableSince = fromNanos(created), fromNanos(down)
	return h, err
}

// InsertHost adds a host. ErrConflict when the name is taken.
func (q Queries) InsertHost(ctx context.Context, h Host) error {
	_, err := q.q.ExecContext(ctx, `INSERT INTO hosts (`+hostCols+`) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		h.Name, h.SSH, h.Identity, h.Dir, h.MaxAgents, nanos(h.CreatedAt), nanos(h.UnreachableSince))
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

// SetHostUnreachable records since when the host's connection is lost
// (zero: it is reachable again).
func (q Queries) SetHostUnreachable(ctx context.Context, name string, since time.Time) error {
	return q.execOne(ctx, "host "+name+" unreachable", `UPDATE hosts SET unreachable_since = ? WHERE name = ?`, nanos(since), name)
}

// HostSweep is a session whose processes on a host are still to be ended
// there (by its marker) once the host can be reached.
type HostSweep struct {
	SessionID string
	Host      string
}

// AddHostSweep records a session whose processes on the host are left to
// end; a session recorded already stays as it is.
func (q Queries) AddHostSweep(ctx context.Context, host, sessionID string, now time.Time) error {
	_, err := q.q.ExecContext(ctx, `INSERT INTO host_sweeps (session_id, host, created_at) VALUES (?, ?, ?)
		ON CONFLICT (session_id) DO NOTHING`, sessionID, host, nanos(now))
	if err != nil {
		return fmt.Errorf("record session %s to sweep on host %s: %w", sessionID, host, mapErr(err))
	}
	return nil
}

// HostSweeps lists the sessions left to sweep on their hosts, oldest first.
func (q Queries) HostSweeps(ctx context.Context) ([]HostSweep, error) {
	rows, err := q.q.QueryContext(ctx, `SELECT session_id, host FROM host_sweeps ORDER BY created_at, session_id`)
	return collect(rows, err, "host sweeps", func(s scanner) (HostSweep, error) {
		var h HostSweep
		return h, s.Scan(&h.SessionID, &h.Host)
	})
}

// DoneHostSweeps forgets sessions swept on their host.
func (q Queries) DoneHostSweeps(ctx context.Context, sessionIDs []string) error {
	for _, id := range sessionIDs {
		if _, err := q.q.ExecContext(ctx, `DELETE FROM host_sweeps WHERE session_id = ?`, id); err != nil {
			return fmt.Errorf("forget the sweep of session %s: %w", id, mapErr(err))
		}
	}
	return nil
}

// SetHostMaxAgents changes a host's bound on agents running there.
func (q Queries) SetHostMaxAgents(ctx context.Context, name string, n int) error {
	return q.execOne(ctx, "edit host "+name, `UPDATE hosts SET max_agents = ? WHERE name = ?`, n, name)
}
