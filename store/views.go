package store

import (
	"context"
	"fmt"
	"slices"
	"strconv"
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

const viewTaskColumns = `SELECT t.id, t.title, t.description, COALESCE(t.parent_id, ''), t.cwd, t.profile, t.status,
	t.autopilot, t.created_by, t.created_at, t.updated_at, COALESCE(t.archived_at, 0),
	t.halted, COALESCE(t.session_id, ''), t.title_pending, t.assignee, t.handed_by, t.surface, t.stalled, t.needs_check, t.waiting,
	t.workspace, t.repo_root, t.worktree_dir, t.branch, t.base_commit`

const viewSessionColumns = `COALESCE(s.id, ''), COALESCE(s.role, ''), COALESCE(s.profile, ''), COALESCE(s.state, ''),
	COALESCE(s.agent_session_id, ''), COALESCE(s.pid, 0), COALESCE(s.error, ''), COALESCE(s.turns, 0),
	COALESCE(s.turn_started_at, 0), COALESCE(s.created_at, 0), COALESCE(s.updated_at, 0)`

const taskViewColumns = viewTaskColumns + `,
	` + viewSessionColumns + `,`

// taskViewQuery reads some tasks' views, their queue lengths, pending
// questions and open blockers by subqueries.
const taskViewQuery = taskViewColumns + `
	(SELECT count(*) FROM queue WHERE queue.task_id = t.id),
	COALESCE((SELECT seq FROM messages m WHERE m.task_id = t.id AND m.kind = 'question'
		AND json_extract(m.meta, '$.status') = 'pending' ORDER BY seq DESC LIMIT 1), 0),
	COALESCE((SELECT group_concat(b.blocker_id) FROM blockers b JOIN tasks bt ON bt.id = b.blocker_id
		WHERE b.task_id = t.id AND bt.status NOT IN ('done', 'cancelled') AND bt.archived_at IS NULL), '')
FROM tasks t LEFT JOIN sessions s ON s.id = t.session_id`

// allTaskViewsQuery reads every task without its session and without
// the subqueries, which ran three times per row: reading a column costs
// the same whether it holds anything, and most tasks have no session, no
// queue, no question and no blockers. fillViewExtras reads those by
// aggregate queries instead.
const allTaskViewsQuery = viewTaskColumns + ` FROM tasks t`

// allSessionsQuery reads the latest session of every task that has one.
const allSessionsQuery = `SELECT t.id, ` + viewSessionColumns + ` FROM tasks t JOIN sessions s ON s.id = t.session_id`

// taskViewExtras are the aggregate queries of allTaskViewsQuery: task id
// and queue length, pending question seq, or open blockers.
var taskViewExtras = [...]string{
	`SELECT task_id, count(*) FROM queue GROUP BY task_id`,
	`SELECT task_id, max(seq) FROM messages WHERE kind = 'question' AND json_extract(meta, '$.status') = 'pending' GROUP BY task_id`,
	`SELECT b.task_id, group_concat(b.blocker_id) FROM blockers b JOIN tasks bt ON bt.id = b.blocker_id
		WHERE bt.status NOT IN ('done', 'cancelled') AND bt.archived_at IS NULL GROUP BY b.task_id`,
}

// TaskViews loads views of the given tasks, or of every task when ids is
// nil, in creation order.
func (q Queries) TaskViews(ctx context.Context, ids []string) ([]TaskView, error) {
	query := allTaskViewsQuery
	var args []any
	if ids != nil {
		query = taskViewQuery
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
	// Each row is scanned straight into its place in views, through one
	// destination list: a view and a list allocated per row were 80 MB of
	// garbage at 100,000 tasks, on the daemon's start.
	var s Session
	var created, updated, archived, sTurn, sCreated, sUpdated, qseq int64
	var blockers string
	dest := make([]any, 0, 40)
	for rows.Next() {
		views = append(views, TaskView{})
		v := &views[len(views)-1]
		s, qseq, blockers = Session{}, 0, ""
		dest = append(dest[:0], &v.ID, &v.Title, &v.Description, &v.ParentID, &v.CWD, &v.Profile, &v.Status,
			&v.Autopilot, &v.CreatedBy, &created, &updated, &archived, &v.Halted, &v.SessionID, &v.TitlePending,
			&v.Assignee, &v.HandedBy, &v.Surface, &v.Stalled, &v.NeedsCheck, &v.Waiting,
			&v.Workspace, &v.RepoRoot, &v.WorktreeDir, &v.Branch, &v.BaseCommit)
		if ids != nil {
			dest = append(dest, &s.ID, &s.Role, &s.Profile, &s.State, &s.AgentSessionID, &s.PID, &s.Error, &s.Turns,
				&sTurn, &sCreated, &sUpdated, &v.Queued, &qseq, &blockers)
		}
		if err := rows.Scan(dest...); err != nil {
			rows.Close()
			return nil, fmt.Errorf("load tasks: %w", mapErr(err))
		}
		v.CreatedAt, v.UpdatedAt, v.ArchivedAt = fromNanos(created), fromNanos(updated), fromNanos(archived)
		if blockers != "" {
			v.OpenBlockers = strings.Split(blockers, ",")
		}
		if s.ID != "" {
			sc := s
			v.Session = finishSession(&sc, v.ID, sTurn, sCreated, sUpdated)
		}
		if qseq != 0 {
			questionSeqs = append(questionSeqs, qseq)
			questionAt = append(questionAt, len(views)-1)
		}
	}
	if err := rows.Close(); err != nil {
		return nil, mapErr(err)
	}
	if ids == nil {
		if questionSeqs, questionAt, err = q.fillViewExtras(ctx, views); err != nil {
			return nil, err
		}
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

func finishSession(s *Session, taskID string, turn, created, updated int64) *Session {
	s.TaskID = taskID
	s.TurnStartedAt, s.CreatedAt, s.UpdatedAt = fromNanos(turn), fromNanos(created), fromNanos(updated)
	return s
}

// fillViewExtras sets the sessions, queue lengths and open blockers of
// views (every task) and returns the pending questions' seqs and the views
// they belong to.
func (q Queries) fillViewExtras(ctx context.Context, views []TaskView) (seqs []int64, at []int, err error) {
	index := make(map[string]int, len(views))
	for j := range views {
		index[views[j].ID] = j
	}
	rows, err := q.q.QueryContext(ctx, allSessionsQuery)
	if err != nil {
		return nil, nil, fmt.Errorf("load sessions: %w", mapErr(err))
	}
	for rows.Next() {
		var id string
		var s Session
		var turn, created, updated int64
		if err := rows.Scan(&id, &s.ID, &s.Role, &s.Profile, &s.State, &s.AgentSessionID, &s.PID, &s.Error, &s.Turns,
			&turn, &created, &updated); err != nil {
			rows.Close()
			return nil, nil, fmt.Errorf("load sessions: %w", mapErr(err))
		}
		if j, ok := index[id]; ok {
			views[j].Session = finishSession(&s, id, turn, created, updated)
		}
	}
	if err := rows.Close(); err != nil {
		return nil, nil, mapErr(err)
	}
	for i, query := range taskViewExtras {
		rows, err := q.q.QueryContext(ctx, query)
		if err != nil {
			return nil, nil, fmt.Errorf("load tasks: %w", mapErr(err))
		}
		for rows.Next() {
			var id, val string
			if err := rows.Scan(&id, &val); err != nil {
				rows.Close()
				return nil, nil, fmt.Errorf("load tasks: %w", mapErr(err))
			}
			j, ok := index[id]
			if !ok {
				continue // a task created since the main query
			}
			switch i {
			case 0:
				views[j].Queued, err = strconv.Atoi(val)
			case 1:
				var seq int64
				seq, err = strconv.ParseInt(val, 10, 64)
				seqs, at = append(seqs, seq), append(at, j)
			case 2:
				views[j].OpenBlockers = strings.Split(val, ",")
			}
			if err != nil {
				rows.Close()
				return nil, nil, fmt.Errorf("load tasks: %s of task %s: %w", query, id, err)
			}
		}
		if err := rows.Close(); err != nil {
			return nil, nil, mapErr(err)
		}
	}
	return seqs, at, nil
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
