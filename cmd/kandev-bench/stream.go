//go:build linux

package main

// Streaming: what an agent's streamed output costs the daemon (ADR 0050),
// as whole processes of the real binary, daemon and mock agents.
//
//   - burst: one agent sends N message chunks back to back (`mock: burst
//     N`); the daemon's bytes written (/proc/PID/io write_bytes, what
//     reached the disk's page cache, and wchar, every write(2) including
//     its sockets), its CPU time and the wall time from the create to the
//     turn's end (every chunk recorded by then), beside the text's size.
//   - load: A agents streaming R chunks a second each (`mock: stream R
//     D`), each chunk the agent's clock, while a TUI (on a pty) and a
//     `task log --follow` watch the first task: the daemon's CPU and RSS,
//     each follower's lag from the agent's write to its output, and `task
//     show --json` and an MCP tools/call (get_task_kandev, one `kandev mcp`
//     on the external surface) timed every 200 ms during the load.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/daemon/daemontest"
	"github.com/kandev/kandev/core/daemonclient"
)

// streamHome is an empty home with its own daemon, for the streaming runs.
func streamHome(work, name string, b binary) (*home, error) {
	dir, err := os.MkdirTemp(work, name+"-")
	if err != nil {
		return nil, err
	}
	env := append(cleanEnv(), "KANDEV_HOME="+dir, "KANDEV_CONFIG="+filepath.Join(dir, "config.toml"),
		"KANDEV_PROFILE=mock", "KANDEV_MOCK_STATE_DIR="+filepath.Join(dir, "mock-state"), "TERM=xterm-256color",
		// A turn that ends without a handoff stalls to the operator; the
		// bench does not wait on the grace a question gets.
		"KANDEV_QUESTION_TURN_GRACE=300ms")
	h := &home{bin: b, dir: dir, env: env}
	if _, err := h.start(); err != nil {
		return nil, err
	}
	if _, err := h.settle(); err != nil {
		h.stop()
		return nil, err
	}
	return h, nil
}

// procIO reads a process's write counters: wchar (every byte handed to
// write(2), sockets included) and write_bytes (bytes it dirtied in files,
// what the disk is sent).
func procIO(pid int) (wchar, writeBytes int64) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return 0, 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(l, ": ")
		n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		switch k {
		case "wchar":
			wchar = n
		case "write_bytes":
			writeBytes = n
		}
	}
	return wchar, writeBytes
}

func rssKiB(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.Fields(v)[0], 10, 64)
			return n
		}
	}
	return 0
}

type burstResult struct {
	text          int // bytes of the entry
	wchar, writes int64
	cpu, wall     time.Duration
}

// burstOnce runs one agent's `mock: burst n` turn against a fresh daemon.
func burstOnce(work string, b binary, n int) (burstResult, error) {
	h, err := streamHome(work, fmt.Sprintf("burst-%d", n), b)
	if err != nil {
		return burstResult{}, err
	}
	defer h.stop()
	c := daemonclient.Dial(core.Home{Dir: h.dir}.Socket())
	defer c.Close()
	ctx := context.Background()
	pid := h.daemon.Process.Pid
	// The agent starts and waits at a gate, so that what is measured is
	// the burst alone, not the agent's start.
	gate := filepath.Join(h.dir, "gate")
	task, err := c.CreateTask(ctx, api.CreateTaskInput{Title: "burst", Prompt: fmt.Sprintf("mock: waitfile %s\nmock: burst %d\nmock: tool marker\nmock: waitfile %s.end", gate, n, gate), Start: true, CWD: h.dir})
	if err != nil {
		return burstResult{}, err
	}
	agentPID := 0
	for agentPID == 0 {
		t, err := c.GetTask(ctx, task.ID)
		if err != nil {
			return burstResult{}, err
		}
		if t.Session != nil && t.Session.State == core.SessionRunning {
			agentPID = t.Session.PID
		}
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := h.settle(); err != nil {
		return burstResult{}, err
	}
	w0, b0 := procIO(pid)
	cpu0 := cpuTime(pid)
	start := time.Now()
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		return burstResult{}, err
	}
	// Every chunk is recorded before the tool call that follows them is:
	// poll for its entry, reading only entries after those seen (not the
	// growing message again and again). The counters are read then, while
	// the agent waits at its second gate: Linux adds a reaped child's I/O
	// to its parent's /proc/PID/io, and the agent's own writes (the
	// chunks, on its stdout) are not the daemon's.
	var after int64
	deadline := start.Add(10 * time.Minute)
	var wall time.Duration
	var res burstResult
	for wall == 0 {
		if time.Now().After(deadline) {
			return burstResult{}, errors.New("the burst was not recorded in 10 minutes")
		}
		page, err := c.Conversation(ctx, task.ID, api.ConversationInput{After: after, Limit: 50})
		if err != nil {
			return burstResult{}, err
		}
		for _, m := range page.Messages {
			if m.Kind == core.MsgToolCall && wall == 0 {
				wall = time.Since(start)
				w1, b1 := procIO(pid)
				res = burstResult{wchar: w1 - w0, writes: b1 - b0, cpu: cpuTime(pid) - cpu0, wall: wall}
				if _, err := os.Stat(fmt.Sprintf("/proc/%d", agentPID)); err != nil {
					return burstResult{}, errors.New("the agent was reaped before the daemon's counters were read")
				}
			}
			after = max(after, m.Seq) // the tool call comes after every entry seen
		}
		time.Sleep(5 * time.Millisecond)
	}
	page, err := c.Conversation(ctx, task.ID, api.ConversationInput{Limit: 50})
	if err != nil {
		return burstResult{}, err
	}
	for _, m := range page.Messages {
		if m.Kind == core.MsgAgent && strings.Contains(m.Text, fmt.Sprintf("burst: sent %d", n)) {
			res.text = len(m.Text)
		}
	}
	if res.text == 0 {
		return burstResult{}, fmt.Errorf("no entry holds the burst of %d", n)
	}
	return res, nil
}

