package tui

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/kandev/kandev/core"
)

// The operator's keys on the main screen; dialogs handle their own.

func (m *Model) onKey(msg tea.KeyMsg) tea.Cmd {
	if isCtrlC(msg) {
		return m.quit()
	}
	if d := m.dialog; d != nil {
		a, cmd := d.update(m.dialogUI(), msg)
		return tea.Batch(cmd, m.act(d, a))
	}
	if m.zoom {
		if cmd, done := m.onZoomKey(msg); done {
			return cmd
		}
	}
	if m.typing {
		return m.onFilterKey(msg)
	}
	k := m.keys
	switch {
	case key.Matches(msg, k.Quit):
		return m.quit()
	case key.Matches(msg, k.Help):
		m.openDialog(&helpDialog{base: base{id: m.nextDialogID()}})
	case key.Matches(msg, k.Focus):
		m.focusLog = !m.focusLog
	case key.Matches(msg, k.Cancel):
		switch {
		case m.status != "":
			m.setStatus("", false)
		case m.filter.active():
			m.filter = filter{}
			m.filterInput.SetValue("")
			m.needLayout = true
		case m.focusLog:
			m.focusLog = false
		}
	case key.Matches(msg, k.New):
		m.setStatus("", false)
		m.openDialog(newNewTaskDialog(m.dialogUI(), m.nextDialogID(), m.selectedTask(), m.profiles, m.opts.CWD))
	case key.Matches(msg, k.Answer):
		m.answer()
	case key.Matches(msg, k.Message):
		if t := m.needTask("message"); t != nil {
			m.setStatus("", false)
			m.openDialog(newMessageDialog(m.dialogUI(), m.nextDialogID(), t))
		}
	case key.Matches(msg, k.HandOn):
		if t := m.needTask("hand on"); t != nil {
			m.setStatus("", false)
			d := newHandoffDialog(m.dialogUI(), m.nextDialogID(), t, m.profiles)
			m.openDialog(d)
			return loadAssigneesCmd(m.ctx, m.client, d.id)
		}
	case key.Matches(msg, k.Done):
		if t := m.needTask("mark done"); t != nil {
			m.setStatus("", false)
			m.openDialog(newStatusDialog(m.nextDialogID(), t))
		}
	case key.Matches(msg, k.Stop):
		if t := m.needTask("stop"); t != nil {
			m.setStatus("", false)
			body := []string{oneLine(t.Title), "", "The agent's run is cancelled and the task goes to review. Its worktree and queued messages are kept; r resumes it."}
			if !isRunning(t) && (t.Session == nil || !t.Session.State.Live()) {
				body = append(body, "", "(It does not look like it is running; the engine will say.)")
			}
			m.openDialog(&confirmDialog{base: base{id: m.nextDialogID()}, op: opStop, taskID: t.ID, title: "Stop task " + t.ID + "?", body: body})
		}
	case key.Matches(msg, k.Archive):
		if t := m.needTask("archive"); t != nil {
			m.setStatus("", false)
			body := []string{oneLine(t.Title), "", "It leaves the tree; kandev task list --all still shows it."}
			m.openDialog(&confirmDialog{base: base{id: m.nextDialogID()}, op: opArchive, taskID: t.ID, title: "Archive task " + t.ID + "?", body: body})
		}
	case key.Matches(msg, k.Queue):
		if t := m.needTask("see the queue of"); t != nil {
			m.setStatus("", false)
			d := &queueDialog{base: base{id: m.nextDialogID(), busy: true}, taskID: t.ID, title: oneLine(t.Title)}
			m.openDialog(d)
			return loadQueueCmd(m.ctx, m.client, d.id, t.ID)
		}
	case key.Matches(msg, k.Budget):
		if t := m.needTask("raise the budget of"); t != nil {
			target, why := budgetTarget(t)
			if target == "" {
				m.setStatus(why, true)
				return nil
			}
			m.setStatus("", false)
			m.openDialog(newBudgetDialog(m.dialogUI(), m.nextDialogID(), t, target))
		}
	case key.Matches(msg, k.Diff):
		if t := m.needTask("see the diff of"); t != nil {
			m.setStatus("", false)
			d := newDiffView(m.nextDialogID(), t)
			m.openDialog(d)
			return loadDiffCmd(m.ctx, m.client, d.id, t.ID)
		}
	case key.Matches(msg, k.Merge):
		if t := m.needTask("merge"); t != nil {
			return m.openFinish(openFinish{op: opMerge, taskID: t.ID})
		}
	case key.Matches(msg, k.Discard):
		if t := m.needTask("discard the worktree of"); t != nil {
			return m.openFinish(openFinish{op: opDiscard, taskID: t.ID})
		}
	case key.Matches(msg, k.Push):
		if t := m.needTask("push the branch of"); t != nil {
			m.setStatus("", false)
			body := []string{oneLine(t.Title), "", "Its branch goes to the repository's remote origin (kandev task push --remote picks another). Uncommitted work in its worktree is committed on the branch first."}
			if w := t.Workspace; w != nil && w.Branch != "" {
				body[0] += " · " + w.Branch
			}
			m.openDialog(&confirmDialog{base: base{id: m.nextDialogID()}, op: opPush, taskID: t.ID, title: "Push task " + t.ID + "'s branch?", body: body})
		}
	case key.Matches(msg, k.PR):
		if t := m.needTask("open a pull request for"); t != nil {
			m.setStatus("", false)
			body := []string{oneLine(t.Title), "", "Its branch is pushed to origin (uncommitted work committed first), then gh opens a pull request for it, titled by the task; its URL is kept on the task. gh must be installed and logged in."}
			if w := t.Workspace; w != nil && w.Branch != "" {
				body[0] += " · " + w.Branch
			}
			m.openDialog(&confirmDialog{base: base{id: m.nextDialogID()}, op: opPR, taskID: t.ID, title: "Open a pull request for task " + t.ID + "?", body: body})
		}
	case key.Matches(msg, k.Start):
		if t := m.needTask("start"); t != nil {
			m.setStatus("starting task "+t.ID+"…", false)
			return startCmd(m.ctx, m.client, t.ID)
		}
	case key.Matches(msg, k.Shell):
		return m.stepIn(execShell)
	case key.Matches(msg, k.Editor):
		return m.stepIn(execEditor)
	case key.Matches(msg, k.Zoom):
		m.zoomIn()
	case key.Matches(msg, k.Restart):
		return m.restartDaemon()
	case key.Matches(msg, k.NextWaiting):
		m.nextWaiting()
	case key.Matches(msg, k.Filter):
		m.typing = true
		m.filterInput.SetValue(m.filter.text)
		m.filterInput.CursorEnd()
		return m.filterInput.Focus()
	case key.Matches(msg, k.State):
		m.filter.state = (m.filter.state + 1) % numStateFilters
		m.needLayout = true
	default:
		if m.focusLog {
			return m.onLogKey(msg)
		}
		m.onTreeKey(msg)
	}
	return nil
}

