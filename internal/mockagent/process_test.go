package mockagent

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"
)

// testAgentEnv turns the test binary into a mock agent process.
const testAgentEnv = "MOCKAGENT_TEST_AGENT"

// agentProcess is the mock agent run the way kandev runs it: a child
// process speaking ACP on its stdio.
type agentProcess struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	conn   *acp.ClientSideConnection
	client *testClient
	stdout *syncBuffer
	stderr *syncBuffer
	exited chan error
}

func startAgentProcess(t *testing.T) *agentProcess {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), testAgentEnv+"=1", "KANDEV_MOCK_STATE_DIR="+t.TempDir(), "GORACE=atexit_sleep_ms=0")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	// Stdout goes through a pipe we close after Wait, so the client reads
	// everything the process wrote and then sees EOF.
	stdout, stdoutW := io.Pipe()
	p := &agentProcess{cmd: cmd, stdin: stdin, client: &testClient{}, stdout: &syncBuffer{}, stderr: &syncBuffer{}, exited: make(chan error, 1)}
	cmd.Stdout = stdoutW
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p.conn = acp.NewClientSideConnection(p.client, stdin, io.TeeReader(stdout, p.stdout))
	p.conn.SetLogger(slog.New(slog.DiscardHandler))
	go func() {
		err := cmd.Wait()
		_ = stdoutW.Close()
		p.exited <- err
	}()
	t.Cleanup(func() {
		_ = stdin.Close()
		select {
		case <-p.exited:
		case <-time.After(waitTimeout):
			_ = cmd.Process.Kill()
			<-p.exited
		}
		<-p.conn.Done()
	})
	return p
}

func (p *agentProcess) wait(t *testing.T) error {
	t.Helper()
	select {
	case err := <-p.exited:
		p.exited <- err // let the cleanup see it too
		return err
	case <-time.After(waitTimeout):
		t.Fatal("agent process did not exit")
		return nil
	}
}

func TestProcess(t *testing.T) {
	leakCheck(t)
	p := startAgentProcess(t)
	ctx := testCtx(t)
	if _, err := p.conn.Initialize(ctx, acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersionNumber}); err != nil {
		t.Fatal(err)
	}
	sess, err := p.conn.NewSession(ctx, acp.NewSessionRequest{Cwd: t.TempDir(), McpServers: []acp.McpServer{testServer()}})
	if err != nil {
		t.Fatal(err)
	}
	sid := sess.SessionId
	// The MCP server writes a banner-free stream, so anything it logs to
	// stderr must stay off our stdout: every stdout line must be JSON.
	resp, err := p.conn.Prompt(ctx, acp.PromptRequest{SessionId: sid, Prompt: []acp.ContentBlock{acp.TextBlock("mock: call whoami\nmock: stderr to stderr")}})
	if err != nil || resp.StopReason != acp.StopReasonEndTurn {
		t.Fatalf("prompt: %+v, %v", resp, err)
	}
	if got := p.client.messages(sid); !strings.HasPrefix(got, "result whoami: kandev-mock-agent pid ") {
		t.Errorf("said %q", got)
	}
	for _, line := range bytes.Split(bytes.TrimSpace([]byte(p.stdout.String())), []byte("\n")) {
		if !bytes.HasPrefix(line, []byte("{")) {
			t.Errorf("non-JSON line on the agent's stdout: %q", line)
		}
	}

	// crash takes the whole process down with status 3, answering nothing.
	_, err = p.conn.Prompt(ctx, acp.PromptRequest{SessionId: sid, Prompt: []acp.ContentBlock{acp.TextBlock("mock: crash\nmock: say after")}})
	if err == nil {
		t.Error("crashing prompt was answered")
	}
	var exit *exec.ExitError
	if err := p.wait(t); !errors.As(err, &exit) || exit.ExitCode() != 3 {
		t.Errorf("exit = %v, want status 3", err)
	}
	// Only after Wait is the copy of the child's stderr complete: the
	// prompt's answer can overtake the bytes still in the pipe.
	if !strings.Contains(p.stderr.String(), "to stderr\n") {
		t.Errorf("stderr = %q", p.stderr.String())
	}
}

func TestProcessExitsCleanlyOnEOF(t *testing.T) {
	leakCheck(t)
	p := startAgentProcess(t)
	ctx := testCtx(t)
	if _, err := p.conn.Initialize(ctx, acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersionNumber}); err != nil {
		t.Fatal(err)
	}
	sess, err := p.conn.NewSession(ctx, acp.NewSessionRequest{Cwd: t.TempDir(), McpServers: []acp.McpServer{testServer()}})
	if err != nil {
		t.Fatal(err)
	}
	// Start the MCP server, then hang up while a turn hangs.
	if _, err := p.conn.Prompt(ctx, acp.PromptRequest{SessionId: sess.SessionId, Prompt: []acp.ContentBlock{acp.TextBlock("mock: tools")}}); err != nil {
		t.Fatal(err)
	}
	go func() {
		_, _ = p.conn.Prompt(ctx, acp.PromptRequest{SessionId: sess.SessionId, Prompt: []acp.ContentBlock{acp.TextBlock("mock: hang")}})
	}()
	time.Sleep(50 * time.Millisecond)
	_ = p.stdin.Close()
	if err := p.wait(t); err != nil {
		t.Errorf("exit = %v (stderr %q), want status 0", err, p.stderr.String())
	}
}
