package tui

import (
	"strings"

	"github.com/charmbracelet/bubbles/cursor"
	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textarea"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
)

// dialog is a modal box over the screen: new task, answer, message,
// hand on, status, confirmations, the queue and help, one file each
// (dialog_*.go). A dialog owns only its own state: it reads the screen
// through a dialogUI and answers a key with an action, which the model
// carries out (model.act). No dialog calls the client or touches the
// model, so each can be tested on its own (ADR 0033).
type dialog interface {
	// update handles a key. The tea.Cmd is the dialog's own (a text
	// input's cursor); the action is what the model must do.
	update(ui dialogUI, msg tea.KeyMsg) (action, tea.Cmd)
	// view renders the box's content for w cells.
	view(ui dialogUI, w int) string
	// help is the dialog's help bar.
	help(k keyMap) []key.Binding
	// dialogID tells an action's outcome which dialog asked for it.
	dialogID() int
	// failed shows the engine's refusal inside the dialog.
	failed(err error)
}

// dialogUI is what a dialog may read of the screen: the styles, the
// keys, the dialog's width and the screen's height.
type dialogUI struct {
	st     styles
	keys   keyMap
	width  int // Model.dialogWidth
	height int // the screen's rows
	body   int // the rows between the top and the status bar
}

func (m *Model) dialogUI() dialogUI {
	return dialogUI{st: m.st, keys: m.keys, width: m.dialogWidth(), height: m.h, body: m.layout().bodyH}
}

// action is what a dialog asks of the model. nil asks nothing.
type action interface{ isAction() }

type (
	// closeDialog closes the dialog.
	closeDialog struct{}
	// createTask creates a task (the input is complete).
	createTask struct{ in api.CreateTaskInput }
	// answerTask answers a task's pending question.
	answerTask struct {
		taskID string
		in     api.AnswerInput
	}
	// pushTask pushes a task's branch (and with pr opens a pull request).
	pushTask struct {
		taskID string
		pr     bool
	}
	// reviewTask sends a task comments on its diff as one review.
	reviewTask struct {
		taskID string
		in     api.MessageInput
	}
	// messageTask sends a task a message.
	messageTask struct {
		taskID string
		in     api.MessageInput
	}
	// setBudget fixes or raises a task's budget (api.Spender).
	setBudget struct {
		taskID string
		in     api.BudgetInput
	}
	// stopTask stops a task's run.
	stopTask struct{ taskID string }
	// archiveTask archives a task.
	archiveTask struct{ taskID string }
	// setTaskStatus moves a task from one status to another.
	setTaskStatus struct {
		taskID   string
		from, to core.Status
	}
	// handOnTask hands a task to someone else.
	handOnTask struct {
		taskID string
		in     api.HandoffInput
	}
	// dropQueued drops one item, or all, of a task's queue.
	dropQueued struct {
		taskID string
		in     api.DropQueueInput
	}
	// showStatus puts text in the status bar.
	showStatus struct{ text string }
	// openFinish opens the merge (op opMerge) or discard (opDiscard)
	// confirmation of a task. diff is its changes when already read;
	// back is the dialog to return to on cancel (the diff view).
	openFinish struct {
		op     opKind
		taskID string
		diff   *api.TaskDiff
		back   dialog
	}
	// backTo closes the dialog and shows d again.
	backTo struct{ d dialog }
	// mergeTask merges a task's branch into the main checkout's branch.
	mergeTask struct {
		taskID string
		in     api.MergeInput
	}
	// discardTask deletes a task's worktree and branch.
	discardTask struct{ taskID string }
	// endTask moves a merged or discarded task to its end: the status
	// to (unless it is there already), then the archive when asked.
	endTask struct {
		taskID   string
		from, to core.Status
		archive  bool
	}
)

func (closeDialog) isAction()   {}
func (createTask) isAction()    {}
func (answerTask) isAction()    {}
func (messageTask) isAction()   {}
func (reviewTask) isAction()    {}
func (pushTask) isAction()      {}
func (setBudget) isAction()     {}
func (stopTask) isAction()      {}
func (archiveTask) isAction()   {}
func (setTaskStatus) isAction() {}
func (handOnTask) isAction()    {}
func (dropQueued) isAction()    {}
func (showStatus) isAction()    {}
func (openFinish) isAction()    {}
func (backTo) isAction()        {}
func (mergeTask) isAction()     {}
func (discardTask) isAction()   {}
func (endTask) isAction()       {}

