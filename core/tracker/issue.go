package tracker

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/kandev/kandev/core/textsafe"
)

// Bounds on what kandev keeps of an issue (docs/trackers.md): a tracker's
// text is written by anyone who can post there, so none of it may grow a
// task, a prompt or a terminal without limit.
const (
	MaxTitle        = 200      // runes, as a task's title
	MaxBody         = 16 << 10 // bytes of the issue's body
	MaxComment      = 4 << 10  // bytes of each comment
	MaxComments     = 5        // the last comments kept
	MaxLabels       = 20
	MaxLabel        = 50       // runes of each label, author, state
	MaxText         = 32 << 10 // bytes of the whole rendered text (Issue.Text)
	MaxList         = 100      // issues one listing returns
	maxOutput       = 4 << 20  // bytes read of a CLI's or the API's answer
	defaultListSize = 30
)

// Issue is one issue as kandev keeps it: bounded, cleaned text.
type Issue struct {
	Ref      Ref       `json:"ref"`
	Source   string    `json:"source"` // Ref's canonical form
	Title    string    `json:"title"`
	Body     string    `json:"body"`
	URL      string    `json:"url"`
	State    string    `json:"state"`
	Author   string    `json:"author,omitempty"`
	Labels   []string  `json:"labels"`
	Comments []Comment `json:"comments,omitempty"`
}

// Comment is one of an issue's last comments.
type Comment struct {
	Author string `json:"author"`
	Body   string `json:"body"`
	At     string `json:"at,omitempty"`
}

// ListOptions filter a listing of open issues.
type ListOptions struct {
	Label, Assignee, Milestone string
	// Limit is how many at most (default 30, at most MaxList).
	Limit int
}

func (o ListOptions) limit() int {
	switch {
	case o.Limit <= 0:
		return defaultListSize
	case o.Limit > MaxList:
		return MaxList
	}
	return o.Limit
}

// Faults a tracker's call ends in, each wrapped with what to do.
var (
	ErrNoCLI       = errors.New("tracker CLI not installed")
	ErrNotLoggedIn = errors.New("not logged in to the tracker")
	ErrNoNetwork   = errors.New("tracker unreachable")
	ErrNoIssue     = errors.New("no such issue")
	ErrForbidden   = errors.New("repository private or forbidden")
	ErrNoToken     = errors.New("tracker token missing")
	ErrBadAnswer   = errors.New("tracker answered something kandev cannot read")
	ErrUnknownRepo = errors.New("no tracker for this repository")
)

// Fault names the kind of a tracker error, for --json and tests:
// no_cli, not_logged_in, no_network, no_issue, forbidden, no_token,
// bad_answer, unknown_repo; "" for any other.
func Fault(err error) string {
	for _, f := range []struct {
		err  error
		name string
	}{{ErrNoCLI, "no_cli"}, {ErrNotLoggedIn, "not_logged_in"}, {ErrNoNetwork, "no_network"}, {ErrNoIssue, "no_issue"},
		{ErrForbidden, "forbidden"}, {ErrNoToken, "no_token"}, {ErrBadAnswer, "bad_answer"}, {ErrUnknownRepo, "unknown_repo"}} {
		if errors.Is(err, f.err) {
			return f.name
		}
	}
	return ""
}

// clean makes a tracker's text safe to keep: terminal controls gone,
// bounded to max bytes at a rune boundary, a cut said as such.
func clean(s string, max int) string {
	s = strings.TrimSpace(strings.ReplaceAll(textsafe.Clean(s), "\r\n", "\n"))
	return cut(s, max)
}

func cut(s string, max int) string {
	if len(s) <= max {
		return s
	}
	const mark = "\n[… cut by kandev]"
	n := max - len(mark)
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + mark
}

// line is clean on one line, bounded in runes.
func line(s string, max int) string {
	s = textsafe.Line(s)
	s = strings.TrimSpace(s)
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	r := []rune(s)
	return string(r[:max-1]) + "…"
}

// finish bounds and cleans what a tracker returned, in place.
func (is *Issue) finish() {
	is.Source = is.Ref.String()
	is.Title = line(is.Title, MaxTitle)
	if is.Title == "" {
		is.Title = is.Ref.Short()
	}
	is.Body = clean(is.Body, MaxBody)
	is.URL = line(is.URL, 512)
	if !strings.HasPrefix(is.URL, "https://") && !strings.HasPrefix(is.URL, "http://") {
		is.URL = is.Ref.URL()
	}
	is.State = line(is.State, MaxLabel)
	is.Author = line(is.Author, MaxLabel)
	labels := is.Labels[:0:0]
	for _, l := range is.Labels {
		if l = line(l, MaxLabel); l != "" && len(labels) < MaxLabels {
			labels = append(labels, l)
		}
	}
	is.Labels = labels
	if len(is.Comments) > MaxComments {
		is.Comments = is.Comments[len(is.Comments)-MaxComments:]
	}
	for i := range is.Comments {
		c := &is.Comments[i]
		c.Author, c.Body, c.At = line(c.Author, MaxLabel), clean(c.Body, MaxComment), line(c.At, MaxLabel)
	}
}

// Text is the issue as a task's description and its agent's first prompt
// carry it: title line, state, labels, the body, the last comments;
// bounded by MaxText.
func (is Issue) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s\n%s\n", is.Ref.Short(), is.Title, is.URL)
	if is.State != "" {
		fmt.Fprintf(&b, "State: %s\n", is.State)
	}
	if is.Author != "" {
		fmt.Fprintf(&b, "Author: %s\n", is.Author)
	}
	if len(is.Labels) > 0 {
		fmt.Fprintf(&b, "Labels: %s\n", strings.Join(is.Labels, ", "))
	}
	if is.Body != "" {
		b.WriteString("\n")
		b.WriteString(is.Body)
		b.WriteString("\n")
	}
	if len(is.Comments) > 0 {
		fmt.Fprintf(&b, "\nLast %d comment(s):\n", len(is.Comments))
		for _, c := range is.Comments {
			who := c.Author
			if who == "" {
				who = "someone"
			}
			if c.At != "" {
				who += " (" + c.At + ")"
			}
			fmt.Fprintf(&b, "\n%s wrote:\n%s\n", who, c.Body)
		}
	}
	return cut(strings.TrimRight(b.String(), "\n"), MaxText)
}
