package agent

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// repeat is an endless reader of one byte.
type repeat byte

func (r repeat) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r)
	}
	return len(p), nil
}

func newGuard(r io.Reader) (*lineGuard, *[]string) {
	var faults []string
	g := &lineGuard{r: bufio.NewReaderSize(r, 64*1024), onGarbage: func(string) {},
		onFault: func(s string) { faults = append(faults, s) }, flow: newFlow(), ready: make(chan struct{})}
	close(g.ready)
	return g, &faults
}

// A line longer than MaxLine ends the stream with a fault after reading at
// most MaxLine of it, however long the line is (here: endless).
func TestLineGuardRefusesLongLine(t *testing.T) {
	counted := &countReader{r: repeat('a')}
	g, faults := newGuard(counted)
	_, err := io.Copy(io.Discard, g)
	if err != errLineTooLong {
		t.Fatalf("read error %v, want errLineTooLong", err)
	}
	if len(*faults) != 1 || !strings.Contains((*faults)[0], "agent wrote a line over 10 MiB") {
		t.Fatalf("faults %q", *faults)
	}
	if counted.n > MaxLine+1+64*1024 {
		t.Fatalf("read %d bytes of the line, want at most the limit and one buffer", counted.n)
	}
}

// Lines up to the SDK's limit pass whole.
func TestLineGuardPassesLineAtLimit(t *testing.T) {
	line := `{"jsonrpc":"2.0","id":1,"result":"` + strings.Repeat("x", MaxLine-36) + `"}`
	if len(line) != MaxLine {
		t.Fatalf("test line is %d bytes, want %d", len(line), MaxLine)
	}
	g, faults := newGuard(strings.NewReader(line + "\n" + `{"jsonrpc":"2.0","id":2,"result":null}` + "\n"))
	out, err := io.ReadAll(g)
	if err != nil || len(*faults) != 0 {
		t.Fatalf("err %v faults %q", err, *faults)
	}
	if !bytes.HasPrefix(out, []byte(line+"\n")) || !bytes.HasSuffix(out, []byte(`"id":2,"result":null}`+"\n")) {
		t.Fatalf("lines did not pass whole (%d bytes out)", len(out))
	}
}

type countReader struct {
	r io.Reader
	n int
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// The stderr log rotates at its limit: two generations at most, the newest
// output kept, a note saying what happened.
func TestCapLogRotates(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.log")
	l, err := openCapLog(path, 1000)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 50; i++ {
		if _, err := l.Write(bytes.Repeat([]byte{'a' + byte(i%26)}, 99)); err != nil {
			t.Fatal(err)
		}
		l.Write([]byte("\n"))
	}
	l.Write([]byte("the end\n"))
	l.Close()
	cur, _ := os.ReadFile(path)
	old, _ := os.ReadFile(path + ".1")
	if len(cur) > 1000 || len(old) > 1000 || len(old) == 0 {
		t.Fatalf("generations of %d and %d bytes, want each at most 1000", len(cur), len(old))
	}
	if !strings.HasPrefix(string(cur), "[kandev: stderr reached 1000 bytes") || !strings.HasSuffix(string(cur), "the end\n") {
		t.Fatalf("current log %q", cur)
	}
}

// The tail of a log comes from its end, each line cut on its own.
func TestLogTailReadsTheEnd(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.log")
	big := strings.Repeat(strings.Repeat("e", 1023)+"\n", 4096) + "last words\n"
	if err := os.WriteFile(path, []byte(big), 0o600); err != nil {
		t.Fatal(err)
	}
	tail := logTail(path, 3)
	if !strings.HasSuffix(tail, " | last words") || len(tail) > 450 {
		t.Fatalf("tail %q", tail)
	}
}

// An agent's failure names its cause, the line above the stack and the
// runtime's banner, not their tail (" } |  | Node.js v20").
func TestLogCause(t *testing.T) {
	for name, c := range map[string]struct{ log, want string }{
		"node": {"node:internal/modules/cjs/loader:1228\n  throw err;\n  ^\n\nError: Cannot find module '@anthropic-ai/claude-agent-sdk'\nRequire stack:\n- /p/node_modules/x/dist/index.js\n    at Module._resolveFilename (node:internal/modules/cjs/loader:1225:15)\n    at Module._load (node:internal/modules/cjs/loader:1051:27) {\n  code: 'MODULE_NOT_FOUND',\n  requireStack: [ '/p/node_modules/x/dist/index.js' ]\n}\n\nNode.js v20.20.2\n",
			"Error: Cannot find module '@anthropic-ai/claude-agent-sdk'"},
		"bwrap":  {"bwrap: Can't find source path /w/sub/.git: No such file or directory\n", "bwrap: Can't find source path /w/sub/.git: No such file or directory"},
		"python": {"Traceback (most recent call last):\n  File \"/x/agent.py\", line 3, in <module>\n    import acp\nModuleNotFoundError: No module named 'acp'\n", "ModuleNotFoundError: No module named 'acp'"},
		"none":   {"starting\nlistening on stdio\n", ""},
	} {
		path := filepath.Join(t.TempDir(), "s.log")
		if err := os.WriteFile(path, []byte(c.log), 0o600); err != nil {
			t.Fatal(err)
		}
		if got := logCause(path); got != c.want {
			t.Errorf("%s: cause %q, want %q", name, got, c.want)
		}
	}
}
