package tui

import (
	"context"
	"fmt"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
)

// The budgets: with 10,000 tasks, the first frame after the listing
// arrives (Update + View) within 100 ms, and a keypress to the next frame
// (Update + View) within 16 ms. `make bench` runs these.

const benchTasks = 10000

// benchForest is n tasks: roots with children and grandchildren, some
// autopilot, some running, some asking the operator or their parent.
func benchForest(n int) []core.Task {
	ts := make([]core.Task, 0, n)
	base := testNow.Add(-24 * time.Hour)
	var roots, kids []string
	for i := 0; len(ts) < n; i++ {
		t := core.Task{
			ID: fmt.Sprintf("t%05d", i), Title: fmt.Sprintf("Task %d: refactor the module that handles case %d of the importer", i, i*7),
			Status: core.Statuses[i%4], Profile: "mock", Autopilot: i%3 == 0,
			CreatedAt: base.Add(time.Duration(i) * time.Second), UpdatedAt: base.Add(time.Duration(i) * time.Second),
		}
		switch {
		case i%50 == 0 || len(roots) == 0:
			roots = append(roots, t.ID)
		case i%5 == 0 || len(kids) == 0:
			t.ParentID = roots[len(roots)-1]
			kids = append(kids, t.ID)
		default:
			t.ParentID = kids[len(kids)-1]
		}
		if i%7 == 0 {
			t.Session = session(t.ID, core.SessionRunning, t.UpdatedAt)
		}
		if i%97 == 0 {
			t.PendingQuestion = userQuestion("q"+t.ID, dbQuestion)
		} else if i%89 == 0 && t.ParentID != "" {
			t.PendingQuestion = parentQuestion("p"+t.ID, t.ParentID)
		}
		ts = append(ts, t)
	}
	return ts
}

func benchModel(b *testing.B, w, h int) *Model {
	m := newModel(context.Background(), newFake(), Options{Now: func() time.Time { return testNow }, Location: time.UTC}, testStyles())
	m.tickEvery, m.debounce = 0, 0
	m.gen, m.loading, m.conn = 1, true, connLive
	m.Update(tea.WindowSizeMsg{Width: w, Height: h})
	return m
}

func loadedModel(b *testing.B, w, h int, tasks []core.Task) *Model {
	m := benchModel(b, w, h)
	m.Update(tasksMsg{gen: 1, tasks: tasks})
	_ = m.View()
	return m
}

var sink string

func BenchmarkFirstFrame(b *testing.B) {
	tasks := benchForest(benchTasks)
	for _, size := range [][2]int{{80, 24}, {200, 50}} {
		b.Run(fmt.Sprintf("%dx%d", size[0], size[1]), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				m := benchModel(b, size[0], size[1])
				b.StartTimer()
				m.Update(tasksMsg{gen: 1, tasks: tasks})
				sink = m.View()
			}
		})
	}
}

func BenchmarkKeypress(b *testing.B) {
	tasks := benchForest(benchTasks)
	down, up := keyMsg("j"), keyMsg("k")
	for _, size := range [][2]int{{80, 24}, {200, 50}} {
		b.Run(fmt.Sprintf("move/%dx%d", size[0], size[1]), func(b *testing.B) {
			m := loadedModel(b, size[0], size[1], tasks)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				k := down
				if (i/500)%2 == 1 {
					k = up
				}
				i++
				m.Update(k)
				sink = m.View()
			}
		})
	}
	b.Run("pagedown/80x24", func(b *testing.B) {
		m := loadedModel(b, 80, 24, tasks)
		pg, top := keyMsg("pgdown"), keyMsg("g")
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			k := pg
			if i%400 == 399 {
				k = top
			}
			i++
			m.Update(k)
			sink = m.View()
		}
	})
	b.Run("fold/80x24", func(b *testing.B) {
		m := loadedModel(b, 80, 24, tasks)
		fold := keyMsg("h")
		unfold := keyMsg("l")
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			k := fold
			if i%2 == 1 {
				k = unfold
			}
			i++
			m.Update(k)
			sink = m.View()
		}
	})
	b.Run("filter-typing/80x24", func(b *testing.B) {
		m := loadedModel(b, 80, 24, tasks)
		m.Update(keyMsg("/"))
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			var k tea.KeyMsg
			if i%2 == 0 {
				k = keyMsg("9")
			} else {
				k = tea.KeyMsg{Type: tea.KeyBackspace}
			}
			i++
			m.Update(k)
			sink = m.View()
		}
	})
	b.Run("hand-on-filter-typing/80x24", func(b *testing.B) {
		m := loadedModel(b, 80, 24, tasks)
		m.Update(keyMsg("o"))
		d, ok := m.dialog.(*handoffDialog)
		if !ok {
			b.Fatal("o did not open the hand-on dialog")
		}
		var roles []api.Role
		var persons []api.Person
		for i := 0; i < 200; i++ {
			roles = append(roles, api.Role{Name: fmt.Sprintf("role%03d", i), Profile: "mock"})
			persons = append(persons, api.Person{Name: fmt.Sprintf("person%03d", i)})
		}
		m.Update(assigneesMsg{dialog: d.id, roles: roles, persons: persons})
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			var k tea.KeyMsg
			if i%2 == 0 {
				k = keyMsg("9")
			} else {
				k = tea.KeyMsg{Type: tea.KeyBackspace}
			}
			i++
			m.Update(k)
			sink = m.View()
		}
	})
	b.Run("next-waiting/80x24", func(b *testing.B) {
		m := loadedModel(b, 80, 24, tasks)
		w := keyMsg("w")
		b.ReportAllocs()
		for b.Loop() {
			m.Update(w)
			sink = m.View()
		}
	})
}

