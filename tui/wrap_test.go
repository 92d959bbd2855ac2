package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/kandev/kandev/core"
)

// lastWords is an agent's long last text, longer than a line at 80
// columns, with words that a cut mid-word would break.
const lastWords = "I refactored the authentication middleware, extracted the token " +
	"validation into its own package, and updated every caller accordingly."

// wordsWhole fails unless every word of text shows whole on one line of
// the screen (wrapped at word boundaries, not cut inside a word).
func wordsWhole(t *testing.T, screen, text string) {
	t.Helper()
	lines := strings.Split(screen, "\n")
	for _, w := range strings.Fields(text) {
		found := false
		for _, l := range lines {
			if strings.Contains(l, w) {
				found = true
				break
			}
		}
		if !found {
			t.Fatalf("the word %q is not whole on any line:\n%s", w, screen)
		}
	}
}

// At 80×24 the detail pane wraps an agent's last words (and an error, a
// question) at word boundaries instead of cutting them at the pane's edge.
func TestDetailWrapsLongFieldsAtWordBoundaries(t *testing.T) {
	tasks := demoTasks()
	tasks = append(tasks, core.Task{ID: "back01", Title: "Refactor the auth middleware", Status: core.StatusReview, Profile: "mock",
		Assignee: &core.Ref{Kind: "person", Name: core.Operator}, YourTurn: true,
		Stalled:   &core.Stall{Reason: core.StallReturned, From: core.ParseBy("role:mock"), Detail: lastWords, At: ago(time.Minute)},
		CreatedAt: ago(2 * time.Minute), UpdatedAt: ago(time.Minute)})
	d := newDriver(t, newFake(tasks...), 80, 24)
	d.selectTask("back01")
	d.mustShow("your turn ended without handing on: I refactored the")
	wordsWhole(t, d.view(), "your turn ended without handing on: "+lastWords)
}

// The conversation wraps an agent's long text at word boundaries under its
// label.
func TestConversationWrapsAtWordBoundaries(t *testing.T) {
	f := newFake(demoTasks()...)
	long := strings.Repeat(lastWords+" ", 2)
	f.convo["kid001"] = []core.Message{agentEntry("kid001", 1, long, testNow)}
	d := newDriver(t, f, 80, 24)
	d.selectTask("kid001")
	d.mustShow("agent › I refactored the authentication middleware, extracted the")
	wordsWhole(t, strings.Join(d.logLines(), "\n"), long)
	for _, l := range d.logLines() {
		if width(l) > 80 {
			t.Fatalf("a log line is wider than the pane: %q", l)
		}
	}
}

func TestHangingIndentsContinuations(t *testing.T) {
	got := hanging("[x] interrupt (tab) — cancels the running turn and delivers this instead", 40, 4)
	want := []string{"[x] interrupt (tab) — cancels the", "    running turn and delivers this", "    instead"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("hanging = %q, want %q", got, want)
	}
}
