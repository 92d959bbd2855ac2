package wire

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/kandev/kandev/core"
)

// The task summary is what a tree row shows of a task, for the TUI and
// the text `task list`: everything but the free text and the details a
// task's own view loads (description, directory, creator, session
// internals). It is not JSON: at 100,000 tasks, decoding JSON into
// []core.Task was most of the TUI's start and of the text list (see
// docs/decisions/0020-task-summary-encoding.md). One header line, then
// one line per task, fields separated by tabs, in SummaryFields order
// (the columns are declared once, in summary_columns.go);
// strings escape backslash, tab, newline and carriage return as \\ \t \n
// \r; times are Unix nanoseconds (0 for none; RFC 3339 text outside
// 1700–2200); the pending question, the stall, the blockers and the
// usage (spend and own budget), rare, are their JSON.

// flushAt is how much encoded output collects before it is written.
const flushAt = 256 * 1024

// SummaryHeader starts a summary; its last field is the task count.
const SummaryHeader = "#kandev-task-summary 2"

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
	// (summaryReader), not one each.
	d := summaryReader{n: n}
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
			if err := d.summaryTask(&tasks[len(tasks)-1], cols[:]); err != nil {
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

// ScanTaskSummaries decodes a summary one line at a time, calling fn with
// each task as it is decoded, so that a long listing is never held whole.
// The task and what it points to are reused for the next line: fn must
// copy what it keeps. count, when not nil, is told the header's task
// count first, to size what the caller builds.
func ScanTaskSummaries(r io.Reader, count func(n int), fn func(*core.Task) error) error {
	var t core.Task
	d := summaryReader{refs: make([]core.Ref, 0, 2), sessions: make([]core.SessionInfo, 0, 1)}
	var fnErr error
	err := scanSummaryLines(r, count, func(cols []string) error {
		d.refs, d.sessions = d.refs[:0], d.sessions[:0]
		if err := d.summaryTask(&t, cols); err != nil {
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
