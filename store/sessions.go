package store

import (
	"context"
	"fmt"
	"time"
)

// Session is one agent run.
type Session struct {
	ID             string
	TaskID         string
	Role           string
	Profile        string
	State          string
	AgentSessionID string
	PID            int
	Error          string
	Turns          int
	TurnStartedAt  time.Time
	CreatedAt      time.Time
	UpdatedAt      time.Time
	// Interrupted: a daemon exit (a shutdown or a crash) cut it short.
	Interrupted bool
}

const sessionColumns = `id, task_id, role, profile, state, agent_session_id, pid, error, turns, turn_started_at, created_at, updated_at, interrupted`

func scanSession(s scanner) (Session, error) {
	var ss Session
	var turnStarted, created, updated int64
	if err := s.Scan(&ss.ID, &ss.TaskID, &ss.Role, &ss.Profile, &ss.State, &ss.AgentSessionID,
		&ss.PID, &ss.Error, &ss.Turns, &turnStarted, &created, &updated, &ss.Interrupted); err != nil {
		return Session{}, err
	}
	ss.TurnStartedAt, ss.CreatedAt, ss.UpdatedAt = fromNanos(turnStarted), fromNanos(created), fromNanos(updated)
	return ss, nil
}

// InsertSession records a new run and makes it the task's latest.
func (q Queries) InsertSession(ctx context.Context, s Session) error {
	_, err := q.q.ExecContext(ctx, `INSERT INTO sessions (`+sessionColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		s.ID, s.TaskID, s.Role, s.Profile, s.State, s.AgentSessionID, s.PID, s.Error, s.Turns,
		nanos(s.TurnStartedAt), nanos(s.CreatedAt), nanos(s.UpdatedAt), s.Interrupted)
	if err != nil {
		return fmt.Errorf("insert session %s: %w", s.ID, mapErr(err))
	}
	return q.execOne(ctx, "point task at session", `UPDATE tasks SET session_id = ?, updated_at = ? WHERE id = ?`,
		s.ID, nanos(s.UpdatedAt), s.TaskID)
}

// GetSession reads one session.
func (q Queries) GetSession(ctx context.Context, id string) (Session, error) {
	s, err := scanSession(q.q.QueryRowContext(ctx, `SELECT `+sessionColumns+` FROM sessions WHERE id = ?`, id))
	if err != nil {
		return Session{}, fmt.Errorf("session %s: %w", id, mapErr(err))
	}
	return s, nil
}

// SessionUpdate changes a session; nil fields stay as they are.
type SessionUpdate struct {
	State          *string
	AgentSessionID *string
	PID            *int
	Error          *string
	AddTurn        bool
	// Interrupted marks the session as cut short by a daemon exit; false
	// leaves the mark as it is (nothing clears it).
	Interrupted bool
}

// UpdateSession applies u.
func (q Queries) UpdateSession(ctx context.Context, id string, u SessionUpdate, now time.Time) error {
	_, err := q.q.ExecContext(ctx, `UPDATE sessions SET
		state = COALESCE(?, state),
		agent_session_id = COALESCE(?, agent_session_id),
		pid = COALESCE(?, pid),
		error = COALESCE(?, error),
		turns = turns + ?,
		turn_started_at = CASE WHEN ? = 1 THEN ? ELSE turn_started_at END,
		interrupted = interrupted OR ?,
		updated_at = ?
		WHERE id = ?`,
		ptr(u.State), ptr(u.AgentSessionID), ptr(u.PID), ptr(u.Error), boolInt(u.AddTurn), boolInt(u.AddTurn), nanos(now),
		boolInt(u.Interrupted), nanos(now), id)
	if err != nil {
		return fmt.Errorf("update session %s: %w", id, mapErr(err))
	}
	return nil
}

// LiveSessions lists sessions not yet ended, oldest first.
func (q Queries) LiveSessions(ctx context.Context) ([]Session, error) {
	return q.listSessions(ctx, `SELECT `+sessionColumns+` FROM sessions
		WHERE state IN ('created', 'starting', 'running', 'waiting_for_input') ORDER BY created_at, id`)
}

// SessionsNotTornDown lists the sessions whose processes may still run:
// every session whose teardown was never recorded, live or not.
func (q Queries) SessionsNotTornDown(ctx context.Context) ([]Session, error) {
	return q.listSessions(ctx, `SELECT `+sessionColumns+` FROM sessions WHERE torn_down_at IS NULL ORDER BY created_at, id`)
}

// MarkTornDown records that no process of the session is left.
func (q Queries) MarkTornDown(ctx context.Context, id string, now time.Time) error {
	if _, err := q.q.ExecContext(ctx, `UPDATE sessions SET torn_down_at = ? WHERE id = ? AND torn_down_at IS NULL`, nanos(now), id); err != nil {
		return fmt.Errorf("session %s torn down: %w", id, mapErr(err))
	}
	return nil
}

// MarkAllTornDown records every session torn down: the daemon's start,
// once it has ended what earlier daemons left running.
func (q Queries) MarkAllTornDown(ctx context.Context, now time.Time) error {
	if _, err := q.q.ExecContext(ctx, `UPDATE sessions SET torn_down_at = ? WHERE torn_down_at IS NULL`, nanos(now)); err != nil {
		return fmt.Errorf("sessions torn down: %w", mapErr(err))
	}
	return nil
}

// TaskSessions lists a task's runs, oldest first.
func (q Queries) TaskSessions(ctx context.Context, taskID string) ([]Session, error) {
	return q.listSessions(ctx, `SELECT `+sessionColumns+` FROM sessions WHERE task_id = ? ORDER BY created_at, id`, taskID)
}

// LatestAgentSession returns the newest run of a task by a role that got an
// agent session id, so a new run can continue it.
func (q Queries) LatestAgentSession(ctx context.Context, taskID, role string) (Session, error) {
	s, err := scanSession(q.q.QueryRowContext(ctx, `SELECT `+sessionColumns+` FROM sessions
		WHERE task_id = ? AND role = ? AND agent_session_id != '' ORDER BY created_at DESC, id DESC LIMIT 1`, taskID, role))
	if err != nil {
		return Session{}, mapErr(err)
	}
	return s, nil
}

func (q Queries) listSessions(ctx context.Context, query string, args ...any) ([]Session, error) {
	rows, err := q.q.QueryContext(ctx, query, args...)
	return collect(rows, err, "list sessions", scanSession)
}

func ptr[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
