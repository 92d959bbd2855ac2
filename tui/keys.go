package tui

import (
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
)

// keyMap is every key the UI answers to, in one place. Dialogs use the
// dialog group; the rest act on the tree and the selected task.
type keyMap struct {
	Up, Down, PageUp, PageDown, Top, Bottom key.Binding
	Collapse, Expand, Focus                 key.Binding
	NextWaiting                             key.Binding

	New, Answer, Message, HandOn, Done   key.Binding
	Stop, Start, Archive, Queue, Diff    key.Binding
	Merge, Discard, Restart, Push, PR    key.Binding
	Zoom, Search, SearchNext, SearchPrev key.Binding
	Shell, Editor, Budget                key.Binding
	Filter, State, Help, Quit, Cancel    key.Binding

	// Dialog keys.
	Submit, NextField, PrevField, Toggle, Left, Right key.Binding
	Yes, No                                           key.Binding
	Interrupt, Newline                                key.Binding
	Choose, ToMessage, SendHandOn, SetStatus          key.Binding
	CancelDialog, DropOne, DropAll                    key.Binding
	Scroll, NextFile, PrevFile, CloseDiff             key.Binding
	Comment, Uncomment, MarkRange, SendReview         key.Binding
	MergeHow, DoMerge, DoDiscard                      key.Binding
	AnswerPick, AnswerSend                            key.Binding
}

func newKeyMap() keyMap {
	b := func(help string, desc string, keys ...string) key.Binding {
		return key.NewBinding(key.WithKeys(keys...), key.WithHelp(help, desc))
	}
	return keyMap{
		Up:          b("↑/k", "up", "up", "k"),
		Down:        b("↓/j", "down", "down", "j"),
		PageUp:      b("pgup", "page up", "pgup", "ctrl+u"),
		PageDown:    b("pgdn", "page down", "pgdown", "ctrl+d"),
		Top:         b("g", "top", "g", "home"),
		Bottom:      b("G", "bottom/follow", "G", "end"),
		Collapse:    b("←/h", "fold/parent", "left", "h"),
		Expand:      b("→/l", "unfold/child", "right", "l"),
		Focus:       b("tab", "tree ⇄ log", "tab"),
		NextWaiting: b("w", "next waiting", "w"),

		New:     b("n", "new task", "n"),
		Answer:  b("a", "answer", "a"),
		Message: b("m", "message", "m"),
		HandOn:  b("o", "hand on", "o"),
		Done:    b("d", "done/status", "d"),
		Stop:    b("s", "stop", "s"),
		Start:   b("r", "start/resume", "r"),
		Archive: b("x", "archive", "x"),
		Queue:   b("Q", "queued messages", "Q"),
		Diff:    b("v", "view its diff", "v"),
		Merge:   b("M", "merge branch", "M"),
		Discard: b("D", "discard worktree", "D"),
		Push:    b("P", "push its branch", "P"),
		PR:      b("O", "open a pull request", "O"),
		Restart: b("R", "start daemon", "R"),
		Zoom:    b("z", "full-screen log", "z"),
		Shell:   b("S", "shell there", "S"),
		Editor:  b("e", "editor there", "e"),
		Budget:  b("$", "raise its budget", "$"),
		// In the full-screen log.
		Search:     b("/", "search", "/"),
		SearchNext: b("n/N", "next/previous match", "n"),
		SearchPrev: b("N", "previous match", "N"),
		Filter:     b("/", "filter", "/"),
		State:      b("f", "state filter", "f"),
		Help:       b("?", "help", "?"),
		Quit:       b("q", "quit", "q", "ctrl+c"),
		Cancel:     b("esc", "close/clear", "esc"),

		Submit:    b("enter", "submit", "enter"),
		NextField: b("tab", "next field", "tab", "down"),
		PrevField: b("shift+tab", "previous field", "shift+tab", "up"),
		Toggle:    b("space", "toggle", " "),
		Left:      b("←", "previous choice", "left"),
		Right:     b("→", "next choice", "right"),
		Yes:       b("y", "yes", "y", "Y"),
		No:        b("n", "no", "n", "N", "esc"),
		Interrupt: b("tab", "interrupt on/off", "tab"),
		Newline:   b("alt+enter/ctrl+j", "new line", "alt+enter", "ctrl+j"),
		// Help text only: the dialogs read these keys themselves.
		Choose:       b("↑↓", "choose", "up", "down"),
		ToMessage:    b("enter/tab", "to the message", "enter", "tab"),
		SendHandOn:   b("enter", "hand on", "enter"),
		SetStatus:    b("enter/y", "set", "enter", "y"),
		CancelDialog: b("n/esc", "cancel", "n", "esc"),
		DropOne:      b("x/del", "drop it", "x", "delete"),
		DropAll:      b("X", "drop all", "X"),
		Scroll:       b("↑↓/pgup/pgdn", "scroll", "up", "down"),
		NextFile:     b("tab", "next file", "tab"),
		PrevFile:     b("shift+tab", "previous file", "shift+tab"),
		CloseDiff:    b("esc/v/q", "close", "esc", "v", "q"),
		Comment:      b("c", "comment on the line (or range)", "c"),
		Uncomment:    b("x", "remove the comment", "x"),
		MarkRange:    b("V", "mark a range", "V"),
		SendReview:   b("s", "send the comments as one review", "s"),
		MergeHow:     b("tab", "merge/squash", "tab"),
		DoMerge:      b("enter", "merge", "enter"),
		DoDiscard:    b("y", "discard", "y"),
		AnswerPick:   b("1-9/↑↓", "choose", "1", "2", "3", "4", "5", "6", "7", "8", "9", "up", "down"),
		AnswerSend:   b("enter", "send the choice", "enter"),
	}
}

