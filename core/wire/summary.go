package wire

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/kandev/kandev/core"
)

// The task summary is what a tree row shows of a task, for the TUI and
// the text `task list`: everything but the free text and the details a
// task's own view loads (description, directory, creator, session
// internals). It is not JSON: at 100,000 tasks, decoding JSON into
// []core.Task was most of the TUI's start and of the text list (see
// docs/decisions/0020-task-summary-encoding.md). One header line, then
// one line per task, fields separated by tabs, in SummaryFields order;
// strings escape backslash, tab, newline and carriage return as \\ \t \n
// \r; times are Unix nanoseconds (0 for none; RFC 3339 text outside
// 1700–2200); the pending question, the stall, the blockers and the
// usage (spend and own budget), rare, are their JSON.

// flushAt is how much encoded output collects before it is written.
const flushAt = 256 * 1024

// SummaryHeader starts a summary; its last field is the task count.
const SummaryHeader = "#kandev-task-summary 2"

// SummaryFields names the columns, in order (documentation and tests).
var SummaryFields = []string{"id", "parent_id", "status", "flags", "updated_at", "profile",
	"assignee.kind", "assignee.name", "handed_by.kind", "handed_by.name", "waiting", "blocked_by", "queued",
	"session.id", "session.role", "session.state", "session.created_at", "session.updated_at",
	"session.turn_started_at", "pending_question", "stalled", "usage", "title"}

// SummaryColumns is len(SummaryFields), as a constant for the decoder.
const SummaryColumns = 23

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

// Times in [nanosFrom, nanosUntil) are written as Unix nanoseconds, which
// hold them; others as RFC 3339 text.
var (
	nanosFrom  = time.Date(1700, 1, 1, 0, 0, 0, 0, time.UTC)
	nanosUntil = time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC)
)

// WriteTaskSummaries writes the summary of tasks.
func WriteTaskSummaries(w io.Writer, tasks []*core.Task) error {
	buf := make([]byte, 0, flushAt+8*1024)
	buf = append(buf, SummaryHeader...)
	buf = append(buf, ' ')
	buf = strconv.AppendInt(buf, int64(len(tasks)), 10)
	buf = append(buf, '\n')
	for _, t := range tasks {
		var err error
		if buf, err = appendSummary(buf, t); err != nil {
			return err
		}
		if len(buf) >= flushAt {
			if _, err := w.Write(buf); err != nil {
				return err
			}
			buf = buf[:0]
		}
	}
	_, err := w.Write(buf)
	return err
}

