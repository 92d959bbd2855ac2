package tui

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
)

// Every call to the daemon happens here, inside a tea.Cmd; Update only
// reads the messages these produce.

// streamOpenMsg: the event stream is up (gen counts connections).
type streamOpenMsg struct {
	gen    int
	client api.Client
	events <-chan core.Event
	cancel context.CancelFunc
	// appends is the appends filter it opened with (api.EventsInput).
	appends string
}

// streamFailedMsg: connecting failed; try again after a pause.
type streamFailedMsg struct {
	gen int
	err error
}

// eventsMsg carries the events that were ready at once (a burst arrives
// as one message, so the tree is laid out once per burst). closed: the
// stream ended after them.
type eventsMsg struct {
	gen    int
	events []core.Event
	closed bool
}

type reconnectMsg struct{ gen int }

type tasksMsg struct {
	gen   int
	tasks []core.Task
	// partial: the tasks are summaries (api.TaskSummaries); the selected
	// one is loaded whole for the detail pane.
	partial bool
	// rest, when set, says tasks are only the listing's first rows (the
	// tree's order), drawn at once; rest reads the whole listing.
	rest tea.Cmd
	err  error
}

// taskMsg is one task loaded whole, for the detail pane.
type taskMsg struct {
	task core.Task
	err  error
}

type profilesMsg struct {
	profiles []core.Profile
	err      error
}

// pageKind says which part of a conversation a page request reads.
type pageKind int

const (
	pageTail  pageKind = iota // the newest entries (Before -1)
	pageOlder                 // back from the window's first entry (Before)
	pageNewer                 // forward from inside the window (After)
	pageEntry                 // one entry read again (its seq in cursor)
)

type convoPageMsg struct {
	gen    int // detail generation
	taskID string
	kind   pageKind
	cursor int64 // Before for pageOlder, After for pageNewer
	page   api.ConversationPage
	err    error
}

type convoLoadMsg struct{ gen int }

// assigneesMsg: the roles and people a task can be handed to, for the
// hand-on dialog that asked.
type assigneesMsg struct {
	dialog  int
	roles   []api.Role
	persons []api.Person
	what    string // the listing that failed
	err     error
}

type tickMsg time.Time

// opKind names an operator action.
type opKind int

const (
	opCreate opKind = iota
	opAnswer
	opMessage
	opStop
	opStart
	opArchive
	opStatus
	opHandoff
	opDrop
	opMerge
	opDiscard
	opReview
	opPush
	opPR
	opBudget
)

func (o opKind) String() string {
	return [...]string{"create", "answer", "message", "stop", "start", "archive", "set status", "hand on", "drop", "merge", "discard", "review", "push", "open pull request", "set the budget of"}[o]
}

// opDoneMsg is an action's outcome: text to show, or the engine's refusal.
type opDoneMsg struct {
	op     opKind
	dialog int // the dialog that asked, if any
	taskID string
	text   string
	task   *core.Task // a created task, to select it
	// question: the question an answer answered.
	question string
	err      error
}

// changesMsg: a task's change summary (its diff without the patch), for
// the detail pane.
type changesMsg struct {
	taskID string
	diff   api.TaskDiff
	err    error
}

func loadChangesCmd(ctx context.Context, c api.Client, id string) tea.Cmd {
	return func() tea.Msg {
		d, err := c.TaskDiff(ctx, id, api.DiffInput{})
		return changesMsg{taskID: id, diff: d, err: err}
	}
}

// diffMsg: a task's diff, for the diff view that asked.
type diffMsg struct {
	dialog int
	diff   api.TaskDiff
	err    error
}

func loadDiffCmd(ctx context.Context, c api.WorkspaceClient, dialog int, id string) tea.Cmd {
	return func() tea.Msg {
		d, err := c.TaskDiff(ctx, id, api.DiffInput{Patch: true})
		return diffMsg{dialog: dialog, diff: d, err: err}
	}
}

// queueMsg: a task's queue, for the queue dialog that asked (after a
// drop, with what was dropped).
type queueMsg struct {
	dialog int
	view   api.QueueView
	drop   bool
	err    error
}

func loadQueueCmd(ctx context.Context, c api.MessageClient, dialog int, id string) tea.Cmd {
	return func() tea.Msg {
		v, err := c.TaskQueue(ctx, id)
		return queueMsg{dialog: dialog, view: v, err: err}
	}
}

func dropQueuedCmd(ctx context.Context, c api.MessageClient, dialog int, id string, in api.DropQueueInput) tea.Cmd {
	return func() tea.Msg {
		v, err := c.DropQueued(ctx, id, in)
		return queueMsg{dialog: dialog, view: v, drop: true, err: err}
	}
}

