package wire

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/kandev/kandev/core"
)

// The summary's columns, declared once (summaryColumns): a column's name,
// its kind, and the task field it holds. appendSummary writes a task by
// walking them, summaryTask reads one back, and SummaryFields names them:
// a column added here is written, read and documented.

// summaryColumns lists the columns in order; see summary.go for the
// format. Each names its field through accessors that take only the task,
// so that reading a line keeps its state on the stack.
var summaryColumns = [SummaryColumns]summaryColumn{
	{name: "id", kind: colText, text: func(t *core.Task) *string { return &t.ID }},
	{name: "parent_id", kind: colText, text: func(t *core.Task) *string { return &t.ParentID }},
	{name: "status", kind: colText, text: func(t *core.Task) *string { return (*string)(&t.Status) }},
	{name: "flags", kind: colFlags},
	{name: "updated_at", kind: colTime, time: func(t *core.Task) *time.Time { return &t.UpdatedAt }},
	{name: "profile", kind: colText, text: func(t *core.Task) *string { return &t.Profile }},
	{name: "assignee.kind", kind: colRefKind, flag: flagAssignee, ref: func(t *core.Task) **core.Ref { return &t.Assignee }},
	{name: "assignee.name", kind: colRefName, ref: func(t *core.Task) **core.Ref { return &t.Assignee }},
	{name: "handed_by.kind", kind: colRefKind, flag: flagHandedBy, ref: func(t *core.Task) **core.Ref { return &t.HandedBy }},
	{name: "handed_by.name", kind: colRefName, ref: func(t *core.Task) **core.Ref { return &t.HandedBy }},
	{name: "waiting", kind: colText, text: func(t *core.Task) *string { return &t.Waiting }},
	{name: "blocked_by", kind: colJSON, label: "blocked_by",
		put: func(t *core.Task) (any, bool) { return t.BlockedBy, len(t.BlockedBy) > 0 },
		get: func(t *core.Task, j []byte) error { return json.Unmarshal(j, &t.BlockedBy) }},
	{name: "queued", kind: colInt, label: "queue length", int: func(t *core.Task) *int { return &t.Queued }},
	{name: "session.id", kind: colSessionText, sessionText: func(s *core.SessionInfo) *string { return &s.ID }},
	{name: "session.role", kind: colSessionText, sessionText: func(s *core.SessionInfo) *string { return &s.Role }},
	{name: "session.state", kind: colSessionText, sessionText: func(s *core.SessionInfo) *string { return (*string)(&s.State) }},
	{name: "session.created_at", kind: colSessionTime, sessionTime: func(s *core.SessionInfo) *time.Time { return &s.CreatedAt }},
	{name: "session.updated_at", kind: colSessionTime, sessionTime: func(s *core.SessionInfo) *time.Time { return &s.UpdatedAt }},
	{name: "session.turn_started_at", kind: colSessionTime, sessionTime: func(s *core.SessionInfo) *time.Time { return &s.TurnStartedAt }},
	{name: "pending_question", kind: colJSON, label: "pending question",
		put: func(t *core.Task) (any, bool) { return t.PendingQuestion, t.PendingQuestion != nil },
		get: func(t *core.Task, j []byte) error {
			var pq core.QuestionInfo
			if err := json.Unmarshal(j, &pq); err != nil {
				return err
			}
			t.PendingQuestion = &pq
			return nil
		}},
	{name: "stalled", kind: colJSON, label: "stall",
		put: func(t *core.Task) (any, bool) { return t.Stalled, t.Stalled != nil },
		get: func(t *core.Task, j []byte) error {
			var st core.Stall
			if err := json.Unmarshal(j, &st); err != nil {
				return err
			}
			t.Stalled = &st
			return nil
		}},
	{name: "usage", kind: colUsage},
	{name: "title", kind: colText, text: func(t *core.Task) *string { return &t.Title }},
}

// SummaryColumns is len(SummaryFields), as a constant for the decoder.
const SummaryColumns = 23

// SummaryFields names the columns, in order (documentation and tests).
var SummaryFields = func() []string {
	names := make([]string, len(summaryColumns))
	for i, c := range summaryColumns {
		names[i] = c.name
	}
	return names
}()

// summaryColumn is one column: its kind says how it is written and read,
// and which accessor names its field.
type summaryColumn struct {
	name string
	kind columnKind
	// label names the field in a read error (colJSON, colInt).
	label string
	// flag is the flags letter saying the columns hold a ref (colRefKind).
	flag        byte
	text        func(*core.Task) *string
	time        func(*core.Task) *time.Time
	int         func(*core.Task) *int
	ref         func(*core.Task) **core.Ref
	sessionText func(*core.SessionInfo) *string
	sessionTime func(*core.SessionInfo) *time.Time
	// put gives a colJSON column's value and whether it has one; get reads
	// that value's JSON back into the task.
	put func(*core.Task) (any, bool)
	get func(*core.Task, []byte) error
}

