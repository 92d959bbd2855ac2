package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Task is a row of the tasks table.
type Task struct {
	ID          string
	Title       string
	Description string
	ParentID    string // "" for a root
	CWD         string
	Profile     string
	Status      string
	Autopilot   bool
	Sandbox     string // none, bwrap, docker, podman; fixed by a trigger
	CreatedBy   string
	CreatedAt   time.Time
	UpdatedAt   time.Time
	ArchivedAt  time.Time // zero when not archived

	Halted       bool
	SessionID    string // latest session
	TitlePending bool

	Assignee   string // "role:NAME" or "person:NAME"
	HandedBy   string
	Surface    string
	Stalled    string // JSON, '' when not escalated
	NeedsCheck bool
	Waiting    string
	// WaitingCause is why it waits as code decides on it (core.WaitCause;
	// '' in a row written before causes were).
	WaitingCause string

	// The workspace (issue 11): mode 'worktree', 'inherit' or 'shared'.
	Workspace   string
	RepoRoot    string
	WorktreeDir string
	Branch      string
	BaseCommit  string

	// Host is the host the task runs on, fixed at creation ('' = here).
	Host string
}

// Archived reports whether the task is archived.
func (t Task) Archived() bool { return !t.ArchivedAt.IsZero() }

const taskColumns = `id, title, description, COALESCE(parent_id, ''), cwd, profile, status,
	autopilot, created_by, created_at, updated_at, COALESCE(archived_at, 0),
	halted, COALESCE(session_id, ''), title_pending, assignee, handed_by, surface, stalled, needs_check, ` + waitingColumn + `,
	workspace, repo_root, worktree_dir, branch, base_commit, sandbox, host`

type scanner interface{ Scan(dest ...any) error }

func scanTask(s scanner) (Task, error) {
	var t Task
	var created, updated, archived int64
	err := s.Scan(&t.ID, &t.Title, &t.Description, &t.ParentID, &t.CWD, &t.Profile, &t.Status,
		&t.Autopilot, &t.CreatedBy, &created, &updated, &archived,
		&t.Halted, &t.SessionID, &t.TitlePending, &t.Assignee, &t.HandedBy, &t.Surface, &t.Stalled, &t.NeedsCheck, &t.Waiting,
		&t.Workspace, &t.RepoRoot, &t.WorktreeDir, &t.Branch, &t.BaseCommit, &t.Sandbox, &t.Host)
	if err != nil {
		return Task{}, err
	}
	t.CreatedAt = fromNanos(created)
	t.UpdatedAt = fromNanos(updated)
	t.ArchivedAt = fromNanos(archived)
	t.WaitingCause, t.Waiting = splitWaiting(t.Waiting)
	return t, nil
}

func fromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// InsertTask writes a new task. ErrConflict means the id is taken.
func (q Queries) InsertTask(ctx context.Context, t Task) error {
	_, err := q.q.ExecContext(ctx, insertTaskSQL, insertTaskArgs(t)...)
	if err != nil {
		return fmt.Errorf("insert task %s: %w", t.ID, mapErr(err))
	}
	return nil
}