func appendSummary(b []byte, t *core.Task) ([]byte, error) {
	field := func(s string) {
		b = appendEscaped(b, s)
		b = append(b, '\t')
	}
	nanos := func(at time.Time) {
		switch {
		case at.IsZero():
			b = append(b, '0')
		case at.Before(nanosFrom) || !at.Before(nanosUntil):
			// Beyond what Unix nanoseconds hold: the time as text.
			b = at.UTC().AppendFormat(b, time.RFC3339Nano)
		default:
			b = strconv.AppendInt(b, at.UnixNano(), 10)
		}
		b = append(b, '\t')
	}
	ref := func(a *core.Ref) {
		if a != nil {
			field(string(a.Kind))
			field(a.Name)
		} else {
			b = append(b, '\t', '\t')
		}
	}
	jsonField := func(v any, present bool) error {
		if present {
			j, err := json.Marshal(v)
			if err != nil {
				return fmt.Errorf("summary of task %s: %w", t.ID, err)
			}
			b = appendEscaped(b, string(j))
		}
		b = append(b, '\t')
		return nil
	}
	field(t.ID)
	field(t.ParentID)
	field(string(t.Status))
	flag := func(on bool, c byte) {
		if on {
			b = append(b, c)
		}
	}
	flag(t.Autopilot, flagAutopilot)
	flag(t.Halted, flagHalted)
	flag(t.Archived, flagArchived)
	flag(t.YourTurn, flagYourTurn)
	flag(t.TitlePending, flagTitlePend)
	flag(t.Assignee != nil, flagAssignee)
	flag(t.HandedBy != nil, flagHandedBy)
	flag(t.Session != nil, flagSession)
	flag(t.Interrupted, flagInterrupt)
	b = append(b, '\t')
	nanos(t.UpdatedAt)
	field(t.Profile)
	ref(t.Assignee)
	ref(t.HandedBy)
	field(t.Waiting)
	if err := jsonField(t.BlockedBy, len(t.BlockedBy) > 0); err != nil {
		return nil, err
	}
	b = strconv.AppendInt(b, int64(t.Queued), 10)
	b = append(b, '\t')
	if s := t.Session; s != nil {
		field(s.ID)
		field(s.Role)
		field(string(s.State))
		nanos(s.CreatedAt)
		nanos(s.UpdatedAt)
		nanos(s.TurnStartedAt)
	} else {
		b = append(b, "\t\t\t0\t0\t0\t"...)
	}
	if err := jsonField(t.PendingQuestion, t.PendingQuestion != nil); err != nil {
		return nil, err
	}
	if err := jsonField(t.Stalled, t.Stalled != nil); err != nil {
		return nil, err
	}
	if t.Usage != nil || t.Budget != nil {
		var err error
		if b, err = appendSummaryUsage(b, t); err != nil {
			return nil, err
		}
	}
	b = append(b, '\t')
	b = appendEscaped(b, t.Title)
	b = append(b, '\n')
	return b, nil
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

// ReadTaskSummaries decodes a summary into tasks holding only the summary's
// fields. Each line becomes one string that the task's fields share. When
// first is not nil it gets the first n tasks as soon as they are decoded
// (all of them, at the end, when there are fewer).
func ReadTaskSummaries(r io.Reader, n int, first func([]core.Task)) ([]core.Task, error) {
	early := n
	tell := func(tasks []core.Task) {
		if first != nil {
			first(tasks[:len(tasks):len(tasks)])
			first = nil
		}
	}
	br := bufio.NewReaderSize(r, 256*1024)
	head, err := br.ReadString('\n')
	if err != nil {
		return nil, fmt.Errorf("read task summary: %w", err)
	}
	count, ok := strings.CutPrefix(strings.TrimSuffix(head, "\n"), SummaryHeader+" ")
	n, convErr := strconv.Atoi(count)
	if !ok || convErr != nil || n < 0 {
		return nil, fmt.Errorf("read task summary: unknown header %q", strings.TrimSpace(head))
	}
	tasks := make([]core.Task, 0, n)
	// Assignees and sessions are allocated in chunks as tasks need them
	// (summaryTask), not one each.
	var refs []core.Ref
	var sessions []core.SessionInfo
	var cols [SummaryColumns]string
	for {
		line, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			// A line longer than the buffer (a huge title or question).
			rest, err2 := br.ReadBytes('\n')
			line = append(append([]byte(nil), line...), rest...)
			err = err2
		}
		if len(line) > 0 {
			if line[len(line)-1] != '\n' {
				return nil, fmt.Errorf("read task summary: truncated line after %d tasks", len(tasks))
			}
			s := string(line[:len(line)-1])
			if strings.Count(s, "\t") != len(cols)-1 {
				return nil, fmt.Errorf("read task summary: line %d has %d fields, want %d", len(tasks)+2, strings.Count(s, "\t")+1, len(cols))
			}
			for i := range len(cols) - 1 {
				j := strings.IndexByte(s, '\t')
				cols[i], s = s[:j], s[j+1:]
			}
			cols[len(cols)-1] = s
			if len(tasks) == cap(tasks) {
				return nil, fmt.Errorf("read task summary: more tasks than the header's %d", n)
			}
			tasks = append(tasks, core.Task{})
			if err := summaryTask(&tasks[len(tasks)-1], cols[:], &refs, &sessions, n); err != nil {
				return nil, fmt.Errorf("read task summary: line %d: %w", len(tasks)+1, err)
			}
			if len(tasks) == early {
				tell(tasks)
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read task summary: %w", err)
		}
	}
	if len(tasks) != n {
		return nil, fmt.Errorf("read task summary: %d tasks, header says %d", len(tasks), n)
	}
	tell(tasks)
	return tasks, nil
}

// summaryTask fills t from one line's columns. t is in the caller's slab:
// nothing here may take its address for an interface (json.Unmarshal),
// or every task would escape to the heap on its own.
func summaryTask(t *core.Task, c []string, refs *[]core.Ref, sessions *[]core.SessionInfo, n int) error {
	var bad error
	at := func(s string) time.Time {
		if s == "0" {
			return time.Time{}
		}
		if strings.IndexByte(s, 'T') >= 0 {
			v, err := time.Parse(time.RFC3339Nano, s)
			if err != nil && bad == nil {
				bad = fmt.Errorf("bad time %q", s)
			}
			return v.UTC()
		}
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil && bad == nil {
			bad = fmt.Errorf("bad time %q", s)
		}
		return time.Unix(0, v).UTC()
	}
	flags := c[3]
	ref := func(flag byte, kind, name string) *core.Ref {
		if strings.IndexByte(flags, flag) < 0 {
			return nil
		}
		if len(*refs) == cap(*refs) {
			*refs = make([]core.Ref, 0, min(max(64, n/8), 4096))
		}
		*refs = append(*refs, core.Ref{Kind: core.RefKind(unescape(kind)), Name: unescape(name)})
		return &(*refs)[len(*refs)-1]
	}
	*t = core.Task{ID: unescape(c[0]), ParentID: unescape(c[1]), Status: core.Status(unescape(c[2])), UpdatedAt: at(c[4]),
		Profile: unescape(c[5]), Assignee: ref(flagAssignee, c[6], c[7]), HandedBy: ref(flagHandedBy, c[8], c[9]),
		Waiting: unescape(c[10]), Title: unescape(c[22])}
	for i := 0; i < len(c[3]); i++ {
		switch c[3][i] {
		case flagAutopilot:
			t.Autopilot = true
		case flagHalted:
			t.Halted = true
		case flagArchived:
			t.Archived = true
		case flagYourTurn:
			t.YourTurn = true
		case flagTitlePend:
			t.TitlePending = true
		case flagInterrupt:
			t.Interrupted = true
		}
	}
	if c[11] != "" {
		var blocked []string
		if err := json.Unmarshal([]byte(unescape(c[11])), &blocked); err != nil {
			return fmt.Errorf("blocked_by: %w", err)
		}
		t.BlockedBy = blocked
	}
	q, err := strconv.Atoi(c[12])
	if err != nil {
		return fmt.Errorf("bad queue length %q", c[12])
	}
	t.Queued = q
	if strings.IndexByte(flags, flagSession) >= 0 {
		if *sessions == nil || len(*sessions) == cap(*sessions) {
			*sessions = make([]core.SessionInfo, 0, min(max(64, n/16), 4096))
		}
		*sessions = append(*sessions, core.SessionInfo{ID: unescape(c[13]), TaskID: t.ID, Role: unescape(c[14]),
			State: core.SessionState(unescape(c[15])), CreatedAt: at(c[16]), UpdatedAt: at(c[17]), TurnStartedAt: at(c[18])})
		t.Session = &(*sessions)[len(*sessions)-1]
	}
	if c[19] != "" {
		var pq core.QuestionInfo
		if err := json.Unmarshal([]byte(unescape(c[19])), &pq); err != nil {
			return fmt.Errorf("pending question: %w", err)
		}
		t.PendingQuestion = &pq
	}
	if c[20] != "" {
		var st core.Stall
		if err := json.Unmarshal([]byte(unescape(c[20])), &st); err != nil {
			return fmt.Errorf("stall: %w", err)
		}
		t.Stalled = &st
	}
	if c[21] != "" {
		if err := readSummaryUsage(t, unescape(c[21])); err != nil {
			return fmt.Errorf("usage: %w", err)
		}
	}
	return bad
}

// ScanTaskSummaries decodes a summary one line at a time, calling fn with
// each task as it is decoded, so that a long listing is never held whole.
// The task and what it points to are reused for the next line: fn must
// copy what it keeps. count, when not nil, is told the header's task
// count first, to size what the caller builds.
func ScanTaskSummaries(r io.Reader, count func(n int), fn func(*core.Task) error) error {
	var t core.Task
	refs := make([]core.Ref, 0, 2)
	sessions := make([]core.SessionInfo, 0, 1)
	var fnErr error
	err := scanSummaryLines(r, count, func(cols []string) error {
		refs, sessions = refs[:0], sessions[:0]
		if err := summaryTask(&t, cols, &refs, &sessions, 0); err != nil {
			return err
		}
		fnErr = fn(&t)
		return fnErr
	})
	if fnErr != nil {
		// The caller's own error (a closed pipe, enough rows), not the
		// summary's: returned as it was.
		return fnErr
	}
	return err
}

// scanSummaryLines reads a summary's header (passing its count to head)
// and gives each line's columns to line, in order, checking the count.
func scanSummaryLines(r io.Reader, head func(n int), line func(cols []string) error) error {
	br := bufio.NewReaderSize(r, 256*1024)
	first, err := br.ReadString('\n')
	if err != nil {
		return fmt.Errorf("read task summary: %w", err)
	}
	count, ok := strings.CutPrefix(strings.TrimSuffix(first, "\n"), SummaryHeader+" ")
	n, convErr := strconv.Atoi(count)
	if !ok || convErr != nil || n < 0 {
		return fmt.Errorf("read task summary: unknown header %q", strings.TrimSpace(first))
	}
	if head != nil {
		head(n)
	}
	var cols [SummaryColumns]string
	got := 0
	for {
		b, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			// A line longer than the buffer (a huge title or question).
			rest, err2 := br.ReadBytes('\n')
			b = append(append([]byte(nil), b...), rest...)
			err = err2
		}
		if len(b) > 0 {
			if b[len(b)-1] != '\n' {
				return fmt.Errorf("read task summary: truncated line after %d tasks", got)
			}
			s := string(b[:len(b)-1])
			whole := s
			for i := range len(cols) - 1 {
				j := strings.IndexByte(s, '\t')
				if j < 0 {
					return fmt.Errorf("read task summary: line %d has %d fields, want %d", got+2, strings.Count(whole, "\t")+1, len(cols))
				}
				cols[i], s = s[:j], s[j+1:]
			}
			if strings.IndexByte(s, '\t') >= 0 {
				return fmt.Errorf("read task summary: line %d has %d fields, want %d", got+2, strings.Count(whole, "\t")+1, len(cols))
			}
			cols[len(cols)-1] = s
			got++
			if err := line(cols[:]); err != nil {
				return fmt.Errorf("read task summary: line %d: %w", got+1, err)
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("read task summary: %w", err)
		}
	}
	if got != n {
		return fmt.Errorf("read task summary: %d tasks, header says %d", got, n)
	}
	return nil
}
