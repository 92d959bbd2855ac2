package tui

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
)

// connState is where the link to the daemon stands.
type connState int

const (
	connConnecting connState = iota
	connLive
	connLost
)

// Timings. Tests zero tickEvery and debounce to make frames deterministic.
const (
	spinEvery     = 120 * time.Millisecond
	clockEvery    = time.Second
	convoDebounce = 60 * time.Millisecond
	maxBackoff    = 5 * time.Second
	firstBackoff  = 250 * time.Millisecond
)

// Model is the one top-level bubbletea model. Its children (tree, detail,
// dialogs) are plain structs it owns; all I/O runs in tea.Cmds (cmds.go).
type Model struct {
	ctx    context.Context
	client api.Client
	opts   Options
	st     styles
	keys   keyMap

	w, h  int
	now   time.Time
	frame int
	// tickEvery > 0 animates spinners and refreshes ages; debounce delays
	// loading a conversation while the cursor moves.
	tickEvery time.Duration
	debounce  time.Duration
	backoff   time.Duration // the first reconnect pause; it doubles
	// after is how every timer is made (tea.Tick); the Update tests
	// replace it so short timers fire at once and long ones wait for the
	// test, which makes their runs independent of the machine's speed.
	after timerFunc
	// exec hands the terminal to a shell or an editor (tea.Exec).
	exec execFunc

	// The daemon link. gen counts connections; messages of an older
	// connection are dropped.
	gen      int
	conn     connState
	connErr  string
	cancel   context.CancelFunc
	events   <-chan core.Event
	attempt  int
	retryIn  time.Duration
	loading  bool         // a task listing is in flight
	fetching string       // the task being loaded whole for the detail pane
	buffered []core.Event // task events that arrived during it
	// reloadAgain: a resync came while a listing was in flight.
	reloadAgain bool
	connected   bool // a connection ever came up
	// daemonDown: reconnecting found no daemon running, and the UI does
	// not start one by itself (Options.Attach); R does.
	daemonDown bool

	// appends: the stream's appends filter, moved to the conversation
	// shown (appends.go).
	appends appendsFollow

	tasks    *taskStore
	tree     treePane
	detail   detailPane
	changes  changeState
	profiles []core.Profile

	filter      filter
	filterInput textinput.Model
	typing      bool // the filter input has the keyboard

	focusLog  bool
	zoom      bool      // the selected task's conversation takes the screen (z)
	search    logSearch // a search of the zoomed conversation (/)
	dialog    dialog
	dialogSeq int
	status    string
	statusErr bool
	// flash says, for a few seconds, that a task started needing you; a
	// line of its own, so the operator's own status is not replaced.
	flash      string
	flashTask  string
	needLayout bool
	// answered: the questions answered from this UI, so a, pressed again
	// before the daemon's update of the subtask arrives, opens the next
	// one rather than the one just answered.
	answered map[string]bool
}

func newModel(ctx context.Context, client api.Client, opts Options, st styles) *Model {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Location == nil {
		opts.Location = time.Local
	}
	m := &Model{
		ctx: ctx, client: client, opts: opts, st: st, keys: newKeyMap(),
		tickEvery: clockEvery, debounce: convoDebounce, backoff: firstBackoff, after: tea.Tick, exec: tea.Exec,
		tasks: newTaskStore(), tree: newTreePane(), now: opts.Now(),
		appends: appendsFollow{order: &appendsOrder{}},
	}
	m.detail.follow = true
	m.filterInput = newInput(m.st, "title, id or profile", 30)
	return m
}

// Init connects: the event stream first, then the listing, so nothing
// falls between them.
func (m *Model) Init() tea.Cmd {
	m.gen = 1
	cmds := []tea.Cmd{connectCmd(m.ctx, m.gen, m.client, nil, m.openingAppends())}
	if m.tickEvery > 0 {
		cmds = append(cmds, tickCmd(m.after, m.tickEvery))
	}
	if text := m.opts.Notice; text != "" {
		m.flash = text
		cmds = append(cmds, m.after(noticeFor, func(time.Time) tea.Msg { return flashEndMsg{text: text} }))
	}
	return tea.Batch(cmds...)
}

