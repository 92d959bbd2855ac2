package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// TaskView is a task with what its summary needs: latest session, pending
// question and queue length, read in one query.
type TaskView struct {
	Task
	Session  *Session
	Question *Message
	Queued   int
	// OpenBlockers are unfinished tasks this one waits on.
	OpenBlockers []string
}

const taskViewQuery = `SELECT t.id, t.title, t.description, COALESCE(t.parent_id, ''), t.cwd, t.profile, t.status,
	t.autopilot, t.created_by, t.created_at, t.updated_at, COALESCE(t.archived_at, 0),
	t.halted, COALESCE(t.session_id, ''), t.title_pending, t.assignee, t.handed_by, t.surface, t.stalled, t.needs_check, t.waiting,
	COALESCE(s.id, ''), COALESCE(s.role, ''), COALESCE(s.profile, ''), COALESCE(s.state, ''),
	COALESCE(s.agent_session_id, ''), COALESCE(s.pid, 0), COALESCE(s.error, ''), COALESCE(s.turns, 0),
	COALESCE(s.turn_started_at, 0), COALESCE(s.created_at, 0), COALESCE(s.updated_at, 0),
	(SELECT count(*) FROM queue WHERE queue.task_id = t.id),
	COALESCE((SELECT seq FROM messages m WHERE m.task_id = t.id AND m.kind = 'question'
		AND json_extract(m.meta, '$.status') = 'pending' ORDER BY seq DESC LIMIT 1), 0),
	COALESCE((SELECT group_concat(b.blocker_id) FROM blockers b JOIN tasks bt ON bt.id = b.blocker_id
		WHERE b.task_id = t.id AND bt.status NOT IN ('done', 'cancelled') AND bt.archived_at IS NULL), '')
FROM tasks t LEFT JOIN sessions s ON s.id = t.session_id`

// TaskViews loads views of the given tasks, or of every task when ids is
// nil, in creation order.
func (q Queries) TaskViews(ctx context.Context, ids []string) ([]TaskView, error) {
	query := taskViewQuery
	var args []any
	if ids != nil {
		if len(ids) == 0 {
			return nil, nil
		}
		query += ` WHERE t.id IN (?` + strings.Repeat(",?", len(ids)-1) + `)`
		for _, id := range ids {
			args = append(args, id)
		}
	}
	// Rows come in table order and are sorted here: SQLite's sorter,
	// carrying every column of every row, was a third of the daemon's
	// start at 100,000 tasks.
	n := len(ids)
	if ids == nil {
		if err := q.q.QueryRowContext(ctx, `SELECT count(*) FROM tasks`).Scan(&n); err != nil {
			return nil, fmt.Errorf("count tasks: %w", mapErr(err))
		}
	}
	rows, err := q.q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("load tasks: %w", mapErr(err))
	}
	views := make([]TaskView, 0, n)
	var questionSeqs []int64
	var questionAt []int
	for rows.Next() {
		var v TaskView
		var s Session
		var created, updated, archived, sTurn, sCreated, sUpdated, qseq int64
		var blockers string
		err := rows.Scan(&v.ID, &v.Title, &v.Description, &v.ParentID, &v.CWD, &v.Profile, &v.Status,
			&v.Autopilot, &v.CreatedBy, &created, &updated, &archived, &v.Halted, &v.SessionID, &v.TitlePending,
			&v.Assignee, &v.HandedBy, &v.Surface, &v.Stalled, &v.NeedsCheck, &v.Waiting,
			&s.ID, &s.Role, &s.Profile, &s.State, &s.AgentSessionID, &s.PID, &s.Error, &s.Turns, &sTurn, &sCreated, &sUpdated,
			&v.Queued, &qseq, &blockers)
		if err != nil {
			rows.Close()
			return nil, fmt.Errorf("load tasks: %w", mapErr(err))
		}
		v.CreatedAt, v.UpdatedAt, v.ArchivedAt = fromNanos(created), fromNanos(updated), fromNanos(archived)
		if blockers != "" {
			v.OpenBlockers = strings.Split(blockers, ",")
		}
		if s.ID != "" {
			s.TaskID = v.ID
			s.TurnStartedAt, s.CreatedAt, s.UpdatedAt = fromNanos(sTurn), fromNanos(sCreated), fromNanos(sUpdated)
			v.Session = &s
		}
		if qseq != 0 {
			questionSeqs = append(questionSeqs, qseq)
			questionAt = append(questionAt, len(views))
		}
		views = append(views, v)
	}
	if err := rows.Close(); err != nil {
		return nil, mapErr(err)
	}
	for i, seq := range questionSeqs {
		m, err := q.GetMessage(ctx, seq)
		if err != nil {
			return nil, err
		}
		views[questionAt[i]].Question = &m
	}
	slices.SortFunc(views, func(a, b TaskView) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return views, nil
}

// TaskView loads one task's view.
func (q Queries) TaskView(ctx context.Context, id string) (TaskView, error) {
	vs, err := q.TaskViews(ctx, []string{id})
	if err != nil {
		return TaskView{}, err
	}
	if len(vs) == 0 {
		return TaskView{}, fmt.Errorf("task %s: %w", id, ErrNotFound)
	}
	return vs[0], nil
}