// maxBurst caps how many queued events one message carries.
const maxBurst = 1024

// connectCmd opens the event stream, its appends filter at appends (the
// conversation shown, or none: appends.go).
func connectCmd(ctx context.Context, gen int, client api.Client, reconnect func(context.Context) (api.Client, error), appends string) tea.Cmd {
	return func() tea.Msg {
		c := client
		if reconnect != nil {
			nc, err := reconnect(ctx)
			if err != nil {
				return streamFailedMsg{gen: gen, err: err}
			}
			c = nc
		}
		sctx, cancel := context.WithCancel(ctx)
		ch, err := c.Events(sctx, api.EventsInput{Appends: appends})
		if err != nil {
			cancel()
			return streamFailedMsg{gen: gen, err: err}
		}
		return streamOpenMsg{gen: gen, client: c, events: ch, cancel: cancel, appends: appends}
	}
}

func waitEventsCmd(gen int, ch <-chan core.Event) tea.Cmd {
	return func() tea.Msg {
		ev, ok := <-ch
		if !ok {
			return eventsMsg{gen: gen, closed: true}
		}
		evs := []core.Event{ev}
		for len(evs) < maxBurst {
			select {
			case ev, ok := <-ch:
				if !ok {
					return eventsMsg{gen: gen, events: evs, closed: true}
				}
				evs = append(evs, ev)
			default:
				return eventsMsg{gen: gen, events: evs}
			}
		}
		return eventsMsg{gen: gen, events: evs}
	}
}

// timerFunc makes a timer's command (tea.Tick outside tests).
type timerFunc func(time.Duration, func(time.Time) tea.Msg) tea.Cmd

func reconnectAfter(after timerFunc, gen int, d time.Duration) tea.Cmd {
	return after(d, func(time.Time) tea.Msg { return reconnectMsg{gen: gen} })
}

// loadTasksCmd lists the tasks, as summaries when the client can: the
// tree needs no more, and at 100,000 tasks decoding whole tasks was most
// of the start.
//
// A streaming client hands over the first rows (firstRows summaries in the
// tree's order) as soon as they are read: the tree draws them while the
// rest of a large listing arrives (at 100,000 tasks, most of the start).
func loadTasksCmd(ctx context.Context, c api.Client, gen int) tea.Cmd {
	return func() tea.Msg {
		if sc, ok := c.(api.TaskSummaryStream); ok {
			early := make(chan []core.Task, 1)
			whole := make(chan tasksMsg, 1)
			go func() {
				ts, err := sc.StreamTaskSummaries(ctx, api.ListTasksInput{}, firstRows, func(first []core.Task) { early <- first })
				close(early)
				whole <- tasksMsg{gen: gen, tasks: ts, partial: true, err: err}
			}()
			first, ok := <-early
			if !ok || len(first) < firstRows {
				return <-whole // a failure, or a listing that fits in the first rows
			}
			return tasksMsg{gen: gen, tasks: first, partial: true, rest: func() tea.Msg { return <-whole }}
		}
		if sc, ok := c.(api.TaskSummaries); ok {
			ts, err := sc.ListTaskSummaries(ctx, api.ListTasksInput{})
			return tasksMsg{gen: gen, tasks: ts, partial: true, err: err}
		}
		ts, err := c.ListTasks(ctx, api.ListTasksInput{})
		return tasksMsg{gen: gen, tasks: ts, err: err}
	}
}

// firstRows is how many summaries the tree draws before the rest of the
// listing has arrived: more than a tall terminal shows.
const firstRows = 500

func loadTaskCmd(ctx context.Context, c api.TaskClient, id string) tea.Cmd {
	return func() tea.Msg {
		t, err := c.GetTask(ctx, id)
		return taskMsg{task: t, err: err}
	}
}

func loadProfilesCmd(ctx context.Context, c api.RoleClient) tea.Cmd {
	return func() tea.Msg {
		ps, err := c.ListProfiles(ctx)
		return profilesMsg{profiles: ps, err: err}
	}
}

// convoPageSize is how many entries one conversation request fetches.
const convoPageSize = 500

func loadConvoCmd(ctx context.Context, c api.MessageClient, gen int, taskID string, kind pageKind, cursor int64) tea.Cmd {
	in := api.ConversationInput{Limit: convoPageSize}
	switch kind {
	case pageTail:
		in.Before = -1
	case pageOlder:
		in.Before = cursor
	case pageNewer:
		in.After = cursor
	case pageEntry:
		in.After, in.Limit = cursor-1, 1
	}
	return func() tea.Msg {
		p, err := c.Conversation(ctx, taskID, in)
		return convoPageMsg{gen: gen, taskID: taskID, kind: kind, cursor: cursor, page: p, err: err}
	}
}

