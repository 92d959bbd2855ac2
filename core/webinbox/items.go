package webinbox

import (
	"cmp"
	"fmt"
	"html/template"
	"slices"
	"strings"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/textsafe"
)

// conversationLimit is how many of a task's latest entries its page shows.
const conversationLimit = 40

// textMax bounds any one agent-written text a page shows, in runes.
const textMax = 4000

// clean is agent-written text as a page shows it: terminal controls and
// bidirectional overrides removed (textsafe), bounded. html/template
// escapes what is left.
func clean(s string) string {
	s = textsafe.Clean(s)
	if r := []rune(s); len(r) > textMax {
		s = string(r[:textMax]) + "…"
	}
	return s
}

func line(s string) string { return clean(textsafe.Line(s)) }

var funcs = template.FuncMap{
	"inc":  func(i int) int { return i + 1 },
	"pair": func(p page, it Item) itemCtx { return itemCtx{P: p, I: it} },
}

// itemCtx is what the item template gets: the page (its CSRF token) and
// the item.
type itemCtx struct {
	P page
	I Item
}

// Item is one task that needs you, as the inbox shows it. Every string
// in it that an agent could have written is cleaned.
type Item struct {
	ID    string
	Title string
	// Place is its place in the tree: its ancestors' titles, root first.
	Place   []string
	Why     string
	Urgency string
	Urgent  bool
	Stage   string
	// Question is the pending question or permission, if any.
	Question *Question
	// LastWords is an escalation's (or a stall's) detail: the agent's
	// last words.
	LastWords string
	// Budget is set when its tree spent its budget.
	Budget *Budget
	// CanHandBack: someone handed it over, so "back" goes somewhere.
	CanHandBack bool
	// Running: an agent's turn is under way (stop stops it).
	Live bool
}

// Question is a pending question or permission.
type Question struct {
	ID         string
	Permission bool
	Text       string
	Parts      []Part
	Tool       *Tool
}

// Part is one prompt of a question and its options (numbered from 1).
type Part struct {
	Prompt  string
	Options []Option
}

// Option is one choice.
type Option struct {
	Label, Description string
}

// Tool is what a permission asks about.
type Tool struct {
	Title, Kind, Input string
}

// Budget is a reached budget and the spend.
type Budget struct {
	Amount, Spent, Remaining, Fault string
}

// Items lists the tasks that need you, ranked as kandev status ranks
// them: most urgent first (core.Task.NeedsYou), in listing order within
// an urgency (a tree that spent its budget says "budget", as NeedsYou does).
func Items(tasks []core.Task) []Item {
	idx := byID(tasks)
	type ranked struct {
		u    core.Urgency
		item Item
	}
	var rs []ranked
	for i := range tasks {
		t := &tasks[i]
		a := t.NeedsYou()
		if a.Urgency == core.UrgencyNone {
			continue
		}
		rs = append(rs, ranked{a.Urgency, itemOf(t, placeOf(t, idx))})
	}
	slices.SortStableFunc(rs, func(a, b ranked) int { return cmp.Compare(b.u, a.u) })
	out := make([]Item, 0, len(rs))
	for _, r := range rs {
		out = append(out, r.item)
	}
	return out
}

func byID(tasks []core.Task) map[string]*core.Task {
	m := make(map[string]*core.Task, len(tasks))
	for i := range tasks {
		m[tasks[i].ID] = &tasks[i]
	}
	return m
}

// placeOf is t's ancestors' titles, root first (at most 8: a deeper
// tree shows "…" first).
func placeOf(t *core.Task, idx map[string]*core.Task) []string {
	var up []string
	seen := map[string]bool{t.ID: true}
	for p := idx[t.ParentID]; p != nil && !seen[p.ID]; p = idx[p.ParentID] {
		seen[p.ID] = true
		if len(up) == 8 {
			up = append(up, "…")
			break
		}
		up = append(up, line(p.Title)+" ("+p.ID+")")
	}
	slices.Reverse(up)
	return up
}

func itemOf(t *core.Task, place []string) Item {
	a := t.NeedsYou()
	it := Item{ID: t.ID, Title: line(t.Title), Place: place, Why: a.Why, Urgency: a.Urgency.String(),
		Urgent: a.Urgency.Urgent(), Stage: string(core.StageOf(t)), CanHandBack: t.HandedBy != nil,
		Live: t.Session != nil && t.Session.State.Live()}
	if q := t.PendingQuestion; q != nil && q.Status == core.QuestionPending && q.Kind.ForPerson() {
		it.Question = questionOf(q)
	}
	if st := t.Stalled; st != nil && st.Detail != "" {
		it.LastWords = clean(st.Detail)
	}
	if b := t.Budget; b != nil && (b.Reached || t.OverBudget()) {
		it.Budget = &Budget{Amount: amount(b.Amount, b.Amount.Value), Spent: amount(b.Amount, b.Spent),
			Remaining: amount(b.Amount, b.Remaining), Fault: clean(b.Fault)}
	}
	return it
}

func amount(a core.Amount, v float64) string {
	if a.Kind == core.BudgetTokens {
		return fmt.Sprintf("%.0f tokens", v)
	}
	return fmt.Sprintf("%.2f %s", v, a.Currency)
}

func questionOf(q *core.QuestionInfo) *Question {
	out := &Question{ID: q.ID, Permission: q.Kind == core.QuestionPermission, Text: clean(q.Text)}
	for _, it := range q.Questions {
		p := Part{Prompt: clean(it.Prompt)}
		for _, o := range it.Options {
			p.Options = append(p.Options, Option{Label: line(o.Label), Description: line(o.Description)})
		}
		out.Parts = append(out.Parts, p)
	}
	if len(out.Parts) == 0 {
		// A question of one free-text part.
		out.Parts = []Part{{}}
	}
	if tl := q.Tool; tl != nil {
		out.Tool = &Tool{Title: line(tl.Title), Kind: line(tl.Kind), Input: clean(tl.Input)}
	}
	// The question's text repeats its parts' prompts and options (for a
	// terminal); a page shows the parts, and the text only when they say
	// nothing themselves.
	for _, p := range out.Parts {
		if p.Prompt != "" || out.Tool != nil {
			out.Text = ""
		}
	}
	return out
}

// Entry is one conversation entry.
type Entry struct {
	Kind, Author, Text, At string
}

func messagesOf(ms []core.Message) []Entry {
	out := make([]Entry, 0, len(ms))
	for _, m := range ms {
		text := strings.TrimSpace(clean(m.Text))
		if text == "" {
			continue
		}
		out = append(out, Entry{Kind: string(m.Kind), Author: line(m.Author.Label()), Text: text,
			At: m.CreatedAt.Local().Format("15:04")})
	}
	return out
}

type inboxView struct {
	Items []Item
	Done  string
}

type taskView struct {
	Item     Item
	Messages []Entry
	Older    bool
}
