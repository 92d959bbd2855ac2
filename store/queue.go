package store

import (
	"context"
	"fmt"
	"time"
)

// QueueItem is a message waiting for a task's next turn.
type QueueItem struct {
	ID        int64
	TaskID    string
	Priority  int
	Kind      string
	Sender    string
	Text      string
	Meta      string
	CreatedAt time.Time
}

const queueColumns = `id, task_id, priority, kind, sender, text, meta, created_at`

func scanQueue(s scanner) (QueueItem, error) {
	var it QueueItem
	var created int64
	if err := s.Scan(&it.ID, &it.TaskID, &it.Priority, &it.Kind, &it.Sender, &it.Text, &it.Meta, &created); err != nil {
		return QueueItem{}, err
	}
	it.CreatedAt = fromNanos(created)
	return it, nil
}

// Enqueue adds an item and returns it with its id.
func (q Queries) Enqueue(ctx context.Context, it QueueItem) (QueueItem, error) {
	if it.Meta == "" {
		it.Meta = "{}"
	}
	res, err := q.q.ExecContext(ctx, `INSERT INTO queue (task_id, priority, kind, sender, text, meta, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?)`, it.TaskID, it.Priority, it.Kind, it.Sender, it.Text, it.Meta, nanos(it.CreatedAt))
	if err != nil {
		return QueueItem{}, fmt.Errorf("queue message for %s: %w", it.TaskID, mapErr(err))
	}
	it.ID, err = res.LastInsertId()
	return it, err
}

// Queue lists a task's waiting items in delivery order.
func (q Queries) Queue(ctx context.Context, taskID string) ([]QueueItem, error) {
	rows, err := q.q.QueryContext(ctx, `SELECT `+queueColumns+` FROM queue WHERE task_id = ? ORDER BY priority, id`, taskID)
	return collect(rows, err, "queue of "+taskID, scanQueue)
}

// DeleteQueueItem removes an item once it is delivered (or withdrawn).
func (q Queries) DeleteQueueItem(ctx context.Context, id int64) error {
	return q.execOne(ctx, fmt.Sprintf("dequeue %d", id), `DELETE FROM queue WHERE id = ?`, id)
}

// RedeliveryQueues lists tasks with a prompt queued again because a daemon
// exit cut its turn short.
func (q Queries) RedeliveryQueues(ctx context.Context) ([]string, error) {
	return q.ids(ctx, `SELECT DISTINCT task_id FROM queue WHERE kind = 'redeliver' ORDER BY task_id`)
}

// StartedQueues lists tasks with an item queued by a start (`--start`,
// `task start`) that was never delivered: a crash between the start's
// commit and its delivery must not leave them waiting for another input.
func (q Queries) StartedQueues(ctx context.Context) ([]string, error) {
	return q.ids(ctx, `SELECT DISTINCT task_id FROM queue WHERE json_extract(meta, '$.start') = 1 ORDER BY task_id`)
}