// Update handles one message; after it, sync brings derived state (tree
// rows, scroll positions, the detail's task and lines) up to date.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	var cmds []tea.Cmd
	if am, ok := msg.(appendsMsg); ok {
		// The filter moved; what was chained after it is handled now.
		m.onAppends(am)
		msg = am.then
	}
	add := func(c tea.Cmd) {
		if c != nil {
			cmds = append(cmds, c)
		}
	}
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.w, m.h = msg.Width, msg.Height
		m.needLayout = true
		if r, ok := m.dialog.(interface{ resize(dialogUI) }); ok {
			r.resize(m.dialogUI())
		}
	case tea.KeyMsg:
		// Keys typed faster than the program reads them (key repeat, or
		// tmux send-keys) arrive as one message with several runes: take
		// them one by one. A paste stays whole.
		if msg.Type == tea.KeyRunes && len(msg.Runes) > 1 && !msg.Paste {
			for _, r := range msg.Runes {
				add(m.onKey(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}, Alt: msg.Alt}))
			}
			break
		}
		add(m.onKey(msg))
	case streamOpenMsg:
		add(m.onStreamOpen(msg))
	case streamFailedMsg:
		if msg.gen == m.gen {
			m.daemonDown = errors.Is(msg.err, ErrNoDaemon)
			add(m.lost(errorText(msg.err)))
		}
	case eventsMsg:
		add(m.onEvents(msg))
	case reconnectMsg:
		if msg.gen == m.gen {
			m.gen++
			m.conn = connConnecting
			reconnect := m.opts.Reconnect
			if m.opts.Attach != nil {
				reconnect = m.opts.Attach
			}
			add(connectCmd(m.ctx, m.gen, m.client, reconnect, m.openingAppends()))
		}
	case tasksMsg:
		add(m.onTasks(msg))
	case taskMsg:
		m.onTask(msg)
	case profilesMsg:
		if msg.err != nil {
			m.setStatus("list profiles: "+errorText(msg.err), true)
		} else {
			m.profiles = msg.profiles
			switch d := m.dialog.(type) {
			case *newTaskDialog:
				d.setProfiles(m.profiles)
			case *handoffDialog:
				d.profiles = m.profiles
			}
		}
	case assigneesMsg:
		if d, ok := m.dialog.(*handoffDialog); ok && d.id == msg.dialog {
			d.loaded(msg)
		}
	case changesMsg:
		add(m.onChanges(msg))
	case diffMsg:
		if d, ok := m.dialog.(interface {
			dialog
			loaded(diffMsg)
		}); ok && d.dialogID() == msg.dialog {
			d.loaded(msg)
		}
	case queueMsg:
		if d, ok := m.dialog.(*queueDialog); ok && d.id == msg.dialog {
			add(m.act(d, d.loaded(msg)))
		}
	case convoLoadMsg:
		if msg.gen == m.detail.gen && m.detail.convo.taskID != "" {
			m.detail.settled = true
			add(m.loadTail(false))
		}
	case convoPageMsg:
		add(m.onConvoPage(msg))
	case opDoneMsg:
		m.onOpDone(msg)
	case execDoneMsg:
		m.onExecDone(msg)
		m.needLayout = true
	case flashEndMsg:
		if m.flash == msg.text {
			m.flash, m.flashTask = "", ""
		}
	case tickMsg:
		m.now = m.opts.Now()
		m.frame++
		add(tickCmd(m.after, m.tickInterval()))
	}
	add(m.sync())
	return m, tea.Batch(cmds...)
}

func (m *Model) tickInterval() time.Duration {
	if m.tasks.counts.running > 0 {
		return min(spinEvery, m.tickEvery)
	}
	return m.tickEvery
}

