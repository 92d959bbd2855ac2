package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// ReviewComment is one comment on a task's diff.
type ReviewComment struct {
	ID        int64
	TaskID    string
	Author    string
	File      string
	Line      int
	EndLine   int
	Body      string
	Lines     string
	Hunk      string
	CreatedAt time.Time
}

// AddReviewComment records a comment and returns it with its id.
func (q Queries) AddReviewComment(ctx context.Context, c ReviewComment) (ReviewComment, error) {
	res, err := q.q.ExecContext(ctx, `INSERT INTO review_comments (task_id, author, file, line, end_line, body, lines, hunk, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, c.TaskID, c.Author, c.File, c.Line, c.EndLine, c.Body, c.Lines, c.Hunk, nanos(c.CreatedAt))
	if err != nil {
		return ReviewComment{}, fmt.Errorf("review comment on %s: %w", c.TaskID, mapErr(err))
	}
	c.ID, err = res.LastInsertId()
	return c, err
}

// ReviewComments lists a task's review comments, oldest first.
func (q Queries) ReviewComments(ctx context.Context, taskID string) ([]ReviewComment, error) {
	rows, err := q.q.QueryContext(ctx, `SELECT id, task_id, author, file, line, end_line, body, lines, hunk, created_at
		FROM review_comments WHERE task_id = ? ORDER BY id`, taskID)
	return collect(rows, err, "review comments of "+taskID, func(s scanner) (ReviewComment, error) {
		var c ReviewComment
		var created int64
		if err := s.Scan(&c.ID, &c.TaskID, &c.Author, &c.File, &c.Line, &c.EndLine, &c.Body, &c.Lines, &c.Hunk, &created); err != nil {
			return ReviewComment{}, err
		}
		c.CreatedAt = fromNanos(created)
		return c, nil
	})
}

// SetTaskLink records (or replaces) the task's link of a kind.
func (q Queries) SetTaskLink(ctx context.Context, taskID, kind, url string, at time.Time) error {
	_, err := q.q.ExecContext(ctx, `INSERT INTO task_links (task_id, kind, url, created_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (task_id, kind) DO UPDATE SET url = excluded.url, created_at = excluded.created_at`, taskID, kind, url, nanos(at))
	if err != nil {
		return fmt.Errorf("link %s of %s: %w", kind, taskID, mapErr(err))
	}
	return nil
}

// TaskLink reads the task's link of a kind ("" when it has none).
func (q Queries) TaskLink(ctx context.Context, taskID, kind string) (string, error) {
	var url string
	err := q.q.QueryRowContext(ctx, `SELECT url FROM task_links WHERE task_id = ? AND kind = ?`, taskID, kind).Scan(&url)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("link %s of %s: %w", kind, taskID, mapErr(err))
	}
	return url, nil
}

// TaskLinks reads every task's link of a kind, by task id.
func (q Queries) TaskLinks(ctx context.Context, kind string) (map[string]string, error) {
	rows, err := q.q.QueryContext(ctx, `SELECT task_id, url FROM task_links WHERE kind = ?`, kind)
	if err != nil {
		return nil, fmt.Errorf("links %s: %w", kind, mapErr(err))
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var id, url string
		if err := rows.Scan(&id, &url); err != nil {
			return nil, fmt.Errorf("links %s: %w", kind, mapErr(err))
		}
		out[id] = url
	}
	return out, rows.Err()
}
