package store

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
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
	// HasSource says whether a tracker issue is recorded for it
	// (task_sources), so a reader asks for the source only then: a
	// second query on every refresh cost a create a tenth more
	// allocations. Set by TaskViews and TaskView, not by EachTaskView.
	HasSource bool
	// Usage is its task_usage row (spend and budget), if it has one.
	Usage *TaskUsage
}

// viewWaitingColumn is waitingColumn on the view's alias t.
const viewWaitingColumn = `CASE WHEN t.waiting_cause = '' THEN t.waiting ELSE t.waiting_cause || char(31) || t.waiting END`

const viewTaskColumns = `SELECT t.id, t.title, t.description, COALESCE(t.parent_id, ''), t.cwd, t.profile, t.status,
	t.autopilot, t.created_by, t.created_at, t.updated_at, COALESCE(t.archived_at, 0),
	t.halted, COALESCE(t.session_id, ''), t.title_pending, t.assignee, t.handed_by, t.surface, t.stalled, t.needs_check, ` + viewWaitingColumn + `,
	t.workspace, t.repo_root, t.worktree_dir, t.branch, t.base_commit, t.sandbox, t.host`

const viewSessionColumns = `COALESCE(s.id, ''), COALESCE(s.role, ''), COALESCE(s.profile, ''), COALESCE(s.state, ''),
	COALESCE(s.agent_session_id, ''), COALESCE(s.pid, 0), COALESCE(s.error, ''), COALESCE(s.turns, 0),
	COALESCE(s.turn_started_at, 0), COALESCE(s.created_at, 0), COALESCE(s.updated_at, 0), COALESCE(s.interrupted, 0)`

const taskViewColumns = viewTaskColumns + `,
	` + viewSessionColumns + `,`

// taskViewQuery reads some tasks' views, their queue lengths, pending
// questions and open blockers by subqueries.
const taskViewQuery = taskViewColumns + `
	(SELECT count(*) FROM queue WHERE queue.task_id = t.id),
	COALESCE((SELECT seq FROM messages m WHERE m.task_id = t.id AND m.kind = 'question'
		AND json_extract(m.meta, '$.status') = 'pending' ORDER BY seq DESC LIMIT 1), 0),
	COALESCE((SELECT group_concat(b.blocker_id) FROM blockers b JOIN tasks bt ON bt.id = b.blocker_id
		WHERE b.task_id = t.id AND bt.status NOT IN ('done', 'cancelled') AND bt.archived_at IS NULL), ''),
	EXISTS (SELECT 1 FROM task_sources ts WHERE ts.task_id = t.id)
FROM tasks t LEFT JOIN sessions s ON s.id = t.session_id`

// allTaskRowsQuery reads every task as one text value: its rowid and its
// columns joined by taskRowSep. At 100,000 tasks, reading 26 columns
// through the driver (a type check, a copy and an interface per column)
// was more than half of the daemon's start; one value per row, cut here,
// costs about half as much, and a task's strings then share one
// allocation. parseTaskRow refuses a row that does not cut cleanly (a text
// holding the separator, a number that is not one): such a task is read
// again by its rowid, column by column.
const allTaskRowsQuery = `SELECT concat_ws(char(31), t.rowid, t.id, t.title, t.description, COALESCE(t.parent_id, ''),
	t.cwd, t.profile, t.status, t.autopilot, t.created_by, t.created_at, t.updated_at, COALESCE(t.archived_at, 0),
	t.halted, COALESCE(t.session_id, ''), t.title_pending, t.assignee, t.handed_by, t.surface, t.stalled,
	t.needs_check, t.waiting, t.workspace, t.repo_root, t.worktree_dir, t.branch, t.base_commit, t.sandbox, t.host,
	t.waiting_cause) FROM tasks t`

const (
	taskRowSep = '\x1f'
	// taskRowFields counts the columns after the rowid.
	taskRowFields = 29
)