// act carries out what dialog d asked: every request to the daemon runs
// in a tea.Cmd whose outcome names d, so a refusal lands in d.
func (m *Model) act(d dialog, a action) tea.Cmd {
	if a == nil || d == nil {
		return nil
	}
	id := d.dialogID()
	switch a := a.(type) {
	case closeDialog:
		if m.dialog == d {
			m.dialog = nil
		}
	case showStatus:
		m.setStatus(a.text, false)
	case createTask:
		return createCmd(m.ctx, m.client, id, a.in)
	case answerTask:
		return answerCmd(m.ctx, m.client, id, a.taskID, a.in)
	case messageTask:
		return messageCmd(m.ctx, m.client, id, a.taskID, a.in)
	case pushTask:
		m.setStatus("", false)
		if a.pr {
			return prCmd(m.ctx, m.client, id, a.taskID)
		}
		return pushCmd(m.ctx, m.client, id, a.taskID)
	case reviewTask:
		return reviewCmd(m.ctx, m.client, id, a.taskID, a.in)
	case setBudget:
		return budgetCmd(m.ctx, m.client, id, a.taskID, a.in)
	case stopTask:
		m.setStatus("", false)
		return stopCmd(m.ctx, m.client, id, a.taskID)
	case archiveTask:
		m.setStatus("", false)
		return archiveCmd(m.ctx, m.client, id, a.taskID)
	case setTaskStatus:
		m.setStatus("", false)
		return statusCmd(m.ctx, m.client, id, a.taskID, a.from, a.to)
	case handOnTask:
		m.setStatus("", false)
		return handoffCmd(m.ctx, m.client, id, a.taskID, a.in)
	case dropQueued:
		return dropQueuedCmd(m.ctx, m.client, id, a.taskID, a.in)
	case openFinish:
		return m.openFinish(a)
	case backTo:
		if m.dialog == d {
			m.dialog = a.d
		}
	case mergeTask:
		m.setStatus("", false)
		return mergeCmd(m.ctx, m.client, id, a.taskID, a.in)
	case discardTask:
		m.setStatus("", false)
		return discardCmd(m.ctx, m.client, id, a.taskID)
	case endTask:
		return finishCmd(m.ctx, m.client, id, a)
	}
	return nil
}

// openFinish opens a merge or discard confirmation; it reads the task's
// change stat unless the diff view already has it.
func (m *Model) openFinish(a openFinish) tea.Cmd {
	t := m.tasks.get(a.taskID)
	if t == nil {
		m.setStatus("task "+a.taskID+" is no longer in the tree", true)
		return nil
	}
	m.setStatus("", false)
	fd := newFinishDialog(m.dialogUI(), m.nextDialogID(), a.op, t, a.diff, a.back)
	m.openDialog(fd)
	if a.diff != nil {
		return nil
	}
	return loadStatCmd(m.ctx, m.client, fd.id, t.ID)
}

// base holds what every dialog has: an id, a busy flag while its request
// is in flight, and the last refusal.
type base struct {
	id   int
	busy bool
	err  string
}

func (b *base) dialogID() int { return b.id }
func (b *base) failed(err error) {
	b.busy = false
	b.err = errorText(err)
}

// errorText is an engine refusal as the operator reads it: its message,
// and its code when the message alone is ambiguous.
func errorText(err error) string {
	if err == nil {
		return ""
	}
	e := core.AsError(err)
	msg := oneLine(e.Message)
	switch e.Code {
	case core.CodeUnavailable, core.CodeInternal:
		return string(e.Code) + ": " + msg
	}
	return msg
}

func (b *base) footer(st styles, w int) string {
	switch {
	case b.busy:
		return st.dim.Render("working…")
	case b.err != "":
		return wrapStyled(st.errText.Render("✗ refused: ")+b.err, w)
	}
	return ""
}

// wrapStyled wraps a line that may carry styling in its first words.
func wrapStyled(s string, w int) string {
	return strings.Join(wrap(s, w), "\n")
}

func newInput(st styles, placeholder string, w int) textinput.Model {
	ti := textinput.New()
	ti.Prompt = ""
	ti.Placeholder = placeholder
	ti.Width = w
	ti.Cursor.SetMode(cursor.CursorStatic)
	ti.Cursor.Style = st.cursor
	ti.PlaceholderStyle = st.dim
	return ti
}

// messageRows is the most lines a message box shows at once.
const messageRows = 5

// newTextArea is a multi-line input in the UI's styles (the cursor in
// reverse video, nothing else styled). Enter is left to the dialog; the
// newline binding breaks lines.
func newTextArea(st styles, placeholder string, newline key.Binding) textarea.Model {
	ta := textarea.New()
	ta.Prompt = ""
	ta.ShowLineNumbers = false
	ta.Placeholder = placeholder
	ta.CharLimit, ta.MaxHeight, ta.MaxWidth = 0, 0, 0
	plain := st.r.NewStyle()
	style := textarea.Style{Base: plain, CursorLine: plain, CursorLineNumber: plain, EndOfBuffer: plain,
		LineNumber: plain, Placeholder: st.dim, Prompt: plain, Text: plain}
	ta.FocusedStyle, ta.BlurredStyle = style, style
	ta.Cursor.SetMode(cursor.CursorStatic)
	ta.Cursor.Style = st.cursor
	ta.KeyMap.InsertNewline = newline
	return ta
}

// checkbox renders a toggle that reads without color.
func checkbox(on bool) string {
	if on {
		return "[x]"
	}
	return "[ ]"
}
