package tui

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kandev/kandev/core"
)

func TestSanitize(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"plain text\nline two", "plain text\nline two"},
		{"\x1b[1;31mred\x1b[0m", "red"},
		{"clear\x1b[2J\x1b[Hscreen", "clearscreen"},
		{"\x1b]0;window title\x07after", "after"},
		{"\x1b]8;;https://x.test\x1b\\link\x1b]8;;\x1b\\", "link"},
		{"tab\there", "tab    here"},
		{"progress 10%\rprogress 100%", "progress 10%progress 100%"},
		{"bell\x07 back\x08space nul\x00", "bell backspace nul"},
		{"c1 \u009bcontrol", "c1 control"},
		{"bidi \u202eevil\u202c ok", "bidi evil ok"},
		{"bad \xff utf8", "bad \ufffd utf8"},
		{"日本語 and émoji 🎉", "日本語 and émoji 🎉"},
	} {
		if got := sanitize(c.in); got != c.want {
			t.Errorf("sanitize(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestTruncateAndWrapRespectCells(t *testing.T) {
	for _, s := range []string{
		"a plain title that goes on and on",
		"日本語のタイトルはとても長いです、本当に",
		"mixed 日本語 text with 🎉 emoji and more words",
	} {
		for w := 1; w <= 30; w++ {
			if got := truncate(s, w); width(got) > w {
				t.Fatalf("truncate(%q, %d) = %q is %d cells", s, w, got, width(got))
			}
			if got := fit(s, w); width(got) != w {
				t.Fatalf("fit(%q, %d) = %q is %d cells", s, w, got, width(got))
			}
			for _, l := range wrap(s, w) {
				if width(l) > w && w > 1 {
					t.Fatalf("wrap(%q, %d) line %q is %d cells", s, w, l, width(l))
				}
			}
		}
	}
	if got := truncate("日本語", 4); got != "日…" {
		t.Fatalf("a wide character is never split: %q", got)
	}
}

func TestHostileTitlesAndOutputKeepTheLayout(t *testing.T) {
	tasks := demoTasks()
	tasks[0].Title = "\x1b[31mred\x1b[0m title\nwith a newline and a \x1b]0;pwned\x07 window title and 日本語 that is long enough to be cut"
	tasks[1].Title = strings.Repeat("長", 100)
	f := newFake(tasks...)
	f.convo["root01"] = []core.Message{{Seq: 1, TaskID: "root01", Kind: core.MsgAgent, CreatedAt: testNow, UpdatedAt: testNow,
		Text: "\x1b[2J\x1b[Hwiped?\r\n\tindented 日本語" + strings.Repeat("ｗｉｄｅ", 40) + "\x1b[?1049l\x1b[0m end"}}
	for _, w := range []int{80, 133, 200} {
		d := newDriver(t, f, w, 24)
		v := d.view()
		if strings.ContainsAny(v, "\x1b\r\t\x07") {
			t.Fatalf("control characters reached the screen at width %d: %q", w, v)
		}
		for i, l := range strings.Split(v, "\n") {
			if width(l) > w {
				t.Fatalf("width %d: line %d is %d cells: %q", w, i, width(l), l)
			}
		}
		d.mustShow("red title with a newline", "wiped?", "indented", "日本語ｗｉｄｅ", "end")
		d.mustNotShow("pwned")
	}
}

func TestRowModel(t *testing.T) {
	now := testNow
	tk := core.Task{ID: "abc123", Title: "t", Status: core.StatusReview, Profile: "mock", Autopilot: true, Halted: true,
		UpdatedAt: now.Add(-90 * time.Second), PendingQuestion: parentQuestion("q", "p"),
		Session: &core.SessionInfo{State: core.SessionFailed, UpdatedAt: now.Add(-2 * time.Hour)}}
	r := rowFor(&tk, now, 0)
	var got []string
	for _, b := range r.badges {
		got = append(got, badgeText[b])
	}
	if strings.Join(got, " ") != "AUTO ?parent FAILED STOPPED" {
		t.Fatalf("badges %v", got)
	}
	if r.glyph != "◐" || r.elapsed != "1m" || r.who != "mock" {
		t.Fatalf("row %+v", r)
	}
	tk.Session = session("abc123", core.SessionRunning, now.Add(-5*time.Second))
	tk.PendingQuestion = userQuestion("q", dbQuestion)
	r = rowFor(&tk, now, 3)
	if r.glyph != spinnerFrames[3] || r.elapsed != "5s" || !strings.Contains(badgeLine(r), "?you") {
		t.Fatalf("running row %+v", r)
	}
	for d, want := range map[time.Duration]string{0: "0s", 59 * time.Second: "59s", 3 * time.Hour: "3h", 50 * time.Hour: "2d", -time.Second: "0s"} {
		if got := shortDuration(d); got != want {
			t.Errorf("shortDuration(%s) = %q, want %q", d, got, want)
		}
	}
}

func badgeLine(r rowModel) string {
	var s []string
	for _, b := range r.badges {
		s = append(s, badgeText[b])
	}
	return strings.Join(s, " ")
}

func TestRowDropsColumnsWhenNarrow(t *testing.T) {
	st := testStyles()
	tk := core.Task{ID: "abc123", Title: "A title that is long", Profile: "claude", Autopilot: true, PendingQuestion: userQuestion("q", dbQuestion), UpdatedAt: testNow}
	r := rowFor(&tk, testNow, 0)
	for _, w := range []int{30, 40, 50, 60, 80, 120, 200} {
		line := r.render(st, flatRow{prefix: "│ └─"}, w, true, true)
		if width(line) != w {
			t.Fatalf("width %d: row is %d cells: %q", w, width(line), line)
		}
		if !strings.Contains(line, "AUTO ?you") {
			t.Fatalf("width %d: badges dropped: %q", w, line)
		}
		if !strings.HasPrefix(line, "> ") {
			t.Fatalf("width %d: selection marker missing: %q", w, line)
		}
	}
}

func TestDeepTreesKeepTheTitle(t *testing.T) {
	var tasks []core.Task
	parent := ""
	for i := 0; i < 60; i++ {
		id := fmt.Sprintf("d%05d", i)
		tasks = append(tasks, core.Task{ID: id, ParentID: parent, Title: "level " + strconv.Itoa(i), Status: core.StatusTodo, CreatedAt: testNow, UpdatedAt: testNow})
		parent = id
	}
	d := newDriver(t, newFake(tasks...), 80, 24)
	d.keys("G")
	row := d.rowOf("d00059")
	if !strings.Contains(row, "level 59") || width(row) != 80 {
		t.Fatalf("deepest row: %q", row)
	}
}
