package tui

import (
	"sync"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
)

// The event stream carries the streamed output (message.appended) of the
// conversation shown alone: with fifty agents streaming, appends are
// nearly all the daemon's events, and every other task's were decoded
// here only to be dropped (issue 26). The stream opens following the
// shown task's appends, or none; each time the detail pane loads another
// conversation, the filter moves to it before the page is read
// (FollowAppends, then Conversation, in one command): an append is
// published after its write, so the page holds every append the filter
// did not let through, and core.MessageAppend.Apply drops those it holds
// twice.

// appendsFollow is where the stream's appends filter stands.
type appendsFollow struct {
	// sub names the stream's subscription (its subscribed event); ""
	// until then, or from a daemon that has no filter (it sends every
	// append, and the convo drops the others' as before).
	sub string
	// task is the filter last asked for (at the stream's opening, or by
	// the newest FollowAppends): a task's id, "" none. known is false
	// after a FollowAppends failed: the next load asks again.
	task  string
	known bool
	// inflight counts the FollowAppends on their way: until they are
	// back, the filter the daemon holds is not yet task.
	inflight int
	// seq numbers the requests; order keeps the newest one the daemon's.
	seq   int
	order *appendsOrder
}

// appendsOrder serialises the FollowAppends of a model's commands, which
// run concurrently: a request older than one already made is not sent,
// so the filter the daemon ends with is the newest asked for.
type appendsOrder struct {
	mu   sync.Mutex
	done int
}

// appendsMsg: a FollowAppends came back; then is the message of the
// command chained after it (the conversation's page), handled next.
type appendsMsg struct {
	gen  int // the stream's (Model.gen)
	err  error
	then tea.Msg
}

// openingAppends is the filter a new stream opens with.
func (m *Model) openingAppends() string {
	if id := m.detail.convo.taskID; id != "" {
		return id
	}
	return api.AppendsNone
}

// followAppends moves the stream's appends filter to taskID ("" none)
// unless it is there, then runs then (nil: nothing), in one command.
func (m *Model) followAppends(taskID string, then tea.Cmd) tea.Cmd {
	a := &m.appends
	if a.sub == "" || (a.known && a.task == taskID && a.inflight == 0) {
		return then
	}
	a.seq++
	a.task, a.known = taskID, true
	a.inflight++
	ctx, c, gen, sub, seq, order := m.ctx, m.client, m.gen, a.sub, a.seq, a.order
	return func() tea.Msg {
		var err error
		order.mu.Lock()
		if seq > order.done {
			err = c.FollowAppends(ctx, sub, taskID)
			order.done = seq
		}
		order.mu.Unlock()
		msg := appendsMsg{gen: gen, err: err}
		if then != nil {
			msg.then = then()
		}
		return msg
	}
}

// onAppends notes a FollowAppends come back. Not found: its stream has
// ended, and the next one opens with the filter it needs.
func (m *Model) onAppends(msg appendsMsg) {
	if msg.gen != m.gen {
		return
	}
	m.appends.inflight--
	if msg.err != nil && core.AsError(msg.err).Code != core.CodeNotFound {
		m.appends.known = false
		m.setStatus("follow the conversation's output: "+errorText(msg.err), true)
	}
}

// onStreamAppends: a new stream opened with the filter opening (its
// subscription named by the subscribed event to come).
func (m *Model) onStreamAppends(opening string) {
	if opening == api.AppendsNone {
		opening = ""
	}
	m.appends.sub, m.appends.task, m.appends.known, m.appends.inflight = "", opening, true, 0
}

// onSubscribed: the stream names its subscription. If the conversation
// shown changed since the stream was asked for, the filter moves to it
// and the conversation is read again after.
func (m *Model) onSubscribed(sub string) tea.Cmd {
	m.appends.sub = sub
	want := m.detail.convo.taskID
	switch {
	case want == m.appends.task:
		return nil
	case want == "":
		return m.followAppends("", nil)
	}
	return m.reloadConvo()
}