const insertTaskSQL = `INSERT INTO tasks
		(id, title, description, parent_id, cwd, profile, status, autopilot, created_by, created_at, updated_at, title_pending,
		 assignee, handed_by, surface, workspace, repo_root, worktree_dir, branch, base_commit, sandbox, host)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

func insertTaskArgs(t Task) []any {
	return []any{t.ID, t.Title, t.Description, nullable(t.ParentID), t.CWD, t.Profile, t.Status, t.Autopilot,
		t.CreatedBy, nanos(t.CreatedAt), nanos(t.UpdatedAt), t.TitlePending, t.Assignee, t.HandedBy, t.Surface,
		workspaceMode(t.Workspace), t.RepoRoot, t.WorktreeDir, t.Branch, t.BaseCommit, sandboxMode(t.Sandbox), t.Host}
}

// InsertTasks inserts tasks, in order, through one prepared statement: a
// bulk load (seeding a benchmark's 100,000 tasks) spent half of
// InsertTask's time parsing the same SQL again.
func (t *Tx) InsertTasks(ctx context.Context, tasks []Task) error {
	p, ok := t.q.(interface {
		PrepareContext(context.Context, string) (*sql.Stmt, error)
	})
	if !ok {
		return errors.New("insert tasks: not a transaction")
	}
	stmt, err := p.PrepareContext(ctx, insertTaskSQL)
	if err != nil {
		return fmt.Errorf("insert tasks: %w", mapErr(err))
	}
	defer stmt.Close()
	for _, task := range tasks {
		if _, err := stmt.ExecContext(ctx, insertTaskArgs(task)...); err != nil {
			return fmt.Errorf("insert task %s: %w", task.ID, mapErr(err))
		}
	}
	return nil
}

// sandboxMode stores a task written without a sandbox as 'none', what
// every task was before sandboxes existed.
func sandboxMode(m string) string {
	if m == "" {
		return "none"
	}
	return m
}

// workspaceMode stores a task written without a workspace as 'shared',
// what it was before workspaces existed.
func workspaceMode(m string) string {
	if m == "" {
		return "shared"
	}
	return m
}

// GetTask reads one task by exact id.
func (q Queries) GetTask(ctx context.Context, id string) (Task, error) {
	t, err := scanTask(q.q.QueryRowContext(ctx, `SELECT `+taskColumns+` FROM tasks WHERE id = ?`, id))
	if err != nil {
		return Task{}, fmt.Errorf("task %s: %w", id, mapErr(err))
	}
	return t, nil
}

// TaskIDsWithPrefix returns up to limit ids that start with prefix, for
// resolving the short forms people type.
func (q Queries) TaskIDsWithPrefix(ctx context.Context, prefix string, limit int) ([]string, error) {
	// The range form uses the primary key index; LIKE would not.
	return q.ids(ctx, `SELECT id FROM tasks WHERE id >= ? AND id < ? ORDER BY id LIMIT ?`, prefix, prefix+"\xff", limit)
}

// TaskFilter narrows ListTasks.
type TaskFilter struct {
	IncludeArchived bool
	// Root, when set, limits the list to that task and its descendants.
	Root string
}

// ListTasks returns tasks in creation order (parents always precede their
// children, since a parent must exist first).
func (q Queries) ListTasks(ctx context.Context, f TaskFilter) ([]Task, error) {
	var sb strings.Builder
	var args []any
	if f.Root != "" {
		sb.WriteString(`WITH RECURSIVE sub(id) AS (SELECT id FROM tasks WHERE id = ?
			UNION ALL SELECT t.id FROM tasks t JOIN sub ON t.parent_id = sub.id)
			SELECT ` + taskColumns + ` FROM tasks WHERE id IN (SELECT id FROM sub)`)
		args = append(args, f.Root)
	} else {
		sb.WriteString(`SELECT ` + taskColumns + ` FROM tasks WHERE 1=1`)
	}
	if !f.IncludeArchived {
		sb.WriteString(` AND archived_at IS NULL`)
	}
	sb.WriteString(` ORDER BY created_at, id`)
	rows, err := q.q.QueryContext(ctx, sb.String(), args...)
	tasks, err := collect(rows, err, "list tasks", scanTask)
	if tasks == nil && err == nil {
		tasks = []Task{}
	}
	return tasks, err
}

// Children returns the direct children of a task, archived included.
func (q Queries) Children(ctx context.Context, parentID string) ([]Task, error) {
	rows, err := q.q.QueryContext(ctx, `SELECT `+taskColumns+` FROM tasks WHERE parent_id = ? ORDER BY created_at, id`, parentID)
	return collect(rows, err, "children of "+parentID, scanTask)
}

// UpdateTaskText sets title and description.
func (q Queries) UpdateTaskText(ctx context.Context, id, title, description string, now time.Time) error {
	return q.execOne(ctx, "update task "+id,
		`UPDATE tasks SET title = ?, description = ?, updated_at = ? WHERE id = ?`,
		title, description, nanos(now), id)
}

// SetTaskStatus sets the status unconditionally; core guards transitions.
func (q Queries) SetTaskStatus(ctx context.Context, id, status string, now time.Time) error {
	return q.execOne(ctx, "set status of task "+id,
		`UPDATE tasks SET status = ?, updated_at = ? WHERE id = ?`, status, nanos(now), id)
}

// ArchiveTask marks a task archived; archiving an archived task keeps its
// first archive time.
func (q Queries) ArchiveTask(ctx context.Context, id string, now time.Time) error {
	return q.execOne(ctx, "archive task "+id,
		`UPDATE tasks SET archived_at = COALESCE(archived_at, ?), updated_at = ? WHERE id = ?`,
		nanos(now), nanos(now), id)
}

// SetTaskAutopilot exists only so tests can prove the schema refuses it.
func (q Queries) SetTaskAutopilot(ctx context.Context, id string, autopilot bool) error {
	return q.execOne(ctx, "set autopilot of task "+id, `UPDATE tasks SET autopilot = ? WHERE id = ?`, autopilot, id)
}

// SetTaskParent exists only so tests can prove the schema refuses it.
func (q Queries) SetTaskParent(ctx context.Context, id, parent string) error {
	return q.execOne(ctx, "set parent of task "+id, `UPDATE tasks SET parent_id = ? WHERE id = ?`, nullable(parent), id)
}

// SetTaskHalted records whether a stop holds the task's queue.
func (q Queries) SetTaskHalted(ctx context.Context, id string, halted bool, now time.Time) error {
	return q.execOne(ctx, "set halted of task "+id,
		`UPDATE tasks SET halted = ?, updated_at = ? WHERE id = ?`, halted, nanos(now), id)
}

// SetTaskTitle sets an agent-chosen title and clears the pending flag.
func (q Queries) SetTaskTitle(ctx context.Context, id, title string, now time.Time) error {
	return q.execOne(ctx, "set title of task "+id,
		`UPDATE tasks SET title = ?, title_pending = 0, updated_at = ? WHERE id = ?`, title, nanos(now), id)
}

// Assign hands a task to a new assignee, recording who handed it, and the
// profile that will run it (unchanged when profile is "").
func (q Queries) Assign(ctx context.Context, id, assignee, handedBy, profile string, now time.Time) error {
	return q.execOne(ctx, "assign task "+id, `UPDATE tasks SET assignee = ?, handed_by = ?,
		profile = CASE WHEN ? = '' THEN profile ELSE ? END, updated_at = ? WHERE id = ?`,
		assignee, handedBy, profile, profile, nanos(now), id)
}

// SetStalled records (or, with "", clears) the escalation in force.
func (q Queries) SetStalled(ctx context.Context, id, stalledJSON string, now time.Time) error {
	return q.execOne(ctx, "set stalled of task "+id, `UPDATE tasks SET stalled = ?, updated_at = ? WHERE id = ?`,
		stalledJSON, nanos(now), id)
}

// SetNeedsCheck raises or clears the stall-check outbox flag.
func (q Queries) SetNeedsCheck(ctx context.Context, id string, on bool) error {
	return q.execOne(ctx, "flag task "+id, `UPDATE tasks SET needs_check = ? WHERE id = ?`, on, id)
}

// SetWorkspaceMode records a task's workspace mode ("discarded" once its
// worktree and branch are removed); the other workspace fields stay as a
// record of where the work was.
func (q Queries) SetWorkspaceMode(ctx context.Context, id, mode string, now time.Time) error {
	res, err := q.q.ExecContext(ctx, `UPDATE tasks SET workspace = ?, updated_at = ? WHERE id = ?`, mode, nanos(now), id)
	if err != nil {
		return fmt.Errorf("set workspace of %s: %w", id, mapErr(err))
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("task %s: %w", id, ErrNotFound)
	}
	return nil
}

// waitingColumn reads a task's waiting text and its cause as one value,
// the cause first and taskRowSep between, or the text alone when there is
// no cause (splitWaiting cuts it): a column of its own costs the driver
// two allocations a row, which showed in every task's refresh.
const waitingColumn = `CASE WHEN waiting_cause = '' THEN waiting ELSE waiting_cause || char(31) || waiting END`

// splitWaiting cuts what waitingColumn read into the cause and the text.
// A cause is one of kandev's names, never holding the separator, so a
// text without one that happens to hold it stays whole.
func splitWaiting(s string) (cause, text string) {
	c, t, ok := strings.Cut(s, string(rune(taskRowSep)))
	if !ok || c == "" || strings.Trim(c, "abcdefghijklmnopqrstuvwxyz_") != "" {
		return "", s
	}
	return c, t
}

// SetWaiting records why a task's agent cannot start: the cause code
// decides on and the text shown ("", "" clears it).
func (q Queries) SetWaiting(ctx context.Context, id, cause, why string, now time.Time) error {
	return q.execOne(ctx, "set waiting of task "+id, `UPDATE tasks SET waiting = ?, waiting_cause = ?, updated_at = ? WHERE id = ?`,
		why, cause, nanos(now), id)
}

func (q Queries) ids(ctx context.Context, query string, args ...any) ([]string, error) {
	rows, err := q.q.QueryContext(ctx, query, args...)
	return collect(rows, err, "list ids", func(s scanner) (string, error) {
		var id string
		return id, s.Scan(&id)
	})
}

// CountTasks counts all tasks, archived included.
func (q Queries) CountTasks(ctx context.Context) (int, error) {
	var n int
	err := q.q.QueryRowContext(ctx, `SELECT count(*) FROM tasks`).Scan(&n)
	return n, mapErr(err)
}

// execOne runs a write that must touch exactly one row.
func (q Queries) execOne(ctx context.Context, what, query string, args ...any) error {
	res, err := q.q.ExecContext(ctx, query, args...)
	if err != nil {
		return fmt.Errorf("%s: %w", what, mapErr(err))
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if n == 0 {
		return fmt.Errorf("%s: %w", what, ErrNotFound)
	}
	return nil
}