// sync recomputes what depends on the state that changed.
func (m *Model) sync() tea.Cmd {
	if m.needLayout {
		m.tree.flatten(m.tasks, m.filter)
		m.needLayout = false
	}
	lay := m.layout()
	m.tree.scrollTo(lay.treeH)
	var cmd tea.Cmd
	if m.tree.selected != m.detail.convo.taskID {
		m.detail.switchTo(m.tree.selected)
		m.fetching = ""
		if m.tree.selected != "" {
			cmd = debounceConvo(m.after, m.detail.gen, m.debounce)
		} else {
			cmd = m.followAppends("", nil) // no conversation shown
		}
	}
	if sel := m.tree.selected; sel != "" && m.fetching != sel && m.tasks.isPartial(sel) {
		m.fetching = sel
		cmd = tea.Batch(cmd, loadTaskCmd(m.ctx, m.client, sel))
	}
	cmd = tea.Batch(cmd, m.changesCmd())
	d := &m.detail
	widthChanged := d.convo.width != lay.detailW
	d.convo.render(m.st, lay.detailW, m.opts.Location)
	d.afterRender(widthChanged)
	if pc := m.pageCmds(lay); pc != nil {
		d.convo.render(m.st, lay.detailW, m.opts.Location) // the markers say it loads
		cmd = tea.Batch(cmd, pc)
	}
	return cmd
}

// pageCmds reads more of the conversation when the log shows (or is
// within a screen of) the edge of the window: older entries at the top,
// newer ones at the bottom of a window cut short. A failed read is not
// retried until the operator scrolls that way again.
func (m *Model) pageCmds(lay layout) tea.Cmd {
	d := &m.detail
	c := &d.convo
	if c.taskID == "" || !c.loaded || d.loading || len(c.msgs) == 0 || !(c.older || c.newer) {
		return nil
	}
	lh := m.logHeightIn(lay)
	if lh <= 0 {
		return nil
	}
	s := d.start(lh)
	var cmds []tea.Cmd
	if c.older && !c.olderBusy && c.olderErr == "" && s < lh {
		c.olderBusy = true
		cmds = append(cmds, loadConvoCmd(m.ctx, m.client, d.gen, c.taskID, pageOlder, c.first()))
	}
	if c.newer && !c.newerBusy && c.newerErr == "" && s+2*lh >= len(c.lines) {
		c.startNewer()
		c.newerBusy = true
		cmds = append(cmds, loadConvoCmd(m.ctx, m.client, d.gen, c.taskID, pageNewer, c.last()))
	}
	return tea.Batch(cmds...)
}

// loadTail reads the conversation's newest page. Unless fresh is set, the
// window keeps what it shows until the page arrives; live events merge
// meanwhile either way.
func (m *Model) loadTail(fresh bool) tea.Cmd {
	d := &m.detail
	c := &d.convo
	if fresh {
		c.reset(c.taskID)
	}
	d.gen++
	d.loading, d.err, d.refreshTo = true, "", 0
	c.olderBusy, c.newerBusy, c.olderErr, c.newerErr = false, false, "", ""
	c.newer, c.stash, c.stashLost = false, nil, false
	c.dirty = true
	return m.followAppends(c.taskID, loadConvoCmd(m.ctx, m.client, d.gen, c.taskID, pageTail, 0))
}

// reloadConvo reads the shown conversation again after events were
// missed. Following the newest output, that is the tail; reading further
// back, the window is read again forward from its first entry to its
// last (live events wait in the stash meanwhile), so the operator keeps
// their place.
func (m *Model) reloadConvo() tea.Cmd {
	d := &m.detail
	c := &d.convo
	if !c.loaded || len(c.msgs) == 0 || d.follow {
		return m.loadTail(false)
	}
	d.gen++
	d.loading, d.err, d.refreshTo = true, "", c.last()
	c.olderBusy, c.olderErr, c.newerErr = false, "", ""
	c.newer, c.stash, c.stashLost = true, nil, false
	c.newerBusy, c.dirty = true, true
	return m.followAppends(c.taskID, loadConvoCmd(m.ctx, m.client, d.gen, c.taskID, pageNewer, c.first()-1))
}

// ---- connection and data ----

func (m *Model) onStreamOpen(msg streamOpenMsg) tea.Cmd {
	if msg.gen != m.gen {
		msg.cancel()
		return nil
	}
	if m.cancel != nil {
		m.cancel()
	}
	m.client, m.cancel, m.events = msg.client, msg.cancel, msg.events
	m.onStreamAppends(msg.appends)
	if m.connected && m.conn != connLive {
		m.setStatus("reconnected to the daemon; reloaded", false)
		if m.opts.TakeNotice != nil {
			if n := m.opts.TakeNotice(); n != "" {
				m.setStatus("reconnected to the daemon; reloaded; "+n, false)
			}
		}
	}
	m.conn, m.connErr, m.attempt, m.connected, m.daemonDown = connLive, "", 0, true, false
	return tea.Batch(waitEventsCmd(m.gen, msg.events), m.reload(), loadProfilesCmd(m.ctx, m.client))
}

