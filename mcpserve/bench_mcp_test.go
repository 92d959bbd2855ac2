package mcpserve_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/daemon/daemontest"
)

// Benchmarks of `kandev mcp` as an agent uses it: a real bridge process
// with a live session's token, in front of a real daemon.
//
//	go test ./mcpserve -run '^$' -bench MCP
//
// Targets on the reference machine: start-up median <= 20 ms; call p50
// <= 1 ms, p99 <= 5 ms; >= 2,000 calls/s through one bridge.

// benchSession starts a daemon and a task whose live session's token the
// benchmarks use, as kandev hands it to the agent's bridge.
func benchSession(b *testing.B) (*daemontest.Daemon, []string, string) {
	b.Helper()
	d := daemontest.Start(b)
	task, err := d.Client.CreateTask(bg(), api.CreateTaskInput{Title: "bench", Prompt: "mock: mcpenv KANDEV_TOKEN\nmock: hang",
		CWD: b.TempDir(), Start: true})
	if err != nil {
		b.Fatal(err)
	}
	token := waitLine(b, d, task.ID, "mcpenv KANDEV_TOKEN:", 1)
	return d, cleanEnv("KANDEV_SOCKET="+d.Home.Socket(), "KANDEV_TOKEN="+token), task.ID
}

// stderrTail passes the bridge's stderr to the benchmark log.
type stderrTail struct{ tb testing.TB }

func (w *stderrTail) Write(p []byte) (int, error) {
	w.tb.Logf("kandev mcp: %s", strings.TrimSpace(string(p)))
	return len(p), nil
}

// bridgeProc is a running `kandev mcp` spoken to line by line.
type bridgeProc struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

func startBridgeProc(tb testing.TB, bin string, env []string) *bridgeProc {
	cmd := exec.Command(bin, "mcp")
	cmd.Env = env
	cmd.Stderr = &stderrTail{tb: tb}
	in, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	return &bridgeProc{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 1<<16)}
}

func (p *bridgeProc) send(tb testing.TB, line string) {
	if _, err := io.WriteString(p.in, line+"\n"); err != nil {
		tb.Fatalf("write to kandev mcp: %v", err)
	}
}

// recv reads one message and checks it answers without error.
func (p *bridgeProc) recv(tb testing.TB) {
	line, err := p.out.ReadBytes('\n')
	if err != nil {
		tb.Fatalf("read from kandev mcp: %v", err)
	}
	var msg struct {
		Error  json.RawMessage `json:"error"`
		Result struct {
			IsError bool `json:"isError"`
		} `json:"result"`
	}
	if err := json.Unmarshal(line, &msg); err != nil || msg.Error != nil || msg.Result.IsError {
		tb.Fatalf("kandev mcp answered %s", line)
	}
}

func (p *bridgeProc) stop(tb testing.TB) {
	p.in.Close()
	if err := p.cmd.Wait(); err != nil {
		tb.Fatalf("kandev mcp exited: %v", err)
	}
}

const (
	initLine  = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`
	initedMsg = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
	listLine  = `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
)

func percentile(ds []time.Duration, p float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(float64(len(s)-1) * p)
	return s[i]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// BenchmarkMCPStartup: exec `kandev mcp` until its tools/list is answered.
func BenchmarkMCPStartup(b *testing.B) {
	d, env, _ := benchSession(b)
	var times []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		p := startBridgeProc(b, d.Bin, env)
		p.send(b, initLine)
		p.recv(b)
		p.send(b, initedMsg)
		p.send(b, listLine)
		p.recv(b)
		times = append(times, time.Since(start))
		b.StopTimer()
		p.stop(b)
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(ms(percentile(times, 0.5)), "startup-median-ms")
	b.ReportMetric(ms(percentile(times, 0.99)), "startup-p99-ms")
}

// BenchmarkMCPToolCall: one call at a time through one bridge and the
// daemon (get_task_kandev on the caller's own task).
func BenchmarkMCPToolCall(b *testing.B) {
	d, env, _ := benchSession(b)
	p := startBridgeProc(b, d.Bin, env)
	defer p.stop(b)
	p.send(b, initLine)
	p.recv(b)
	p.send(b, initedMsg)
	times := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	begin := time.Now()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		p.send(b, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"get_task_kandev","arguments":{}}}`, i+10))
		p.recv(b)
		times = append(times, time.Since(start))
	}
	total := time.Since(begin)
	b.StopTimer()
	b.ReportMetric(ms(percentile(times, 0.5)), "call-p50-ms")
	b.ReportMetric(ms(percentile(times, 0.99)), "call-p99-ms")
	b.ReportMetric(float64(b.N)/total.Seconds(), "calls/s")
}

// BenchmarkMCPToolCallPipelined: calls/s through one bridge with 8 calls
// in flight, as an agent issuing parallel tool calls would.
func BenchmarkMCPToolCallPipelined(b *testing.B) {
	const inFlight = 8
	d, env, _ := benchSession(b)
	p := startBridgeProc(b, d.Bin, env)
	defer p.stop(b)
	p.send(b, initLine)
	p.recv(b)
	p.send(b, initedMsg)
	call := func(i int) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"get_task_kandev","arguments":{}}}`, i+10)
	}
	b.ResetTimer()
	begin := time.Now()
	sent := 0
	for ; sent < inFlight && sent < b.N; sent++ {
		p.send(b, call(sent))
	}
	for done := 0; done < b.N; done++ {
		p.recv(b)
		if sent < b.N {
			p.send(b, call(sent))
			sent++
		}
	}
	total := time.Since(begin)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/total.Seconds(), "calls/s")
}