// barItem is a key as the help bar shows it: shorter than in full help.
type barItem struct {
	b     key.Binding
	label string
}

// shortHelp is the help bar of the main screen, most useful first; "?
// help" is always shown. At 80 columns the bar ends after "waiting": what
// a task that came back to the operator needs (answer, message, hand on,
// done) comes first.
func (k keyMap) shortHelp() []barItem {
	return []barItem{
		{k.New, "new"}, {k.Answer, "answer"}, {k.Message, "msg"}, {k.HandOn, "hand on"}, {k.Done, "done"},
		{k.Stop, "stop"}, {k.Start, "start"}, {k.NextWaiting, "waiting"}, {k.Filter, "filter"},
		{k.Archive, "archive"}, {k.State, "state"}, {k.Focus, "log"}, {k.Quit, "quit"}, {k.Help, "help"},
	}
}

// fullHelp is the `?` screen, in columns.
func (k keyMap) fullHelp() [][]key.Binding {
	return [][]key.Binding{
		{k.Up, k.Down, k.PageUp, k.PageDown, k.Top, k.Bottom, k.Collapse, k.Expand, k.Focus, k.NextWaiting, k.Zoom},
		{k.New, k.Answer, k.Message, k.HandOn, k.Done, k.Stop, k.Start, k.Archive, k.Queue, k.Budget, k.Shell, k.Editor},
		{k.Diff, k.Merge, k.Discard, k.Push, k.PR, k.Filter, k.State, k.Restart, k.Cancel, k.Help, k.Quit},
	}
}

// isCtrlC is the one key that quits from anywhere, dialogs included.
func isCtrlC(msg tea.KeyMsg) bool { return msg.Type == tea.KeyCtrlC }

// helpLine renders items as "key label" pairs that fit in w cells. The
// last item is kept whatever else has to go.
func helpLine(st styles, items []barItem, w int) string {
	if len(items) == 0 {
		return ""
	}
	text := func(it barItem) string {
		k := it.b.Help().Key
		if k == "q" || k == "ctrl+c" {
			k = "q"
		}
		return k + " " + it.label
	}
	last := items[len(items)-1]
	room := w - width(text(last)) - 2
	var parts []barItem
	used := 0
	for _, it := range items[:len(items)-1] {
		n := width(text(it))
		if used > 0 {
			n += 2
		}
		if used+n > room {
			break
		}
		parts = append(parts, it)
		used += n
	}
	parts = append(parts, last)
	var b strings.Builder
	for i, it := range parts {
		if i > 0 {
			b.WriteString("  ")
		}
		k := it.b.Help().Key
		b.WriteString(st.helpKey.Render(k))
		b.WriteString(" ")
		b.WriteString(st.helpDesc.Render(it.label))
	}
	return truncate(b.String(), w)
}

// items turns dialog bindings into bar items with their own help text.
func items(bs ...key.Binding) []barItem {
	out := make([]barItem, len(bs))
	for i, b := range bs {
		out[i] = barItem{b, b.Help().Desc}
	}
	return out
}

// relabel is b with another description, for a bar short of room.
func relabel(b key.Binding, desc string) key.Binding {
	return key.NewBinding(key.WithKeys(b.Keys()...), key.WithHelp(b.Help().Key, desc))
}