// reload lists the tasks again (and the shown conversation); task events
// that arrive meanwhile wait in buffered and replay on top.
func (m *Model) reload() tea.Cmd {
	m.loading, m.buffered = true, m.buffered[:0]
	cmds := []tea.Cmd{loadTasksCmd(m.ctx, m.client, m.gen)}
	if m.detail.convo.taskID != "" {
		cmds = append(cmds, m.reloadConvo())
	}
	cmds = append(cmds, m.refreshChanges(m.changes.taskID))
	return tea.Batch(cmds...)
}

// lost: the stream ended or could not start; retry with backoff.
func (m *Model) lost(why string) tea.Cmd {
	if m.cancel != nil {
		m.cancel()
		m.cancel = nil
	}
	m.conn, m.connErr = connLost, why
	m.appends.sub = "" // its subscription went with it
	m.attempt++
	d := m.backoff << min(m.attempt-1, 5)
	m.retryIn = min(d, maxBackoff)
	return reconnectAfter(m.after, m.gen, m.retryIn)
}

// restartDaemon is the operator's R: start the daemon (Options.Reconnect)
// when the UI has lost it. Reconnecting by itself, the UI only attaches
// to a daemon that runs.
func (m *Model) restartDaemon() tea.Cmd {
	if m.conn == connLive {
		m.setStatus("the daemon is running", false)
		return nil
	}
	m.gen++
	m.conn, m.daemonDown = connConnecting, false
	m.setStatus("starting the daemon…", false)
	return connectCmd(m.ctx, m.gen, m.client, m.opts.Reconnect, m.openingAppends())
}

func (m *Model) onEvents(msg eventsMsg) tea.Cmd {
	if msg.gen != m.gen || m.conn != connLive {
		return nil // a stream already given up
	}
	var cmds []tea.Cmd
	for _, ev := range msg.events {
		cmds = append(cmds, m.apply(ev))
	}
	if msg.closed {
		cmds = append(cmds, m.lost("the event stream ended (daemon stopped or restarted)"))
	} else {
		cmds = append(cmds, waitEventsCmd(m.gen, m.events))
	}
	return tea.Batch(cmds...)
}

func (m *Model) apply(ev core.Event) tea.Cmd {
	switch ev.Type {
	case core.EventMessageAdded, core.EventMessageUpdated:
		if ev.Message != nil {
			m.detail.convo.live(*ev.Message, !m.detail.follow)
		}
		return nil
	case core.EventMessageAppended:
		if ev.Append != nil {
			if seq := m.detail.convo.appendText(*ev.Append); seq != 0 {
				d := &m.detail
				return loadConvoCmd(m.ctx, m.client, d.gen, d.convo.taskID, pageEntry, seq)
			}
		}
		return nil
	case core.EventSubscribed:
		return m.onSubscribed(ev.Subscription)
	case core.EventProfileChanged:
		return loadProfilesCmd(m.ctx, m.client)
	case core.EventNeedsYou:
		// The daemon marks the moment a task starts needing you (the
		// task.updated before it brought the change): ring and flash.
		if ev.Task != nil && !m.loading {
			return m.notifyYou(ev.Task)
		}
		return nil
	case core.EventResync:
		if m.loading {
			// The listing in flight may predate what was missed.
			m.reloadAgain = true
			return nil
		}
		return m.reload()
	}
	if m.loading {
		m.buffered = append(m.buffered, ev)
		return nil
	}
	return m.applyTask(ev)
}