// BenchmarkEvent is one live change arriving (a task update) to the next
// frame, without and with a filter that forces the tree to be laid out.
func BenchmarkEvent(b *testing.B) {
	tasks := benchForest(benchTasks)
	for _, filtered := range []bool{false, true} {
		b.Run(fmt.Sprintf("filtered=%v", filtered), func(b *testing.B) {
			m := loadedModel(b, 80, 24, tasks)
			if filtered {
				m.Update(keyMsg("f"))
			}
			t := tasks[4321]
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				t.UpdatedAt = testNow.Add(time.Duration(i))
				tt := t
				m.Update(eventsMsg{gen: 1, events: []core.Event{{Type: core.EventTaskUpdated, TaskID: t.ID, Task: &tt}}})
				sink = m.View()
			}
		})
	}
}

// BenchmarkConversation is the log's work, each to the next frame: the
// tail arriving (one page), a page read back, scrolling a full window,
// and one live update (an agent streaming into its last entry) on a full
// window, followed and scrolled back.
func BenchmarkConversation(b *testing.B) {
	tasks := benchForest(benchTasks)
	id := tasks[0].ID
	long := "a line of agent output that is long enough to wrap at least once in the log pane of an 80 column terminal"
	msgs := make([]core.Message, maxConversation+convoPageSize)
	for i := range msgs {
		msgs[i] = core.Message{Seq: int64(i + 1), TaskID: id, Kind: core.MsgAgent, Text: fmt.Sprintf("%d: %s", i+1, long), CreatedAt: testNow, UpdatedAt: testNow}
	}
	tail := msgs[len(msgs)-convoPageSize:]
	// withConvo is a model showing the task with the newest n entries loaded.
	withConvo := func(b *testing.B, n int) *Model {
		m := loadedModel(b, 80, 24, tasks)
		m.Update(convoLoadMsg{gen: m.detail.gen})
		win := msgs[len(msgs)-n:]
		m.Update(convoPageMsg{gen: m.detail.gen, taskID: id, kind: pageTail,
			page: api.ConversationPage{TaskID: id, Messages: win, First: win[0].Seq, Next: win[len(win)-1].Seq, Older: true}})
		m.detail.convo.olderBusy = true // no read back in these
		_ = m.View()
		return m
	}
	b.Run("tail/80x24", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			b.StopTimer()
			m := loadedModel(b, 80, 24, tasks)
			m.Update(convoLoadMsg{gen: m.detail.gen})
			b.StartTimer()
			m.Update(convoPageMsg{gen: m.detail.gen, taskID: id, kind: pageTail,
				page: api.ConversationPage{TaskID: id, Messages: tail, First: tail[0].Seq, Next: tail[len(tail)-1].Seq, Older: true}})
			sink = m.View()
		}
	})
	for _, n := range []int{convoPageSize, maxConversation - convoPageSize} {
		b.Run(fmt.Sprintf("older-page/window=%d/80x24", n), func(b *testing.B) {
			win := msgs[len(msgs)-n:]
			older := msgs[len(msgs)-n-convoPageSize : len(msgs)-n]
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				m := withConvo(b, n)
				m.focusLog = true
				m.Update(keyMsg("g"))
				b.StartTimer()
				m.Update(convoPageMsg{gen: m.detail.gen, taskID: id, kind: pageOlder, cursor: win[0].Seq,
					page: api.ConversationPage{TaskID: id, Messages: older, First: older[0].Seq, Next: older[len(older)-1].Seq, Older: true}})
				sink = m.View()
			}
		})
	}
	b.Run("scroll-full-window/80x24", func(b *testing.B) {
		m := withConvo(b, maxConversation)
		m.focusLog = true
		up, down := keyMsg("pgup"), keyMsg("pgdown")
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			k := up
			if (i/200)%2 == 1 {
				k = down
			}
			i++
			m.Update(k)
			sink = m.View()
		}
	})
	for _, follow := range []bool{true, false} {
		b.Run(fmt.Sprintf("live-update/follow=%v/80x24", follow), func(b *testing.B) {
			m := withConvo(b, maxConversation)
			if !follow {
				m.focusLog = true
				m.Update(keyMsg("pgup"))
			}
			last := msgs[len(msgs)-1]
			base := last.Text
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				if i%200 == 0 {
					last.Text = base // a streamed entry grows, within reason
				}
				last.Text += " more"
				last.UpdatedAt = testNow.Add(time.Duration(i))
				ev := last
				m.Update(eventsMsg{gen: 1, events: []core.Event{{Type: core.EventMessageUpdated, TaskID: id, Message: &ev}}})
				sink = m.View()
			}
		})
	}
}

// BenchmarkFirstFrame100k is BenchmarkFirstFrame at 100,000 tasks.
func BenchmarkFirstFrame100k(b *testing.B) {
	tasks := benchForest(100_000)
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		m := benchModel(b, 120, 40)
		b.StartTimer()
		m.Update(tasksMsg{gen: 1, tasks: tasks, partial: true})
		sink = m.View()
	}
}