// allSessionsQuery reads the latest session of every task that has one.
// It scans every task, tasks.session_id having no index;
// fewSessionsQuery reads the same from the sessions' side, which costs
// less while sessions are fewer than tasks: a task points only at a
// session of its own (InsertSession is the one writer of session_id).
const (
	allSessionsQuery = `SELECT t.id, ` + viewSessionColumns + ` FROM tasks t JOIN sessions s ON s.id = t.session_id`
	fewSessionsQuery = `SELECT t.id, ` + viewSessionColumns +
		` FROM sessions s CROSS JOIN tasks t ON t.id = s.task_id AND t.session_id = s.id`
)

// taskViewExtras are the aggregate queries that stand for taskViewQuery's
// per-row subqueries when every task is read: task id and queue length,
// pending question seq, or open blockers. Most tasks have none of these,
// so each is read once for all tasks rather than once per task.
var taskViewExtras = [...]string{
	`SELECT task_id, count(*) FROM queue GROUP BY task_id`,
	`SELECT task_id, max(seq) FROM messages WHERE kind = 'question' AND json_extract(meta, '$.status') = 'pending' GROUP BY task_id`,
	`SELECT b.task_id, group_concat(b.blocker_id) FROM blockers b JOIN tasks bt ON bt.id = b.blocker_id
		WHERE bt.status NOT IN ('done', 'cancelled') AND bt.archived_at IS NULL GROUP BY b.task_id`,
}

// TaskViews loads views of the given tasks, or of every task when ids is
// nil, in creation order.
func (q Queries) TaskViews(ctx context.Context, ids []string) ([]TaskView, error) {
	// Rows come in table order and are sorted here: SQLite's sorter,
	// carrying every column of every row, was a third of the daemon's
	// start at 100,000 tasks.
	if ids == nil {
		n, err := q.CountTasks(ctx)
		if err != nil {
			return nil, fmt.Errorf("count tasks: %w", err)
		}
		views := make([]TaskView, 0, n)
		err = q.EachTaskView(ctx, func(v *TaskView) { views = append(views, *v) })
		if err != nil {
			return nil, err
		}
		slices.SortFunc(views, func(a, b TaskView) int { return CompareCreated(&a.Task, &b.Task) })
		return views, nil
	}
	if len(ids) == 0 {
		return nil, nil
	}
	query := taskViewQuery + ` WHERE t.id IN (?` + strings.Repeat(",?", len(ids)-1) + `)`
	args := make([]any, 0, len(ids))
	for _, id := range ids {
		args = append(args, id)
	}
	n := len(ids)
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
			&v.Workspace, &v.RepoRoot, &v.WorktreeDir, &v.Branch, &v.BaseCommit, &v.Sandbox, &v.Host,
			&s.ID, &s.Role, &s.Profile, &s.State, &s.AgentSessionID, &s.PID, &s.Error, &s.Turns,
			&sTurn, &sCreated, &sUpdated, &s.Interrupted, &v.Queued, &qseq, &blockers, &v.HasSource)
		if err := rows.Scan(dest...); err != nil {
			rows.Close()
			return nil, fmt.Errorf("load tasks: %w", mapErr(err))
		}
		v.CreatedAt, v.UpdatedAt, v.ArchivedAt = fromNanos(created), fromNanos(updated), fromNanos(archived)
		v.WaitingCause, v.Waiting = splitWaiting(v.Waiting)
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
	for i, seq := range questionSeqs {
		m, err := q.GetMessage(ctx, seq)
		if err != nil {
			return nil, err
		}
		views[questionAt[i]].Question = &m
	}
	usage, err := q.TaskUsages(ctx, ids)
	if err != nil {
		return nil, err
	}
	for i := range views {
		views[i].Usage = usage[views[i].ID]
	}
	slices.SortFunc(views, func(a, b TaskView) int { return CompareCreated(&a.Task, &b.Task) })
	return views, nil
}

// CompareCreated orders tasks by creation, then id: the order of every
// task list.
func CompareCreated(a, b *Task) int {
	if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
		return c
	}
	return strings.Compare(a.ID, b.ID)
}