func debounceConvo(after timerFunc, gen int, d time.Duration) tea.Cmd {
	if d <= 0 {
		return func() tea.Msg { return convoLoadMsg{gen: gen} }
	}
	return after(d, func(time.Time) tea.Msg { return convoLoadMsg{gen: gen} })
}

func tickCmd(after timerFunc, d time.Duration) tea.Cmd {
	return after(d, func(t time.Time) tea.Msg { return tickMsg(t) })
}

func createCmd(ctx context.Context, c api.TaskClient, dialog int, in api.CreateTaskInput) tea.Cmd {
	return func() tea.Msg {
		t, err := c.CreateTask(ctx, in)
		if err != nil {
			return opDoneMsg{op: opCreate, dialog: dialog, err: err}
		}
		text := fmt.Sprintf("created task %s: %s", t.ID, oneLine(t.Title))
		if in.Start {
			text += " (started)"
		}
		return opDoneMsg{op: opCreate, dialog: dialog, taskID: t.ID, text: text, task: &t}
	}
}

func answerCmd(ctx context.Context, c api.QuestionClient, dialog int, id string, in api.AnswerInput) tea.Cmd {
	return func() tea.Msg {
		r, err := c.AnswerQuestion(ctx, id, in)
		if err != nil {
			return opDoneMsg{op: opAnswer, dialog: dialog, taskID: id, err: err}
		}
		text := fmt.Sprintf("answered question %s of task %s", r.QuestionID, id)
		switch {
		case r.Status == "already_answered":
			text = fmt.Sprintf("question %s of task %s was already answered", r.QuestionID, id)
		case r.Delivered == "waiting_call":
			text += "; the agent continues"
		case r.Delivered == "next_turn":
			text += "; it is the task's next turn"
		}
		return opDoneMsg{op: opAnswer, dialog: dialog, taskID: id, text: text, question: r.QuestionID}
	}
}

// pushCmd pushes a task's branch to origin.
func pushCmd(ctx context.Context, c api.WorkspaceClient, dialog int, id string) tea.Cmd {
	return func() tea.Msg {
		r, err := c.PushTask(ctx, id, api.PushInput{})
		if err != nil {
			return opDoneMsg{op: opPush, dialog: dialog, taskID: id, err: err}
		}
		text := fmt.Sprintf("pushed %s to %s (%s)", r.Branch, r.Remote, shortCommit(r.Commit))
		if r.Committed {
			text += ", uncommitted work committed first"
		}
		return opDoneMsg{op: opPush, dialog: dialog, taskID: id, text: text}
	}
}

// prCmd pushes a task's branch and opens a pull request for it.
func prCmd(ctx context.Context, c api.WorkspaceClient, dialog int, id string) tea.Cmd {
	return func() tea.Msg {
		// gh is looked up on the UI's PATH, as the CLI's task pr does.
		r, err := c.PullRequestTask(ctx, id, api.PullRequestInput{Path: os.Getenv("PATH")})
		if err != nil {
			return opDoneMsg{op: opPR, dialog: dialog, taskID: id, err: err}
		}
		return opDoneMsg{op: opPR, dialog: dialog, taskID: id, text: "pull request for " + id + ": " + r.URL}
	}
}

// reviewCmd sends a task the diff view's comments as one review.
func reviewCmd(ctx context.Context, c api.MessageClient, dialog int, id string, in api.MessageInput) tea.Cmd {
	return func() tea.Msg {
		r, err := c.MessageTask(ctx, id, in)
		if err != nil {
			return opDoneMsg{op: opReview, dialog: dialog, taskID: id, err: err}
		}
		n := fmt.Sprintf("%d comments", len(r.Comments))
		if len(r.Comments) == 1 {
			n = "1 comment"
		}
		text := fmt.Sprintf("review of %s (%s): %s", id, n, r.Status)
		if r.Status == "queued" {
			text += fmt.Sprintf(" (position %d)", r.Position)
		}
		return opDoneMsg{op: opReview, dialog: dialog, taskID: id, text: text}
	}
}

