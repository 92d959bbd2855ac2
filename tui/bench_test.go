package tui

import (
	"context"
	"fmt"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/kandev/kandev/core"
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
