package mockagent

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	acp "github.com/coder/acp-go-sdk"
)

// Behaviours of hostile or broken agents, for kandev's tests of its own
// limits: a huge line, a stderr flood, a notification burst, helpers that
// outlive the agent, an agent that ignores signals.

// sleeperEnv makes `kandev mock-agent` a process that only sleeps: the
// helper `mock: spawn-child` and `mock: spawn-setsid` start.
const sleeperEnv = "KANDEV_MOCK_SLEEPER"

// stubbornEnv makes the mock (and its helpers) ignore SIGINT and SIGTERM
// and keep running after its input closes: only SIGKILL ends it.
const stubbornEnv = "KANDEV_MOCK_STUBBORN"

// lingerEnv makes the mock keep running after its stdin closes, as Codex
// and Gemini CLI do; unlike stubbornEnv, SIGINT and SIGTERM still end it.
const lingerEnv = "KANDEV_MOCK_LINGER"

// parseSize reads a byte count: 123, 64K, 256M, 1G (powers of 1024).
func parseSize(s string) (int64, error) {
	s = strings.TrimSpace(strings.ToUpper(s))
	mult := int64(1)
	switch {
	case strings.HasSuffix(s, "K"):
		mult, s = 1<<10, strings.TrimSuffix(s, "K")
	case strings.HasSuffix(s, "M"):
		mult, s = 1<<20, strings.TrimSuffix(s, "M")
	case strings.HasSuffix(s, "G"):
		mult, s = 1<<30, strings.TrimSuffix(s, "G")
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("invalid size %q", s)
	}
	return n * mult, nil
}

// hugeline writes one line of size bytes on the ACP stream, in chunks, so
// the mock's own memory stays small. The line starts like a JSON-RPC
// notification and never ends as one.
func (t *turn) hugeline(arg string) {
	size, err := parseSize(arg)
	if err != nil {
		t.sayf("error mock: hugeline: %v", err)
		return
	}
	head := []byte(`{"jsonrpc":"2.0","method":"_mock/pad","params":"`)
	err = t.a.out.writeLocked(func(w io.Writer) error {
		if _, err := w.Write(head); err != nil {
			return err
		}
		return writeFill(w, size-int64(len(head))-1, 'a', 0)
	})
	if err == nil {
		err = t.a.out.writeLocked(func(w io.Writer) error { _, err := w.Write([]byte("\n")); return err })
	}
	if err != nil {
		t.a.logger.Debug("hugeline", "err", err)
	}
}

// stderrflood writes size bytes to stderr in lines of 1 KiB, then says so.
func (t *turn) stderrflood(arg string) {
	size, err := parseSize(arg)
	if err != nil {
		t.sayf("error mock: stderrflood: %v", err)
		return
	}
	if err := writeFill(t.a.errOut, size, 'e', 1024); err != nil {
		t.sayf("error mock: stderrflood: %v", err)
		return
	}
	t.sayf("stderrflood: wrote %d bytes", size)
}

// writeFill writes n bytes of c through one 64 KiB buffer; every lineLen
// bytes (when lineLen > 0) one of them is a newline.
func writeFill(w io.Writer, n int64, c byte, lineLen int) error {
	buf := make([]byte, 64*1024)
	for i := range buf {
		buf[i] = c
		if lineLen > 0 && (i+1)%lineLen == 0 {
			buf[i] = '\n'
		}
	}
	for n > 0 {
		chunk := buf
		if int64(len(chunk)) > n {
			chunk = chunk[:n]
		}
		if _, err := w.Write(chunk); err != nil {
			return err
		}
		n -= int64(len(chunk))
	}
	return nil
}

// burst sends n agent message chunks back to back ("0 ", "1 ", ...), then
// says how many it sent.
func (t *turn) burst(arg string) {
	n, err := strconv.Atoi(strings.TrimSpace(arg))
	if err != nil || n < 0 {
		t.sayf("error mock: burst: invalid count %q", arg)
		return
	}
	for i := 0; i < n; i++ {
		if t.ctx.Err() != nil {
			return
		}
		t.update(acp.UpdateAgentMessageText(strconv.Itoa(i) + " "))
	}
	t.sayf("\nburst: sent %d", n)
}

// floodChunk is the text `mock: flood` streams, a chunk at a time.
var floodChunk = strings.Repeat("flood text ", 93) + "\n" // 1 KiB

// flood is `mock: flood SIZE`: SIZE bytes of agent text (K, M, G: powers
// of 1024), streamed as fast as the client reads, in 1 KiB message
// chunks, until sent or the turn is cancelled; then `flood: sent N
// bytes`. A runaway turn that reports no usage while it runs.
func (t *turn) flood(arg string) {
	size, err := parseSize(strings.TrimSpace(arg))
	if err != nil || size <= 0 {
		t.sayf("error mock: flood: invalid size %q", arg)
		return
	}
	var n int64
	for n < size {
		if t.ctx.Err() != nil {
			return
		}
		c := floodChunk
		if left := size - n; left < int64(len(c)) {
			c = c[:left]
		}
		t.update(acp.UpdateAgentMessageText(c))
		n += int64(len(c))
	}
	t.sayf("flood: sent %d bytes", n)
}

