package agent

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
)

// DefaultLogLimit caps each generation of a session's stderr log.
const DefaultLogLimit = 8 << 20

// capLog is a session's stderr log: once a file reaches its limit it
// becomes path+".1" and a new one starts, so the newest output (the part
// a failure reason shows) is always kept and the disk use is bounded.
type capLog struct {
	path    string
	limit   int64
	f       *os.File
	written int64
}

func openCapLog(path string, limit int64) (*capLog, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("agent log %s: %w", path, err)
	}
	l := &capLog{path: path, limit: limit, f: f}
	if st, err := f.Stat(); err == nil {
		l.written = st.Size()
	}
	return l, nil
}

func (l *capLog) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		if l.f == nil {
			return n, nil // rotation failed: drop the rest rather than block the agent
		}
		if l.written >= l.limit {
			l.rotate()
			continue
		}
		chunk := p
		if room := l.limit - l.written; int64(len(chunk)) > room {
			chunk = chunk[:room]
		}
		w, err := l.f.Write(chunk)
		l.written += int64(w)
		if err != nil {
			// A full disk: drop the output, keep the agent running.
			l.written = l.limit
		}
		p = p[len(chunk):]
	}
	return n, nil
}

func (l *capLog) rotate() {
	l.f.Close()
	l.f = nil
	_ = os.Rename(l.path, l.path+".1")
	f, err := os.OpenFile(l.path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return
	}
	l.f = f
	note := fmt.Sprintf("[kandev: stderr reached %d bytes; the previous %d bytes are in %s.1, older output was dropped]\n",
		l.limit, l.limit, l.path)
	w, _ := f.WriteString(note)
	l.written = int64(w)
}

func (l *capLog) Close() {
	if l.f != nil {
		l.f.Close()
	}
}

// copyBounded copies the agent's stderr into the log with one small buffer
// until EOF, whatever the volume.
func copyBounded(dst io.Writer, src io.Reader) {
	buf := make([]byte, 32*1024)
	_, _ = io.CopyBuffer(struct{ io.Writer }{dst}, struct{ io.Reader }{src}, buf)
}

// logTailBytes is how much of the end of a log logTail reads.
const logTailBytes = 16 * 1024

// logTail returns the last lines of a log, reading only its end.
func logTail(path string, lines int) string {
	all := logLines(path)
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	// Each line is cut on its own, so one long line cannot push the last
	// words out of the reason.
	for i := range all {
		all[i] = truncate(all[i], 400/lines)
	}
	return strings.Join(all, " | ")
}

// logLines are the lines of a log's last logTailBytes, whole.
func logLines(path string) []string {
	if path == "" {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil
	}
	off := st.Size() - logTailBytes
	if off < 0 {
		off = 0
	}
	b := make([]byte, st.Size()-off)
	n, _ := f.ReadAt(b, off)
	b = b[:n]
	if off > 0 {
		// The first line is probably cut; drop it when more follow.
		if i := bytes.IndexByte(b, '\n'); i >= 0 && i < len(b)-1 {
			b = b[i+1:]
		}
	}
	if t := strings.TrimSpace(string(b)); t != "" {
		return strings.Split(t, "\n")
	}
	return nil
}

// logCause is the first line of a log's end that says what went wrong
// ("Error: Cannot find module 'x'", "bwrap: Can't find source path …",
// Python's closing "ModuleNotFoundError: …"), cut to a reason's length;
// "" when no line does. A crash's tail is mostly stack frames and the
// runtime's banner (" } |  | Node.js v20"): the cause is above them.
func logCause(path string) string {
	lines := logLines(path)
	if i := pythonCause(lines); i >= 0 {
		return truncate(strings.TrimSpace(lines[i]), 300)
	}
	for _, l := range lines {
		if l = strings.TrimSpace(l); causeLine(l) {
			return truncate(l, 300)
		}
	}
	return ""
}

// pythonCause is the index of a traceback's last line (the exception),
// or -1 without a traceback.
func pythonCause(lines []string) int {
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "Traceback (most recent call last)") {
			for j := len(lines) - 1; j > i; j-- {
				if l := strings.TrimSpace(lines[j]); l != "" && !strings.HasPrefix(lines[j], " ") {
					return j
				}
			}
		}
	}
	return -1
}

// causeWords mark a line that states a failure.
var causeWords = []string{"error", "fatal", "panic", "cannot", "can't", "not found", "no such", "denied", "refused", "failed", "unable", "missing", "invalid"}

func causeLine(l string) bool {
	if l == "" || strings.HasPrefix(l, "at ") || strings.HasPrefix(l, "File \"") || strings.HasPrefix(l, "Traceback") {
		return false
	}
	low := strings.ToLower(l)
	for _, w := range causeWords {
		if strings.Contains(low, w) {
			return true
		}
	}
	return false
}

// stderrPipe is the agent's stderr on its way to its log: the pipe's two
// ends and the log. Nil when the spec asks for no log.
type stderrPipe struct {
	log  *capLog
	r, w *os.File
}

// pipeStderr points cmd's stderr at a pipe the daemon copies into a
// capped, rotated log (spec.LogPath): written straight to a file, a
// flooding agent could fill the disk. Without a LogPath it returns nil and
// leaves cmd's stderr alone.
func pipeStderr(cmd *exec.Cmd, spec Spec) (*stderrPipe, error) {
	if spec.LogPath == "" {
		return nil, nil
	}
	limit := spec.LogLimit
	if limit <= 0 {
		limit = DefaultLogLimit
	}
	log, err := openCapLog(spec.LogPath, limit)
	if err != nil {
		return nil, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		log.Close()
		return nil, fmt.Errorf("agent stderr: %w", err)
	}
	cmd.Stderr = w
	return &stderrPipe{log: log, r: r, w: w}, nil
}

// abandon closes everything of a pipe whose process never started.
func (s *stderrPipe) abandon() {
	if s == nil {
		return
	}
	s.log.Close()
	s.r.Close()
	s.w.Close()
}

// copyStderr copies the started agent's stderr into its log until EOF and
// then closes stderrDone; with no log, stderrDone is closed at once.
func (r *Run) copyStderr(s *stderrPipe) {
	if s == nil {
		close(r.stderrDone)
		return
	}
	s.w.Close() // the child holds its own copy
	go func() {
		defer close(r.stderrDone)
		defer s.log.Close()
		copyBounded(s.log, s.r)
		s.r.Close()
	}()
}