type columnKind uint8

const (
	colText        columnKind = iota // escaped text
	colFlags                         // the flag letters (summaryFlags)
	colTime                          // a time (appendNanos)
	colInt                           // a decimal int
	colRefKind                       // a ref's kind; empty, with its name, for none
	colRefName                       // the name of the ref colRefKind before it holds
	colJSON                          // a rare value as its JSON, empty for none
	colSessionText                   // text of the session's; empty for none
	colSessionTime                   // a time of the session's; 0 for none
	colUsage                         // spend and own budget (usage.go), empty for none
)

// Flag letters of the flags column.
const (
	flagAutopilot = 'a'
	flagHalted    = 'h'
	flagArchived  = 'x'
	flagYourTurn  = 'y'
	flagTitlePend = 'p'
	flagAssignee  = 'A' // the assignee columns hold one
	flagHandedBy  = 'H' // the handed_by columns hold one
	flagSession   = 's' // the session columns hold one
	flagInterrupt = 'i' // a daemon exit cut its run short (ADR 0026)
)

// summaryFlags are the flags column's letters, in the order written: a
// flag of the task's own (on), or a mark that columns hold a value (holds,
// which those columns read back).
var summaryFlags = [...]struct {
	letter byte
	on     func(*core.Task) *bool
	holds  func(*core.Task) bool
}{
	{letter: flagAutopilot, on: func(t *core.Task) *bool { return &t.Autopilot }},
	{letter: flagHalted, on: func(t *core.Task) *bool { return &t.Halted }},
	{letter: flagArchived, on: func(t *core.Task) *bool { return &t.Archived }},
	{letter: flagYourTurn, on: func(t *core.Task) *bool { return &t.YourTurn }},
	{letter: flagTitlePend, on: func(t *core.Task) *bool { return &t.TitlePending }},
	{letter: flagAssignee, holds: func(t *core.Task) bool { return t.Assignee != nil }},
	{letter: flagHandedBy, holds: func(t *core.Task) bool { return t.HandedBy != nil }},
	{letter: flagSession, holds: func(t *core.Task) bool { return t.Session != nil }},
	{letter: flagInterrupt, on: func(t *core.Task) *bool { return &t.Interrupted }},
}

// Times in [nanosFrom, nanosUntil) are written as Unix nanoseconds, which
// hold them; others as RFC 3339 text.
var (
	nanosFrom  = time.Date(1700, 1, 1, 0, 0, 0, 0, time.UTC)
	nanosUntil = time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC)
)

// appendSummary writes t's line: each column, then a tab, the last one's
// turned into the line's end.
func appendSummary(b []byte, t *core.Task) ([]byte, error) {
	for i := range summaryColumns {
		var err error
		if b, err = appendColumn(b, &summaryColumns[i], t); err != nil {
			return nil, err
		}
		b = append(b, '\t')
	}
	b[len(b)-1] = '\n'
	return b, nil
}

func appendColumn(b []byte, c *summaryColumn, t *core.Task) ([]byte, error) {
	switch c.kind {
	case colText:
		b = appendEscaped(b, *c.text(t))
	case colFlags:
		for _, f := range summaryFlags {
			if (f.on != nil && *f.on(t)) || (f.holds != nil && f.holds(t)) {
				b = append(b, f.letter)
			}
		}
	case colTime:
		b = appendNanos(b, *c.time(t))
	case colInt:
		b = strconv.AppendInt(b, int64(*c.int(t)), 10)
	case colRefKind:
		if a := *c.ref(t); a != nil {
			b = appendEscaped(b, string(a.Kind))
		}
	case colRefName:
		if a := *c.ref(t); a != nil {
			b = appendEscaped(b, a.Name)
		}
	case colJSON:
		if v, ok := c.put(t); ok {
			j, err := json.Marshal(v)
			if err != nil {
				return nil, fmt.Errorf("summary of task %s: %w", t.ID, err)
			}
			b = appendEscaped(b, string(j))
		}
	case colSessionText:
		if t.Session != nil {
			b = appendEscaped(b, *c.sessionText(t.Session))
		}
	case colSessionTime:
		if t.Session != nil {
			b = appendNanos(b, *c.sessionTime(t.Session))
		} else {
			b = append(b, '0')
		}
	case colUsage:
		if t.Usage != nil || t.Budget != nil {
			return appendSummaryUsage(b, t)
		}
	}
	return b, nil
}

// appendNanos writes a time as Unix nanoseconds, 0 for none, and as RFC
// 3339 text beyond what Unix nanoseconds hold.
func appendNanos(b []byte, at time.Time) []byte {
	switch {
	case at.IsZero():
		return append(b, '0')
	case at.Before(nanosFrom) || !at.Before(nanosUntil):
		return at.UTC().AppendFormat(b, time.RFC3339Nano)
	}
	return strconv.AppendInt(b, at.UnixNano(), 10)
}