func (m *Model) quit() tea.Cmd {
	if m.cancel != nil {
		m.cancel()
		m.cancel = nil
	}
	return tea.Quit
}

// needTask returns the selected task, or says why there is none.
func (m *Model) needTask(what string) *core.Task {
	t := m.selectedTask()
	if t == nil {
		m.setStatus("select a task to "+what, true)
	}
	return t
}

func (m *Model) answer() {
	t := m.needTask("answer")
	if t == nil {
		return
	}
	q := t.PendingQuestion
	pending := q != nil && q.Status == core.QuestionPending && !m.answered[q.ID]
	switch {
	case !pending && t.Assignee != nil && t.Assignee.IsOperator() && len(m.childQuestions(t)) > 0:
		// The parent is with you: its subtasks' questions are yours, the
		// one its escalation names first, then the next (ADR 0069).
		cq := m.childQuestions(t)[0]
		m.setStatus("", false)
		m.openDialog(newHolderDialog(m.dialogUI(), m.nextDialogID(), t, m.tasks.get(cq.TaskID), cq.Question))
	case !pending:
		m.setStatus(fmt.Sprintf("task %s has no pending question (w jumps to the next task waiting on you)", t.ID), true)
	case q.Kind == core.QuestionParent && m.holdsParent(q):
		m.setStatus("", false)
		m.openDialog(newHolderDialog(m.dialogUI(), m.nextDialogID(), m.tasks.get(q.ParentTaskID), t, *q))
	case q.Kind == core.QuestionParent:
		m.setStatus(fmt.Sprintf("question %s is for task %s, the parent of %s: only it answers, or you once it is with you. m sends new input instead, which supersedes the question", q.ID, q.ParentTaskID, t.ID), true)
	default:
		m.setStatus("", false)
		m.openDialog(newAnswerDialog(m.dialogUI(), m.nextDialogID(), t))
	}
}

// holdsParent: the parent a parent question q was asked of is with you,
// so you answer it in its place (ADR 0069).
func (m *Model) holdsParent(q *core.QuestionInfo) bool {
	p := m.tasks.get(q.ParentTaskID)
	return p != nil && p.Assignee != nil && p.Assignee.IsOperator()
}

// childQuestions are the questions t's subtasks asked it that wait on the
// person t is with (you, when it is yours), in the order they are answered
// (core.ChildQuestionsOf: the one its escalation names first), less those
// answered here already; nil for a task no person holds, whose agent
// answers them.
func (m *Model) childQuestions(t *core.Task) []core.ChildQuestion {
	if !t.WithPerson() || t.Archived || t.Status.Terminal() {
		return nil
	}
	var kids []*core.Task
	for _, id := range m.tasks.kids[t.ID] {
		if c := m.tasks.get(id); c != nil && c.PendingQuestion != nil && !m.answered[c.PendingQuestion.ID] {
			kids = append(kids, c)
		}
	}
	return core.ChildQuestionsOf(t, kids)
}