// applyTask applies a task, session or question change to the store, and
// tells the operator when it made a task theirs.
func (m *Model) applyTask(ev core.Event) tea.Cmd {
	id := ev.TaskID
	if ev.Task != nil {
		id = ev.Task.ID
	} else if ev.Session != nil {
		id = ev.Session.TaskID
	}
	var before *core.Task
	if t := m.tasks.get(id); t != nil {
		cp := *t
		before = &cp
	}
	shape := false
	switch ev.Type {
	case core.EventTaskCreated, core.EventTaskUpdated:
		if ev.Task != nil {
			shape = m.tasks.upsert(*ev.Task)
		}
	case core.EventSessionUpdated:
		if s := ev.Session; s != nil {
			m.tasks.update(s.TaskID, func(t *core.Task) {
				if t.Session == nil || t.Session.ID == s.ID || !s.CreatedAt.Before(t.Session.CreatedAt) {
					cp := *s
					t.Session = &cp
				}
			})
		}
	case core.EventQuestionUpdated:
		if q := ev.Question; q != nil {
			m.tasks.update(ev.TaskID, func(t *core.Task) {
				switch {
				case q.Status == core.QuestionPending:
					cp := *q
					t.PendingQuestion = &cp
				case t.PendingQuestion != nil && t.PendingQuestion.ID == q.ID:
					t.PendingQuestion = nil
				}
			})
		}
	}
	// Under a filter any change may move a task in or out of view.
	if shape || m.filter.active() {
		m.needLayout = true
	}
	after := m.tasks.get(id)
	var refresh tea.Cmd
	// What a task changed moves when its turn ends or the task changes
	// (a merge, a discard); not with every output of a running turn.
	if ev.Type == core.EventTaskUpdated || (before != nil && after != nil && isRunning(before) && !isRunning(after)) {
		refresh = m.refreshChanges(id)
	}
	if id == m.flashTask && !yours(after) {
		m.flash, m.flashTask = "", "" // dealt with already
	}
	return refresh
}

// changeState is the selected task's change summary (its diff's stat).
// It is read for the selected task alone, once the selection rests on it,
// and again when the task's turn ends or the task changes.
type changeState struct {
	taskID string
	diff   *api.TaskDiff
	err    string
	busy   bool
	again  bool // the task changed while the read was in flight
}

// hasWorktree: the task owns a worktree, so it has changes to summarize.
func hasWorktree(t *core.Task) bool {
	return t != nil && t.Workspace != nil && t.Workspace.Mode == core.WorkspaceWorktree
}

// changesCmd starts reading the selected task's change summary when it
// has none yet.
func (m *Model) changesCmd() tea.Cmd {
	t := m.selectedTask()
	if t == nil || !m.detail.settled || m.changes.taskID == t.ID || m.tasks.isPartial(t.ID) || !hasWorktree(t) {
		return nil
	}
	m.changes = changeState{taskID: t.ID, busy: true}
	return loadChangesCmd(m.ctx, m.client, t.ID)
}

// refreshChanges reads the summary again if it is the shown task's.
func (m *Model) refreshChanges(id string) tea.Cmd {
	c := &m.changes
	switch {
	case id == "" || id != c.taskID:
		return nil
	case c.busy:
		c.again = true
		return nil
	}
	c.busy = true
	return loadChangesCmd(m.ctx, m.client, id)
}

func (m *Model) onChanges(msg changesMsg) tea.Cmd {
	c := &m.changes
	if msg.taskID != c.taskID {
		return nil
	}
	c.busy = false
	if msg.err != nil {
		c.diff, c.err = nil, errorText(msg.err)
	} else {
		d := msg.diff
		c.diff, c.err = &d, ""
	}
	if c.again {
		c.again = false
		return m.refreshChanges(msg.taskID)
	}
	return nil
}

func (m *Model) onTasks(msg tasksMsg) tea.Cmd {
	if msg.gen != m.gen {
		return nil
	}
	if msg.err != nil {
		m.loading = false
		return m.lost("list tasks: " + errorText(msg.err))
	}
	m.tasks.reset(msg.tasks, msg.partial)
	m.fetching = ""
	if msg.rest != nil {
		// The first rows only: draw them; events wait for the whole
		// listing, which they may postdate.
		m.needLayout = true
		return msg.rest
	}
	for _, ev := range m.buffered {
		m.applyTask(ev)
	}
	m.buffered, m.loading = m.buffered[:0], false
	m.needLayout = true
	if m.reloadAgain {
		m.reloadAgain = false
		return m.reload()
	}
	return nil
}