func messageCmd(ctx context.Context, c api.MessageClient, dialog int, id string, in api.MessageInput) tea.Cmd {
	return func() tea.Msg {
		r, err := c.MessageTask(ctx, id, in)
		if err != nil {
			return opDoneMsg{op: opMessage, dialog: dialog, taskID: id, err: err}
		}
		var text string
		switch r.Status {
		case "started":
			text = fmt.Sprintf("message to %s started a turn", id)
		case "interrupted":
			text = fmt.Sprintf("message to %s interrupted the running turn", id)
		case "queued":
			text = fmt.Sprintf("message to %s queued (position %d)", id, r.Position)
		default:
			text = fmt.Sprintf("message to %s: %s", id, r.Status)
		}
		return opDoneMsg{op: opMessage, dialog: dialog, taskID: id, text: text}
	}
}

// budgetCmd fixes or raises a task's budget, saying what became of the
// turns it cut (the daemon's client is an api.Spender).
func budgetCmd(ctx context.Context, c api.Client, dialog int, id string, in api.BudgetInput) tea.Cmd {
	return func() tea.Msg {
		sp, ok := c.(api.Spender)
		if !ok {
			return opDoneMsg{op: opBudget, dialog: dialog, taskID: id, err: core.Errorf(core.CodeUnavailable, "this client does not set budgets")}
		}
		t, err := sp.SetBudget(ctx, id, in)
		if err != nil {
			return opDoneMsg{op: opBudget, dialog: dialog, taskID: id, err: err}
		}
		text := "budget of task " + id + " set"
		if b := t.Budget; b != nil && b.Amount.Kind != "" {
			text = "budget of task " + id + ": " + b.Amount.Format(b.Spent) + " of " + b.Amount.Format(b.Amount.Value) + " spent"
		}
		switch in.CutTurn {
		case api.CutTurnDrop:
			text += "; the cut turn was dropped"
		case api.CutTurnRedeliver:
			text += "; the cut turn is delivered again"
		case api.CutTurnContinue:
			text += "; its agent is told to go on"
		}
		return opDoneMsg{op: opBudget, dialog: dialog, taskID: id, text: text}
	}
}

func stopCmd(ctx context.Context, c api.TaskClient, dialog int, id string) tea.Cmd {
	return func() tea.Msg {
		r, err := c.StopTask(ctx, id, api.StopTaskInput{})
		if err != nil {
			return opDoneMsg{op: opStop, dialog: dialog, taskID: id, err: err}
		}
		text := fmt.Sprintf("stopped task %s", id)
		if r.Result == "not_running" {
			text = fmt.Sprintf("task %s was not running; nothing to stop", id)
		}
		return opDoneMsg{op: opStop, dialog: dialog, taskID: id, text: text}
	}
}

func startCmd(ctx context.Context, c api.MessageClient, id string) tea.Cmd {
	return func() tea.Msg {
		t, err := c.StartTask(ctx, id, api.StartTaskInput{})
		if err != nil {
			return opDoneMsg{op: opStart, taskID: id, err: err}
		}
		return opDoneMsg{op: opStart, taskID: id, text: fmt.Sprintf("started task %s (%s)", t.ID, t.Status)}
	}
}

func archiveCmd(ctx context.Context, c api.TaskClient, dialog int, id string) tea.Cmd {
	return func() tea.Msg {
		t, err := c.ArchiveTask(ctx, id, api.ArchiveTaskInput{})
		if err != nil {
			return opDoneMsg{op: opArchive, dialog: dialog, taskID: id, err: err}
		}
		return opDoneMsg{op: opArchive, dialog: dialog, taskID: id, text: fmt.Sprintf("archived task %s (kandev task list --all still shows it)", t.ID), task: &t}
	}
}

func loadAssigneesCmd(ctx context.Context, c api.RoleClient, dialog int) tea.Cmd {
	return func() tea.Msg {
		rs, err := c.ListRoles(ctx)
		if err != nil {
			return assigneesMsg{dialog: dialog, what: "list roles", err: err}
		}
		ps, err := c.ListPersons(ctx)
		if err != nil {
			return assigneesMsg{dialog: dialog, roles: rs, what: "list people", err: err}
		}
		return assigneesMsg{dialog: dialog, roles: rs, persons: ps}
	}
}

func statusCmd(ctx context.Context, c api.TaskClient, dialog int, id string, from, to core.Status) tea.Cmd {
	return func() tea.Msg {
		t, err := c.SetTaskStatus(ctx, id, to)
		if err != nil {
			return opDoneMsg{op: opStatus, dialog: dialog, taskID: id, err: err}
		}
		glyph, _ := statusGlyph(t.Status)
		text := fmt.Sprintf("task %s: %s → %s %s", id, from, glyph, t.Status)
		if from == t.Status {
			text = fmt.Sprintf("task %s is already %s %s", id, glyph, t.Status)
		}
		return opDoneMsg{op: opStatus, dialog: dialog, taskID: id, text: text}
	}
}