// EachTaskView calls fn, from one goroutine, with the view of every task,
// in no particular order; the view is fn's only for the call (its fields
// may be kept, the TaskView itself is reused). It is what the daemon's
// start reads. Each task is read as one value (allTaskRowsQuery), the
// table in a few rowid ranges on connections of their own, in parallel
// with the aggregate queries for what else a view holds. The write lock
// is held (nothing written) while they run, so every one of them reads
// the same state.
func (db *DB) EachTaskView(ctx context.Context, fn func(*TaskView)) error {
	lock, err := db.sql.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("load tasks: %w", mapErr(err))
	}
	defer lock.Rollback()
	return db.Queries.eachTaskView(ctx, fn, taskLoad{parts: min(runtime.GOMAXPROCS(0), 4), perPart: 10_000, batch: 512})
}

// EachTaskView is DB.EachTaskView on one connection (a transaction's).
func (q Queries) EachTaskView(ctx context.Context, fn func(*TaskView)) error {
	return q.eachTaskView(ctx, fn, taskLoad{parts: 1, batch: 512})
}

// taskBatch is a run of rows of allTaskRowsQuery one range scan read. The
// rows, not views, wait for the parts before theirs: a task keeps its
// row's text anyway, so they cost next to nothing to hold.
type taskBatch struct {
	rows []string
	part int
	last bool // the part's last batch
	err  error
}

// taskLoad is how eachTaskView reads: in up to parts rowid ranges of at
// least perPart rows, batch rows at a time.
type taskLoad struct {
	parts   int
	perPart int64
	batch   int
}