// onTask fills in the summary of the task the detail pane shows. An event
// may have brought the whole task first; then the store has it already.
// A failed load is not retried until the selection moves.
func (m *Model) onTask(msg taskMsg) {
	if msg.err != nil || msg.task.ID != m.fetching {
		return
	}
	m.fetching = ""
	if m.tasks.isPartial(msg.task.ID) {
		if m.tasks.upsert(msg.task) {
			m.needLayout = true
		}
	}
}

func (m *Model) onConvoPage(msg convoPageMsg) tea.Cmd {
	d := &m.detail
	c := &d.convo
	if msg.gen != d.gen || msg.taskID != c.taskID {
		return nil
	}
	switch msg.kind {
	case pageTail:
		d.loading = false
		if msg.err != nil {
			d.err = errorText(msg.err)
			return nil
		}
		c.addTail(msg.page)
	case pageOlder:
		c.olderBusy = false
		if msg.err != nil {
			c.olderErr = errorText(msg.err)
			return nil
		}
		c.addOlder(msg.cursor, msg.page, !d.follow)
	case pageEntry:
		if msg.err != nil {
			delete(c.fetching, msg.cursor)
			return nil
		}
		c.fetched(msg.cursor, msg.page, !d.follow)
	case pageNewer:
		c.newerBusy = false
		refresh := d.refreshTo != 0
		if msg.err != nil {
			c.newerErr = errorText(msg.err)
			d.refreshTo, d.loading = 0, false
			return nil
		}
		// A reload keeps the part being read; scrolling down gives up the
		// oldest end instead.
		joined := c.addNewer(msg.cursor, msg.page, refresh && !d.follow)
		if !refresh {
			return nil
		}
		if p := msg.page; joined && c.newer && p.More && p.Next < d.refreshTo && c.last() >= p.Next {
			c.startNewer()
			c.newerBusy = true
			return loadConvoCmd(m.ctx, m.client, d.gen, c.taskID, pageNewer, p.Next)
		}
		d.refreshTo, d.loading = 0, false
	}
	return nil
}

func (m *Model) onOpDone(msg opDoneMsg) {
	d := m.dialog
	mine := d != nil && msg.dialog != 0 && d.dialogID() == msg.dialog
	if msg.err != nil {
		if mine {
			d.failed(msg.err)
			return
		}
		what := msg.op.String()
		if msg.taskID != "" {
			what += " " + msg.taskID
		}
		m.setStatus(what+" refused: "+errorText(msg.err), true)
		return
	}
	if mine {
		// A dialog may have a next step to offer (finishing a merged
		// task); it stays open for it.
		if s, ok := d.(interface{ succeeded(opDoneMsg) bool }); !ok || !s.succeeded(msg) {
			m.dialog = nil
		}
	}
	m.setStatus(msg.text, false)
	switch {
	case msg.op == opAnswer && msg.question != "":
		if m.answered == nil {
			m.answered = map[string]bool{}
		}
		m.answered[msg.question] = true
		// More questions from subtasks waiting on the selected parent:
		// say that a opens the next (ADR 0069).
		if t := m.selectedTask(); t != nil && t.Assignee != nil && t.Assignee.IsOperator() {
			if n := len(m.childQuestions(t)); n > 0 {
				m.setStatus(fmt.Sprintf("%s · %d more from subtasks: a opens the next", msg.text, n), false)
			}
		}
	case msg.op == opCreate && msg.task != nil:
		t := *msg.task
		if m.tasks.get(t.ID) == nil {
			m.tasks.upsert(t)
		}
		delete(m.tree.collapsed, t.ParentID)
		m.tree.selected = t.ID
		m.needLayout = true
	case msg.op == opArchive && msg.task != nil && msg.task.Archived:
		m.tasks.upsert(*msg.task)
		m.needLayout = true
	}
}

func (m *Model) setStatus(s string, isErr bool) {
	m.status, m.statusErr = s, isErr
}

func (m *Model) selectedTask() *core.Task { return m.tasks.get(m.tree.selected) }

func (m *Model) openDialog(d dialog) { m.dialog = d }

func (m *Model) nextDialogID() int {
	m.dialogSeq++
	return m.dialogSeq
}
