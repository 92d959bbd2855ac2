package store

import (
	"context"
	"fmt"
	"time"
)

// InsertCreateKey records which task a create with this actor's key made.
// A key already used is ErrConflict.
func (q Queries) InsertCreateKey(ctx context.Context, actor, key, taskID string, now time.Time) error {
	_, err := q.q.ExecContext(ctx, `INSERT INTO create_keys (actor, key, task_id, created_at) VALUES (?, ?, ?, ?)`,
		actor, key, taskID, nanos(now))
	if err != nil {
		return fmt.Errorf("store create key: %w", mapErr(err))
	}
	return nil
}

// TaskByCreateKey is the task an earlier create with this actor's key made.
func (q Queries) TaskByCreateKey(ctx context.Context, actor, key string) (string, error) {
	var id string
	err := q.q.QueryRowContext(ctx, `SELECT task_id FROM create_keys WHERE actor = ? AND key = ?`, actor, key).Scan(&id)
	if err != nil {
		return "", mapErr(err)
	}
	return id, nil
}
