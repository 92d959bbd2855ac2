package core

import (
	"fmt"
	"strings"
	"testing"
)

// wantMoves is the workflow as the issue describes it, written out so a
// change to the transition table must change this test too.
var wantMoves = map[Status][]Status{
	StatusTodo:       {StatusInProgress, StatusReview, StatusDone, StatusCancelled},
	StatusInProgress: {StatusTodo, StatusReview, StatusDone, StatusCancelled},
	StatusReview:     {StatusTodo, StatusInProgress, StatusDone, StatusCancelled},
	StatusDone:       {StatusTodo, StatusInProgress},
	StatusCancelled:  {StatusTodo},
}

func TestEveryStatusTransition(t *testing.T) {
	if len(Statuses) != 5 {
		t.Fatalf("statuses %v, want the five of the issue", Statuses)
	}
	for _, from := range Statuses {
		for _, to := range Statuses {
			t.Run(fmt.Sprintf("%s→%s", from, to), func(t *testing.T) {
				allowed := from == to
				for _, ok := range wantMoves[from] {
					allowed = allowed || ok == to
				}
				err := CheckTransition(from, to)
				if allowed {
					if err != nil {
						t.Fatalf("refused an allowed move: %v", err)
					}
					return
				}
				if err == nil {
					t.Fatal("allowed a move the table does not list")
				}
				if CodeOf(err) != CodeConflict {
					t.Fatalf("code %s, want %s", CodeOf(err), CodeConflict)
				}
				msg := err.Error()
				if !strings.Contains(msg, string(from)) || !strings.Contains(msg, string(to)) {
					t.Fatalf("error %q does not name both states", msg)
				}
				if strings.Index(msg, string(from)) > strings.LastIndex(msg, string(to)) {
					t.Fatalf("error %q names the states out of order", msg)
				}
			})
		}
	}
}

func TestTransitionsFromUnknownStatus(t *testing.T) {
	if err := CheckTransition("bogus", StatusTodo); err == nil {
		t.Fatal("a move from an unknown status was allowed")
	}
}

func TestParseStatus(t *testing.T) {
	for _, s := range Statuses {
		got, err := ParseStatus(string(s))
		if err != nil || got != s {
			t.Errorf("ParseStatus(%q) = %q, %v", s, got, err)
		}
		if got.String() != string(s) {
			t.Errorf("String() = %q", got.String())
		}
	}
	for _, bad := range []string{"", "Todo", "TODO", "in-progress", "in progress", " todo", "finished", "archived"} {
		_, err := ParseStatus(bad)
		if err == nil {
			t.Errorf("ParseStatus(%q) accepted", bad)
			continue
		}
		if CodeOf(err) != CodeValidation {
			t.Errorf("ParseStatus(%q): code %s", bad, CodeOf(err))
		}
		for _, s := range Statuses {
			if !strings.Contains(err.Error(), string(s)) {
				t.Errorf("ParseStatus(%q) error %q does not list %s", bad, err, s)
			}
		}
	}
}

func TestTerminalAndActive(t *testing.T) {
	for _, s := range Statuses {
		term := s == StatusDone || s == StatusCancelled
		if s.Terminal() != term || s.Active() == term {
			t.Errorf("%s: Terminal %v Active %v", s, s.Terminal(), s.Active())
		}
	}
}