func mbStr(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.2f MB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.1f KB", float64(n)/(1<<10))
}

func benchBursts(work string, sizes []int, binaries []binary) error {
	fmt.Printf("\n## one agent bursting N chunks (`mock: burst N`): the daemon, from the agent's first chunk to the last recorded (the agent's own writes not counted)\n")
	fmt.Printf("| %-8s | %-10s | %-10s | %-22s | %-22s | %-9s | %-12s |\n", "chunks", "binary", "text", "write_bytes (×text)", "wchar (×text)", "CPU s", "wall to last")
	fmt.Printf("|%s|%s|%s|%s|%s|%s|%s|\n", strings.Repeat("-", 10), strings.Repeat("-", 12), strings.Repeat("-", 12), strings.Repeat("-", 24), strings.Repeat("-", 24), strings.Repeat("-", 11), strings.Repeat("-", 14))
	for _, n := range sizes {
		for _, b := range binaries {
			r, err := burstOnce(work, b, n)
			if err != nil {
				return fmt.Errorf("%s burst %d: %w", b.name, n, err)
			}
			fmt.Printf("| %-8d | %-10s | %-10s | %-22s | %-22s | %-9.3f | %-12s |\n", n, b.name, mbStr(int64(r.text)),
				fmt.Sprintf("%s (%.1f×)", mbStr(r.writes), float64(r.writes)/float64(r.text)),
				fmt.Sprintf("%s (%.1f×)", mbStr(r.wchar), float64(r.wchar)/float64(r.text)),
				r.cpu.Seconds(), msStr(r.wall)+" ms")
		}
	}
	return nil
}

var stampRE = regexp.MustCompile(`@(\d{19})`)

// lagMeter notes when each stamp first shows in a follower's output.
type lagMeter struct {
	mu   sync.Mutex
	seen map[string]bool
	lags []time.Duration
	from time.Time // stamps before it (the warm-up) are not counted
}

func (l *lagMeter) scan(b []byte, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, m := range stampRE.FindAllSubmatch(b, -1) {
		s := string(m[1])
		if l.seen[s] {
			continue
		}
		l.seen[s] = true
		ns, _ := strconv.ParseInt(s, 10, 64)
		at := time.Unix(0, ns)
		if !l.from.IsZero() && at.After(l.from) {
			l.lags = append(l.lags, now.Sub(at))
		}
	}
}

// read scans a stream; a stamp split over two reads is found in the next
// (the tail of each read is kept).
func (l *lagMeter) read(r io.Reader) {
	buf := make([]byte, 64<<10)
	var tail []byte
	for {
		n, err := r.Read(buf)
		if n > 0 {
			chunk := append(tail, buf[:n]...)
			l.scan(chunk, time.Now())
			tail = append([]byte(nil), chunk[max(0, len(chunk)-20):]...)
		}
		if err != nil {
			return
		}
	}
}