// burstThink is burst for thought chunks ("t0 ", "t1 ", ...).
func (t *turn) burstThink(arg string) {
	n, err := strconv.Atoi(strings.TrimSpace(arg))
	if err != nil || n < 0 {
		t.sayf("error mock: burst-think: invalid count %q", arg)
		return
	}
	for i := 0; i < n; i++ {
		if t.ctx.Err() != nil {
			return
		}
		t.update(acp.UpdateAgentThoughtText("t" + strconv.Itoa(i) + " "))
	}
	t.sayf("burst-think: sent %d", n)
}

// toolStream reports a local tool call whose output streams: n updates,
// each carrying the whole output so far ("o0 ", "o1 ", ...), as ACP's
// content replaces the call's content, then the call completed.
func (t *turn) toolStream(arg string) {
	n, err := strconv.Atoi(strings.TrimSpace(arg))
	if err != nil || n < 0 {
		t.sayf("error mock: tool-stream: invalid count %q", arg)
		return
	}
	id := t.nextToolCallID()
	t.update(acp.StartToolCall(id, "streaming tool",
		acp.WithStartKind(acp.ToolKindExecute),
		acp.WithStartStatus(acp.ToolCallStatusInProgress)))
	var out strings.Builder
	for i := 0; i < n; i++ {
		if t.ctx.Err() != nil {
			return
		}
		out.WriteString("o" + strconv.Itoa(i) + " ")
		t.update(acp.UpdateToolCall(id, acp.WithUpdateStatus(acp.ToolCallStatusInProgress),
			acp.WithUpdateContent([]acp.ToolCallContent{acp.ToolContent(acp.TextBlock(out.String()))})))
	}
	t.update(acp.UpdateToolCall(id, acp.WithUpdateStatus(acp.ToolCallStatusCompleted)))
	t.sayf("tool-stream: sent %d", n)
}

// stream sends RATE agent message chunks a second for DURATION, each
// "@" and the wall clock in Unix nanoseconds on a line of its own, so a
// follower can tell how long a chunk took to reach it; then it says how
// many it sent.
func (t *turn) stream(arg string) error {
	rateS, durS, _ := strings.Cut(strings.TrimSpace(arg), " ")
	rate, err := strconv.Atoi(rateS)
	d, derr := time.ParseDuration(strings.TrimSpace(durS))
	if err != nil || rate <= 0 || derr != nil || d < 0 {
		t.sayf("error mock: stream: want RATE DURATION, got %q", arg)
		return nil
	}
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	end := time.NewTimer(d)
	defer end.Stop()
	// Each chunk is the SDK's own encoding of the notification, written
	// from a template: fifty mocks marshalling through the SDK took 1.5 of
	// the bench machine's two cores, and the daemon they load waited for
	// one with them.
	sid, _ := json.Marshal(string(t.sid))
	head := append(append([]byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":`), sid...), `,"update":{"content":{"text":"@`...)
	tail := []byte(`\n","type":"text"},"sessionUpdate":"agent_message_chunk"}}}` + "\n")
	line := make([]byte, 0, len(head)+20+len(tail))
	n := 0
	for {
		select {
		case <-t.ctx.Done():
			return t.ctx.Err()
		case <-end.C:
			t.sayf("stream: sent %d", n)
			return nil
		case <-tick.C:
			line = append(strconv.AppendInt(append(line[:0], head...), time.Now().UnixNano(), 10), tail...)
			if err := t.a.out.writeLocked(func(w io.Writer) error { _, err := w.Write(line); return err }); err != nil {
				t.a.logger.Debug("stream", "err", err)
			}
			n++
		}
	}
}

// replayBurst sends n agent message chunks for session/load to replay.
func (a *agent) replayBurst(sid acp.SessionId, n int) {
	for i := 0; i < n; i++ {
		u := acp.UpdateAgentMessageText("replay " + strconv.Itoa(i) + "\n")
		if err := a.conn.SessionUpdate(a.base, acp.SessionNotification{SessionId: sid, Update: u}); err != nil {
			a.logger.Debug("replay", "err", err)
			return
		}
	}
}

// spawn starts a helper, `kandev mock-agent` as a sleeper, that inherits
// the agent's environment (and with it KANDEV_SESSION_ID). With setsid it
// leaves the agent's process group and session, as a daemonising tool
// would. It is never waited for: it outlives the agent unless killed.
func (t *turn) spawn(setsid bool) {
	exe, err := os.Executable()
	if err != nil {
		t.sayf("error mock: spawn: %v", err)
		return
	}
	cmd := exec.Command(exe, "mock-agent")
	cmd.Env = append(os.Environ(), sleeperEnv+"=1")
	if setsid {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	}
	if err := cmd.Start(); err != nil {
		t.sayf("error mock: spawn: %v", err)
		return
	}
	t.sayf("spawned: pid %d", cmd.Process.Pid)
	go func() { _ = cmd.Wait() }() // reap it if the agent lives longer
}

// sleepForever never returns: the sleeper helper, and a stubborn agent
// once its input closed.
func sleepForever() {
	for {
		time.Sleep(time.Hour)
	}
}

// beStubborn ignores SIGINT and SIGTERM when KANDEV_MOCK_STUBBORN=1 and
// reports whether it did.
func beStubborn(getenv func(string) string) bool {
	if getenv(stubbornEnv) != "1" {
		return false
	}
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM)
	return true
}

// waitFile blocks until the file at path exists (or the turn is
// cancelled): a test's gate that needs no timing.
func (t *turn) waitFile(path string) error {
	for {
		if _, err := os.Stat(path); err == nil {
			return nil
		}
		if err := sleep(t.ctx, 20*time.Millisecond); err != nil {
			return err
		}
	}
}