// summaryReader is what reading lines keeps between columns and lines:
// the refs and sessions tasks point into, allocated in chunks as they are
// needed rather than one each, n being the header's task count.
type summaryReader struct {
	refs     []core.Ref
	sessions []core.SessionInfo
	n        int
	flags    string // the line's flags column
	bad      error  // the first bad time, reported once the line is read
}

// summaryTask fills t from one line's columns. A bad time is reported
// after the other columns, whose errors come first.
func (d *summaryReader) summaryTask(t *core.Task, cols []string) error {
	*t = core.Task{}
	d.flags, d.bad = "", nil
	for i := range summaryColumns {
		if err := d.readColumn(&summaryColumns[i], t, cols[i]); err != nil {
			return err
		}
	}
	// The stage is not a column: the columns hold all StageOf reads.
	t.Stage = core.StageOf(t)
	return d.bad
}

func (d *summaryReader) readColumn(c *summaryColumn, t *core.Task, s string) error {
	switch c.kind {
	case colText:
		*c.text(t) = unescape(s)
	case colFlags:
		d.flags = s
		for _, f := range summaryFlags {
			if f.on != nil && strings.IndexByte(s, f.letter) >= 0 {
				*f.on(t) = true
			}
		}
	case colTime:
		*c.time(t) = d.at(s)
	case colInt:
		v, err := strconv.Atoi(s)
		if err != nil {
			return fmt.Errorf("bad %s %q", c.label, s)
		}
		*c.int(t) = v
	case colRefKind:
		if strings.IndexByte(d.flags, c.flag) >= 0 {
			*c.ref(t) = d.newRef(core.RefKind(unescape(s)))
		}
	case colRefName:
		if a := *c.ref(t); a != nil {
			a.Name = unescape(s)
		}
	case colJSON:
		if s != "" {
			if err := c.get(t, []byte(unescape(s))); err != nil {
				return fmt.Errorf("%s: %w", c.label, err)
			}
		}
	case colSessionText, colSessionTime:
		d.readSessionColumn(c, t, s)
	case colUsage:
		if s != "" {
			if err := readSummaryUsage(t, unescape(s)); err != nil {
				return fmt.Errorf("usage: %w", err)
			}
		}
	}
	return nil
}

// readSessionColumn reads a session column of a line whose flags say it
// has one; its first column makes the session.
func (d *summaryReader) readSessionColumn(c *summaryColumn, t *core.Task, s string) {
	if t.Session == nil {
		if strings.IndexByte(d.flags, flagSession) < 0 {
			return
		}
		if d.sessions == nil || len(d.sessions) == cap(d.sessions) {
			d.sessions = make([]core.SessionInfo, 0, min(max(64, d.n/16), 4096))
		}
		d.sessions = append(d.sessions, core.SessionInfo{TaskID: t.ID})
		t.Session = &d.sessions[len(d.sessions)-1]
	}
	if c.kind == colSessionText {
		*c.sessionText(t.Session) = unescape(s)
	} else {
		*c.sessionTime(t.Session) = d.at(s)
	}
}

func (d *summaryReader) newRef(kind core.RefKind) *core.Ref {
	if len(d.refs) == cap(d.refs) {
		d.refs = make([]core.Ref, 0, min(max(64, d.n/8), 4096))
	}
	d.refs = append(d.refs, core.Ref{Kind: kind})
	return &d.refs[len(d.refs)-1]
}

// at reads a time column; a bad one is remembered in d.bad.
func (d *summaryReader) at(s string) time.Time {
	if s == "0" {
		return time.Time{}
	}
	if strings.IndexByte(s, 'T') >= 0 {
		v, err := time.Parse(time.RFC3339Nano, s)
		if err != nil && d.bad == nil {
			d.bad = fmt.Errorf("bad time %q", s)
		}
		return v.UTC()
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil && d.bad == nil {
		d.bad = fmt.Errorf("bad time %q", s)
	}
	return time.Unix(0, v).UTC()
}

func appendEscaped(b []byte, s string) []byte {
	start := 0
	for i := 0; i < len(s); i++ {
		var esc byte
		switch s[i] {
		case '\\':
			esc = '\\'
		case '\t':
			esc = 't'
		case '\n':
			esc = 'n'
		case '\r':
			esc = 'r'
		default:
			continue
		}
		b = append(b, s[start:i]...)
		b = append(b, '\\', esc)
		start = i + 1
	}
	return append(b, s[start:]...)
}

func unescape(s string) string {
	if strings.IndexByte(s, '\\') < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\\' && i+1 < len(s) {
			i++
			switch s[i] {
			case 't':
				c = '\t'
			case 'n':
				c = '\n'
			case 'r':
				c = '\r'
			default:
				c = s[i]
			}
		}
		b.WriteByte(c)
	}
	return b.String()
}