func pct(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(float64(len(s)-1) * p)
	return s[i]
}

type loadResult struct {
	cpuPct                    float64
	rssFirst, rssLast, rssMax int64 // KiB
	logLag, tuiLag, show, mcp []time.Duration
	chunks                    int
	wchar, writes             int64
}

// mcpCaller is one `kandev mcp` on the external surface.
type mcpCaller struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
	id  int
}

func startMCP(h *home) (*mcpCaller, error) {
	cmd := exec.Command(h.bin.path, "mcp")
	cmd.Env = h.env
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	m := &mcpCaller{cmd: cmd, in: in, out: bufio.NewReader(out), id: 10}
	fmt.Fprintln(in, mcpInit)
	if _, err := m.out.ReadString('\n'); err != nil {
		return nil, fmt.Errorf("initialize: %w", err)
	}
	fmt.Fprintln(in, mcpInited)
	return m, nil
}

func (m *mcpCaller) call(taskID string) (time.Duration, error) {
	m.id++
	start := time.Now()
	fmt.Fprintf(m.in, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"get_task_kandev","arguments":{"task_id":%q}}}`+"\n", m.id, taskID)
	line, err := m.out.ReadString('\n')
	took := time.Since(start)
	if err != nil || !strings.Contains(line, `"result"`) {
		return 0, fmt.Errorf("tools/call: %v %.200q", err, line)
	}
	return took, nil
}

func (m *mcpCaller) close() {
	m.in.Close()
	_, _ = io.Copy(io.Discard, m.out)
	_ = m.cmd.Wait()
}

// loadOnce runs agents streaming rate chunks a second for dur, watched.
func loadOnce(work string, b binary, mockBin string, agents, rate int, dur time.Duration) (loadResult, error) {
	h, err := streamHome(work, "load", b)
	if err != nil {
		return loadResult{}, err
	}
	defer h.stop()
	c := daemonclient.Dial(core.Home{Dir: h.dir}.Socket())
	defer c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The mock that knows `stream` (this tree's), whichever daemon runs.
	if _, err := c.AddProfile(ctx, core.Profile{Name: "benchmock", Command: mockBin, Args: []string{"mock-agent"}, Env: []string{}, MCP: true}); err != nil {
		return loadResult{}, fmt.Errorf("add the bench's mock profile: %w", err)
	}
	var ids []string
	for i := range agents {
		t, err := c.CreateTask(ctx, api.CreateTaskInput{Title: fmt.Sprintf("stream %02d", i), Profile: "benchmock",
			Prompt: fmt.Sprintf("mock: stream %d %s", rate, dur), CWD: h.dir})
		if err != nil {
			return loadResult{}, err
		}
		ids = append(ids, t.ID)
	}
	watched := ids[0]
	var logLag, tuiLag lagMeter
	logLag.seen, tuiLag.seen = map[string]bool{}, map[string]bool{}

	// task log --follow of the first task.
	follow := exec.Command(h.bin.path, "task", "log", "--follow", watched)
	follow.Env = h.env
	fout, err := follow.StdoutPipe()
	if err != nil {
		return loadResult{}, err
	}
	if err := follow.Start(); err != nil {
		return loadResult{}, err
	}
	defer func() { _ = follow.Process.Kill(); _ = follow.Wait() }()
	fr := bufio.NewReader(fout)
	// Its first line (the backlog: the queued prompt is not an entry yet,
	// so wait for nothing but the process) – it subscribes before reading.
	go logLag.read(fr)

	// The TUI on a pty; its first row is the first task (oldest first),
	// selected, its conversation followed in the detail pane.
	tui := exec.Command(h.bin.path)
	tui.Env = h.env
	pty, err := daemontest.StartPTY(tui, 160, 50)
	if err != nil {
		return loadResult{}, err
	}
	defer func() { _ = tui.Process.Kill(); _ = tui.Wait(); pty.Close() }()
	go func() {
		buf := make([]byte, 64<<10)
		var tail []byte
		for {
			n, err := pty.Read(buf)
			if n > 0 {
				answerQueries(pty, buf[:n])
				chunk := append(tail, buf[:n]...)
				tuiLag.scan(chunk, time.Now())
				tail = append([]byte(nil), chunk[max(0, len(chunk)-20):]...)
			}
			if err != nil {
				return
			}
		}
	}()
	time.Sleep(2 * time.Second) // both followers subscribed and drawn

	mc, err := startMCP(h)
	if err != nil {
		return loadResult{}, err
	}
	defer mc.close()

	pid := h.daemon.Process.Pid
	for _, id := range ids {
		if _, err := c.StartTask(ctx, id, api.StartTaskInput{}); err != nil {
			return loadResult{}, err
		}
	}
	// The steady window: from 3 s after the starts (50 agents spawned and
	// their sessions open) to the streams' end.
	warm := 3 * time.Second
	time.Sleep(warm)
	steadyFrom := time.Now()
	logLag.mu.Lock()
	logLag.from = steadyFrom
	logLag.mu.Unlock()
	tuiLag.mu.Lock()
	tuiLag.from = steadyFrom
	tuiLag.mu.Unlock()
	cpu0 := cpuTime(pid)
	w0, b0 := procIO(pid)
	res := loadResult{rssFirst: rssKiB(pid)}
	end := steadyFrom.Add(dur - warm - time.Second)
	var show, mcpT []time.Duration
	next := time.Now()
	for time.Now().Before(end) {
		res.rssMax = max(res.rssMax, rssKiB(pid))
		s, err := timeProc(h.env, h.bin.path, "task", "show", watched, "--json")
		if err != nil {
			return loadResult{}, fmt.Errorf("task show during the load: %w", err)
		}
		show = append(show, s.took)
		d, err := mc.call(watched)
		if err != nil {
			return loadResult{}, err
		}
		mcpT = append(mcpT, d)
		next = next.Add(200 * time.Millisecond)
		time.Sleep(time.Until(next))
	}
	window := time.Since(steadyFrom)
	res.cpuPct = 100 * float64(cpuTime(pid)-cpu0) / float64(window)
	w1, b1 := procIO(pid)
	res.wchar, res.writes = w1-w0, b1-b0
	res.rssLast = rssKiB(pid)
	res.rssMax = max(res.rssMax, res.rssLast)
	res.show, res.mcp = show, mcpT
	time.Sleep(500 * time.Millisecond) // the last stamps reach the followers
	logLag.mu.Lock()
	res.logLag = slices.Clone(logLag.lags)
	logLag.mu.Unlock()
	tuiLag.mu.Lock()
	res.tuiLag = slices.Clone(tuiLag.lags)
	tuiLag.mu.Unlock()
	res.chunks = int(float64(agents*rate) * window.Seconds())
	return res, nil
}

func benchLoad(work string, binaries []binary, mockBin string, agents, rate int, dur time.Duration) error {
	fmt.Printf("\n## %d agents streaming %d chunks/s each (`mock: stream %d %s`) while a TUI and `task log --follow` watch one; steady window from 3 s after the starts\n",
		agents, rate, rate, dur)
	fmt.Printf("| %-10s | %-9s | %-26s | %-22s | %-22s | %-22s | %-22s | %-22s |\n", "binary", "CPU/core", "RSS first→last (max) MB", "write_bytes / wchar", "log --follow lag p50/p99", "TUI lag p50/p99", "task show p50/p99", "MCP call p50/p99")
	fmt.Printf("|%s|%s|%s|%s|%s|%s|%s|%s|\n", strings.Repeat("-", 12), strings.Repeat("-", 11), strings.Repeat("-", 28), strings.Repeat("-", 24), strings.Repeat("-", 24), strings.Repeat("-", 24), strings.Repeat("-", 24), strings.Repeat("-", 24))
	for _, b := range binaries {
		r, err := loadOnce(work, b, mockBin, agents, rate, dur)
		if err != nil {
			return fmt.Errorf("%s load: %w", b.name, err)
		}
		pp := func(ds []time.Duration) string {
			if len(ds) == 0 {
				return "none seen"
			}
			return fmt.Sprintf("%s / %s ms (n=%d)", msStr(pct(ds, 0.5)), msStr(pct(ds, 0.99)), len(ds))
		}
		fmt.Printf("| %-10s | %-9s | %-26s | %-22s | %-22s | %-22s | %-22s | %-22s |\n", b.name, fmt.Sprintf("%.1f%%", r.cpuPct),
			fmt.Sprintf("%.1f→%.1f (%.1f)", float64(r.rssFirst)/1024, float64(r.rssLast)/1024, float64(r.rssMax)/1024),
			mbStr(r.writes)+" / "+mbStr(r.wchar), pp(r.logLag), pp(r.tuiLag), pp(r.show), pp(r.mcp))
	}
	return nil
}
