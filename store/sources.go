package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// TaskSource is a row of task_sources: the tracker issue a task was
// created from (issue 41).
type TaskSource struct {
	TaskID    string
	Kind      string // github, gitlab, linear
	Ref       string // canonical: gh:owner/repo#12, gl:group/project#7, linear:ENG-123
	URL       string
	Text      string // the issue as kept (bounded), for the first prompt
	CreatedAt time.Time
}

// InsertTaskSource records where a task came from. ErrConflict: another
// task already has that issue (TaskWithSource names it).
func (q Queries) InsertTaskSource(ctx context.Context, s TaskSource) error {
	_, err := q.q.ExecContext(ctx, `INSERT INTO task_sources (task_id, kind, ref, url, text, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
		s.TaskID, s.Kind, s.Ref, s.URL, s.Text, nanos(s.CreatedAt))
	if err != nil {
		return fmt.Errorf("source %s of %s: %w", s.Ref, s.TaskID, mapErr(err))
	}
	return nil
}

// TaskWithSource is the id of the task created from the issue ref, ""
// when none was.
func (q Queries) TaskWithSource(ctx context.Context, ref string) (string, error) {
	var id string
	err := q.q.QueryRowContext(ctx, `SELECT task_id FROM task_sources WHERE ref = ?`, ref).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("source %s: %w", ref, mapErr(err))
	}
	return id, nil
}

// TaskSourceOf reads a task's source; ok false when it has none.
func (q Queries) TaskSourceOf(ctx context.Context, taskID string) (TaskSource, bool, error) {
	s := TaskSource{TaskID: taskID}
	var created int64
	err := q.q.QueryRowContext(ctx, `SELECT kind, ref, url, text, created_at FROM task_sources WHERE task_id = ?`, taskID).
		Scan(&s.Kind, &s.Ref, &s.URL, &s.Text, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return TaskSource{}, false, nil
	}
	if err != nil {
		return TaskSource{}, false, fmt.Errorf("source of %s: %w", taskID, mapErr(err))
	}
	s.CreatedAt = fromNanos(created)
	return s, true, nil
}

// TaskSources reads every task's source but its text, by task id: few
// tasks have one, so the start reads them in one query.
func (q Queries) TaskSources(ctx context.Context) (map[string]TaskSource, error) {
	rows, err := q.q.QueryContext(ctx, `SELECT task_id, kind, ref, url, created_at FROM task_sources`)
	if err != nil {
		return nil, fmt.Errorf("sources: %w", mapErr(err))
	}
	defer rows.Close()
	out := map[string]TaskSource{}
	for rows.Next() {
		var s TaskSource
		var created int64
		if err := rows.Scan(&s.TaskID, &s.Kind, &s.Ref, &s.URL, &created); err != nil {
			return nil, fmt.Errorf("sources: %w", mapErr(err))
		}
		s.CreatedAt = fromNanos(created)
		out[s.TaskID] = s
	}
	return out, rows.Err()
}
