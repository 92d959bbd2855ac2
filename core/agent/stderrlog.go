package agent

import (
	"bytes"
	"fmt"
	"io"
	"os"
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
	if path == "" {
		return ""
	}
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return ""
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
	all := strings.Split(strings.TrimSpace(string(b)), "\n")
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