func handoffCmd(ctx context.Context, c api.TaskClient, dialog int, id string, in api.HandoffInput) tea.Cmd {
	return func() tea.Msg {
		r, err := c.HandoffTask(ctx, id, in)
		if err != nil {
			return opDoneMsg{op: opHandoff, dialog: dialog, taskID: id, err: err}
		}
		return opDoneMsg{op: opHandoff, dialog: dialog, taskID: id, text: handoffText(id, r)}
	}
}

// handoffText says where a handed-on task went and what happens next.
func handoffText(id string, r api.HandoffResult) string {
	to := describeAssignee(r.To)
	switch r.Delivered {
	case "turn":
		return fmt.Sprintf("handed task %s to %s; its agent runs", id, to)
	case "waiting":
		if r.To.IsOperator() {
			return fmt.Sprintf("handed task %s to you; it waits for you", id)
		}
		return fmt.Sprintf("handed task %s to %s; it waits for them", id, to)
	case "sign_off":
		return fmt.Sprintf("handed task %s back to task %s; its agent is asked to sign it off", id, r.To.Name)
	}
	return fmt.Sprintf("handed task %s to %s (%s)", id, to, r.Delivered)
}

// loadStatCmd reads a task's change stat (its diff without the patch) for
// the merge or discard confirmation that asked.
func loadStatCmd(ctx context.Context, c api.Client, dialog int, id string) tea.Cmd {
	return func() tea.Msg {
		d, err := c.TaskDiff(ctx, id, api.DiffInput{})
		return diffMsg{dialog: dialog, diff: d, err: err}
	}
}

func mergeCmd(ctx context.Context, c api.WorkspaceClient, dialog int, id string, in api.MergeInput) tea.Cmd {
	return func() tea.Msg {
		r, err := c.MergeTask(ctx, id, in)
		if err != nil {
			return opDoneMsg{op: opMerge, dialog: dialog, taskID: id, err: err}
		}
		how := "merged"
		if in.Squash {
			how = "squashed"
		}
		t := r.Task
		return opDoneMsg{op: opMerge, dialog: dialog, taskID: id, task: &t,
			text: fmt.Sprintf("%s %s into %s (%s)", how, r.Branch, r.Into, shortCommit(r.Commit))}
	}
}

func discardCmd(ctx context.Context, c api.WorkspaceClient, dialog int, id string) tea.Cmd {
	return func() tea.Msg {
		t, err := c.DiscardTask(ctx, id, api.DiscardTaskInput{})
		if err != nil {
			return opDoneMsg{op: opDiscard, dialog: dialog, taskID: id, err: err}
		}
		w := t.Workspace
		if w == nil {
			w = &core.Workspace{}
		}
		return opDoneMsg{op: opDiscard, dialog: dialog, taskID: id, task: &t,
			text: fmt.Sprintf("discarded worktree %s and branch %s of task %s", w.Dir, w.Branch, t.ID)}
	}
}

// finishCmd ends a merged or discarded task: its status, then its
// archive. The outcome names the last step that ran.
func finishCmd(ctx context.Context, c api.Client, dialog int, a endTask) tea.Cmd {
	return func() tea.Msg {
		var done []string
		// The task as it is now: a step that went through before a
		// refusal (done, then the archive refused) is not taken again.
		if t, err := c.GetTask(ctx, a.taskID); err == nil {
			a.from = t.Status
		}
		if a.from != a.to {
			t, err := c.SetTaskStatus(ctx, a.taskID, a.to)
			if err != nil {
				return opDoneMsg{op: opStatus, dialog: dialog, taskID: a.taskID, err: err}
			}
			glyph, _ := statusGlyph(t.Status)
			done = append(done, fmt.Sprintf("%s %s", glyph, t.Status))
		}
		if !a.archive {
			return opDoneMsg{op: opStatus, dialog: dialog, taskID: a.taskID, text: fmt.Sprintf("task %s: %s", a.taskID, strings.Join(done, ", "))}
		}
		t, err := c.ArchiveTask(ctx, a.taskID, api.ArchiveTaskInput{})
		if err != nil {
			return opDoneMsg{op: opArchive, dialog: dialog, taskID: a.taskID, err: err}
		}
		done = append(done, "archived (kandev task list --all still shows it)")
		return opDoneMsg{op: opArchive, dialog: dialog, taskID: a.taskID, task: &t,
			text: fmt.Sprintf("task %s: %s", a.taskID, strings.Join(done, ", "))}
	}
}