func (m *Model) onFilterKey(msg tea.KeyMsg) tea.Cmd {
	switch msg.Type {
	case tea.KeyEsc:
		m.typing = false
		m.filterInput.Blur()
		m.filter.text = ""
		m.filterInput.SetValue("")
		m.needLayout = true
		return nil
	case tea.KeyEnter:
		m.typing = false
		m.filterInput.Blur()
		return nil
	}
	var cmd tea.Cmd
	m.filterInput, cmd = m.filterInput.Update(msg)
	if v := strings.ToLower(strings.TrimSpace(m.filterInput.Value())); v != m.filter.text {
		m.filter.text = v
		m.needLayout = true
	}
	return cmd
}

func (m *Model) onTreeKey(msg tea.KeyMsg) {
	k := m.keys
	tp := &m.tree
	page := max(1, tp.window(m.layout().treeH)-1)
	switch {
	case key.Matches(msg, k.Up):
		tp.move(tp.cursor - 1)
	case key.Matches(msg, k.Down):
		tp.move(tp.cursor + 1)
	case key.Matches(msg, k.PageUp):
		tp.move(tp.cursor - page)
	case key.Matches(msg, k.PageDown):
		tp.move(tp.cursor + page)
	case key.Matches(msg, k.Top):
		tp.move(0)
	case key.Matches(msg, k.Bottom):
		tp.move(len(tp.rows) - 1)
	case key.Matches(msg, k.Collapse):
		if len(tp.rows) == 0 {
			return
		}
		r := tp.rows[tp.cursor]
		if r.kids > 0 && !r.folded {
			tp.collapsed[r.id] = true
			m.needLayout = true
		} else if t := m.tasks.get(r.id); t != nil && !m.tasks.isRoot(t) {
			tp.selected = t.ParentID
			m.needLayout = true
		}
	case key.Matches(msg, k.Expand):
		if len(tp.rows) == 0 {
			return
		}
		r := tp.rows[tp.cursor]
		if r.folded {
			delete(tp.collapsed, r.id)
			m.needLayout = true
		} else if r.kids > 0 {
			tp.move(tp.cursor + 1)
		}
	}
}

// onLogKey scrolls the log. Scrolling towards an edge whose read failed
// tries it again; G on a window cut short of the newest entries reads the
// tail afresh.
func (m *Model) onLogKey(msg tea.KeyMsg) tea.Cmd {
	k := m.keys
	h := m.logHeight()
	d := &m.detail
	switch {
	case key.Matches(msg, k.Up):
		d.convo.olderErr = ""
		d.scroll(-1, h)
	case key.Matches(msg, k.Down):
		d.convo.newerErr = ""
		d.scroll(1, h)
	case key.Matches(msg, k.PageUp):
		d.convo.olderErr = ""
		d.scroll(-max(1, h-1), h)
	case key.Matches(msg, k.PageDown):
		d.convo.newerErr = ""
		d.scroll(max(1, h-1), h)
	case key.Matches(msg, k.Top):
		d.convo.olderErr = ""
		d.setStart(0, h)
	case key.Matches(msg, k.Bottom):
		d.toBottom()
		if d.convo.newer && d.convo.taskID != "" {
			return m.loadTail(true)
		}
	}
	return nil
}

// nextWaiting selects the next task that waits on the operator, most
// urgent first (core.Task.NeedsYou: a permission or a question an agent
// sits in, then questions, stalls and escalations, then work handed
// back), in tree order within an urgency, wrapping; from a task that
// waits on nobody it goes to the most urgent. It unfolds and unfilters as
// needed to show the task.
func (m *Model) nextWaiting() {
	if m.tasks.counts.yours == 0 {
		m.setStatus("no task is waiting on you", false)
		return
	}
	type waiting struct {
		id string
		u  core.Urgency
	}
	var ranked []waiting
	for _, id := range m.treeOrder() {
		if t := m.tasks.get(id); t != nil {
			if u := t.NeedsYou().Urgency; u != core.UrgencyNone {
				ranked = append(ranked, waiting{id, u})
			}
		}
	}
	slices.SortStableFunc(ranked, func(a, b waiting) int { return cmp.Compare(b.u, a.u) })
	next := 0
	for i, w := range ranked {
		if w.id == m.tree.selected {
			next = (i + 1) % len(ranked)
			break
		}
	}
	if len(ranked) > 0 {
		id := ranked[next].id
		t := m.tasks.get(id)
		for p := t.ParentID; p != ""; {
			delete(m.tree.collapsed, p)
			pt := m.tasks.get(p)
			if pt == nil {
				break
			}
			p = pt.ParentID
		}
		if m.filter.active() && !m.filter.match(t) {
			m.filter = filter{}
			m.filterInput.SetValue("")
			m.setStatus("filter cleared to show task "+id, false)
		}
		m.tree.selected = id
		m.focusLog = false
		m.needLayout = true
		return
	}
}

// treeOrder is every task in tree order, ignoring folds and the filter.
func (m *Model) treeOrder() []string {
	s := m.tasks
	out := make([]string, 0, s.len())
	var visit func(id string)
	visit = func(id string) {
		out = append(out, id)
		for _, k := range s.kids[id] {
			if s.byID[k] != nil {
				visit(k)
			}
		}
	}
	for _, id := range s.order {
		if e := s.byID[id]; e != nil && s.isRoot(e.t) {
			visit(id)
		}
	}
	return out
}