// eachTaskView reads the tasks as load says, in parallel when in more
// than one range (on q's pool, which must then be a DB's). fn sees them
// in table order, which is mostly creation order, whatever the ranges.
func (q Queries) eachTaskView(ctx context.Context, fn func(*TaskView), load taskLoad) error {
	var last int64
	if err := q.q.QueryRowContext(ctx, `SELECT COALESCE(max(rowid), 0) FROM tasks`).Scan(&last); err != nil {
		return fmt.Errorf("load tasks: %w", mapErr(err))
	}
	// Small tables are not worth the goroutines.
	parts := load.parts
	if load.perPart > 0 {
		parts = int(min(int64(parts), last/load.perPart))
	}
	var odd []any // rowids of rows that did not cut cleanly
	var v TaskView
	use := func(x *viewExtras, b *taskBatch) error {
		for _, row := range b.rows {
			v = TaskView{}
			rowid, ok, err := parseTaskRow(row, &v.Task)
			if err != nil {
				return err
			}
			if !ok {
				odd = append(odd, rowid)
				continue
			}
			x.fill(&v)
			fn(&v)
		}
		return nil
	}
	if parts <= 1 {
		x, err := q.viewExtras(ctx, last)
		if err != nil {
			return err
		}
		b, err := q.scanTaskRows(ctx, math.MinInt64, last, &taskBatch{rows: make([]string, 0, load.batch)},
			func(b *taskBatch) (*taskBatch, error) {
				err := use(x, b)
				b.rows = b.rows[:0]
				return b, err
			})
		if err != nil {
			return err
		}
		if err := use(x, b); err != nil {
			return err
		}
		return q.oddTaskViews(ctx, odd, fn)
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type extras struct {
		x   *viewExtras
		err error
	}
	xc := make(chan extras, 1)
	go func() {
		x, err := q.viewExtras(ctx, last)
		xc <- extras{x, err}
	}()
	batches := make(chan *taskBatch, 2*parts)
	free := make(chan *taskBatch, 4*parts)
	next := func(part int) *taskBatch {
		select {
		case b := <-free:
			b.rows, b.part, b.last = b.rows[:0], part, false
			return b
		default:
			return &taskBatch{rows: make([]string, 0, load.batch), part: part}
		}
	}
	for i := range parts {
		lo, hi := last*int64(i)/int64(parts), last*int64(i+1)/int64(parts)
		if i == 0 {
			lo = math.MinInt64
		}
		go func() {
			b, err := q.scanTaskRows(ctx, lo, hi, next(i), func(b *taskBatch) (*taskBatch, error) {
				select {
				case batches <- b:
					return next(i), nil
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			})
			if err != nil {
				b = &taskBatch{part: i, err: err}
			}
			// The reader takes every part's last batch, error or not.
			b.last = true
			batches <- b
		}()
	}
	x := <-xc
	err := x.err
	// Batches are used in table order: a part's wait for the parts
	// before it to end.
	queued := make([][]*taskBatch, parts)
	for cur, ended := 0, 0; ended < parts; {
		b := <-batches
		if b.last {
			ended++
		}
		if err == nil {
			err = b.err
		}
		if err != nil {
			cancel()
			continue
		}
		queued[b.part] = append(queued[b.part], b)
		for cur < parts && len(queued[cur]) > 0 {
			b := queued[cur][0]
			queued[cur] = queued[cur][1:]
			if err = use(x.x, b); err != nil {
				cancel()
				break
			}
			if b.last {
				cur++
			}
			select {
			case free <- b:
			default:
			}
		}
	}
	if err != nil {
		return err
	}
	return q.oddTaskViews(ctx, odd, fn)
}

// scanTaskRows reads the tasks of rowids (lo, hi] into b, handing each
// full batch to flush, which returns the batch to go on with, and returns
// the last batch.
func (q Queries) scanTaskRows(ctx context.Context, lo, hi int64, b *taskBatch,
	flush func(*taskBatch) (*taskBatch, error)) (*taskBatch, error) {
	rows, err := q.q.QueryContext(ctx, allTaskRowsQuery+` WHERE t.rowid > ? AND t.rowid <= ?`, lo, hi)
	if err != nil {
		return nil, fmt.Errorf("load tasks: %w", mapErr(err))
	}
	defer rows.Close()
	var row string
	for rows.Next() {
		if err := rows.Scan(&row); err != nil {
			return nil, fmt.Errorf("load tasks: %w", mapErr(err))
		}
		b.rows = append(b.rows, row)
		if len(b.rows) == cap(b.rows) {
			if b, err = flush(b); err != nil {
				return nil, err
			}
		}
	}
	if err := rows.Close(); err != nil {
		return nil, fmt.Errorf("load tasks: %w", mapErr(err))
	}
	return b, nil
}

// oddTaskViews reads the tasks whose rows did not cut cleanly column by
// column, and calls fn with them.
func (q Queries) oddTaskViews(ctx context.Context, rowids []any, fn func(*TaskView)) error {
	// A few hundred at a time, well within SQLite's limit on parameters.
	for chunk := range slices.Chunk(rowids, 500) {
		ids, err := q.ids(ctx, `SELECT id FROM tasks WHERE rowid IN (?`+strings.Repeat(",?", len(chunk)-1)+`)`, chunk...)
		if err != nil {
			return fmt.Errorf("load tasks: %w", err)
		}
		views, err := q.TaskViews(ctx, ids)
		if err != nil {
			return err
		}
		for i := range views {
			fn(&views[i])
		}
	}
	return nil
}

// parseTaskRow fills t from one row of allTaskRowsQuery. It returns the
// row's rowid and whether the rest cut into exactly its fields, each of
// its kind; an error when even the rowid does not read.
func parseTaskRow(row string, t *Task) (rowid int64, ok bool, err error) {
	j := strings.IndexByte(row, taskRowSep)
	if j >= 0 {
		rowid, err = strconv.ParseInt(row[:j], 10, 64)
	}
	if j < 0 || err != nil {
		return 0, false, fmt.Errorf("load tasks: a row without its rowid: %.40q", row)
	}
	row = row[j+1:]
	var f [taskRowFields]string
	for i := range taskRowFields - 1 {
		j := strings.IndexByte(row, taskRowSep)
		if j < 0 {
			return rowid, false, nil
		}
		f[i], row = row[:j], row[j+1:]
	}
	if strings.IndexByte(row, taskRowSep) >= 0 {
		return rowid, false, nil
	}
	f[taskRowFields-1] = row
	ok = true
	flag := func(s string) bool {
		switch s {
		case "0":
			return false
		case "1":
			return true
		}
		ok = false
		return false
	}
	when := func(s string) time.Time {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			ok = false
		}
		return fromNanos(n)
	}
	*t = Task{ID: f[0], Title: f[1], Description: f[2], ParentID: f[3], CWD: f[4], Profile: f[5], Status: f[6],
		Autopilot: flag(f[7]), CreatedBy: f[8], CreatedAt: when(f[9]), UpdatedAt: when(f[10]), ArchivedAt: when(f[11]),
		Halted: flag(f[12]), SessionID: f[13], TitlePending: flag(f[14]), Assignee: f[15], HandedBy: f[16],
		Surface: f[17], Stalled: f[18], NeedsCheck: flag(f[19]), Waiting: f[20], Workspace: f[21], RepoRoot: f[22],
		WorktreeDir: f[23], Branch: f[24], BaseCommit: f[25], Sandbox: f[26], Host: f[27], WaitingCause: f[28]}
	return rowid, ok, nil
}

func finishSession(s *Session, taskID string, turn, created, updated int64) *Session {
	s.TaskID = taskID
	s.TurnStartedAt, s.CreatedAt, s.UpdatedAt = fromNanos(turn), fromNanos(created), fromNanos(updated)
	return s
}

// viewExtras is what a view holds besides its task, for every task that
// has any, by task id.
type viewExtras struct {
	sessions  map[string]*Session
	queued    map[string]int
	questions map[string]*Message
	blockers  map[string][]string
	usage     map[string]*TaskUsage
}

// fill sets what v holds besides its task.
func (x *viewExtras) fill(v *TaskView) {
	if v.SessionID != "" {
		v.Session = x.sessions[v.ID]
	}
	if len(x.queued) > 0 {
		v.Queued = x.queued[v.ID]
	}
	if len(x.questions) > 0 {
		v.Question = x.questions[v.ID]
	}
	if len(x.blockers) > 0 {
		v.OpenBlockers = x.blockers[v.ID]
	}
	if len(x.usage) > 0 {
		v.Usage = x.usage[v.ID]
	}
}

// viewExtras reads the latest sessions, queue lengths, pending questions
// and open blockers of every task.
func (q Queries) viewExtras(ctx context.Context, tasks int64) (*viewExtras, error) {
	x := &viewExtras{sessions: map[string]*Session{}, queued: map[string]int{}, questions: map[string]*Message{},
		blockers: map[string][]string{}}
	var sessions int64
	if err := q.q.QueryRowContext(ctx, `SELECT count(*) FROM sessions`).Scan(&sessions); err != nil {
		return nil, fmt.Errorf("count sessions: %w", mapErr(err))
	}
	query := allSessionsQuery
	if sessions*4 < tasks {
		query = fewSessionsQuery
	}
	rows, err := q.q.QueryContext(ctx, query)
	if err != nil {
		return nil, fmt.Errorf("load sessions: %w", mapErr(err))
	}
	for rows.Next() {
		var id string
		var s Session
		var turn, created, updated int64
		if err := rows.Scan(&id, &s.ID, &s.Role, &s.Profile, &s.State, &s.AgentSessionID, &s.PID, &s.Error, &s.Turns,
			&turn, &created, &updated, &s.Interrupted); err != nil {
			rows.Close()
			return nil, fmt.Errorf("load sessions: %w", mapErr(err))
		}
		x.sessions[id] = finishSession(&s, id, turn, created, updated)
	}
	if err := rows.Close(); err != nil {
		return nil, mapErr(err)
	}
	questions := map[string]int64{}
	for i, query := range taskViewExtras {
		rows, err := q.q.QueryContext(ctx, query)
		if err != nil {
			return nil, fmt.Errorf("load tasks: %w", mapErr(err))
		}
		for rows.Next() {
			var id, val string
			if err := rows.Scan(&id, &val); err != nil {
				rows.Close()
				return nil, fmt.Errorf("load tasks: %w", mapErr(err))
			}
			switch i {
			case 0:
				x.queued[id], err = strconv.Atoi(val)
			case 1:
				questions[id], err = strconv.ParseInt(val, 10, 64)
			case 2:
				x.blockers[id] = strings.Split(val, ",")
			}
			if err != nil {
				rows.Close()
				return nil, fmt.Errorf("load tasks: %s of task %s: %w", query, id, err)
			}
		}
		if err := rows.Close(); err != nil {
			return nil, mapErr(err)
		}
	}
	for id, seq := range questions {
		m, err := q.GetMessage(ctx, seq)
		if err != nil {
			return nil, err
		}
		x.questions[id] = &m
	}
	// Only tasks that spent something or have a budget have a row.
	if x.usage, err = q.TaskUsages(ctx, nil); err != nil {
		return nil, err
	}
	return x, nil
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
