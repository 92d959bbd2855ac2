package mcpserve_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kandev/kandev/core/capability"
	"github.com/kandev/kandev/core/daemon"
	"github.com/kandev/kandev/mcpserve"
)

// What kandev keeps of its own around mcp-go's stdio transport (ADR 0047).

// Calls that wait for a person never take every worker: MaxWaitingCalls
// of them wait, one more is refused at once, and a call that does not
// wait still answers.
func TestWaitingCallsLeaveWorkers(t *testing.T) {
	entered := make(chan struct{}, mcpserve.MaxWaitingCalls+1)
	host := &fakeHost{surface: surfaceOf(capability.Case{Surface: capability.KanbanTask})}
	host.call = func(ctx context.Context, name string, args []byte) (any, error) {
		if name == capability.AskUser {
			entered <- struct{}{}
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return json.RawMessage(`{"id":"t1"}`), nil
	}
	r := startBridge(t, host, nil)
	r.initialize()
	ask := map[string]any{"name": capability.AskUser,
		"arguments": map[string]any{"questions": []any{map[string]any{"prompt": "?"}}}}
	waiting := map[float64]bool{}
	for range mcpserve.MaxWaitingCalls {
		waiting[float64(r.request("tools/call", ask))] = true
	}
	for range mcpserve.MaxWaitingCalls {
		<-entered
	}
	over := r.request("tools/call", ask)
	resp, _ := r.response(over)
	res := resp["result"].(map[string]any)
	if res["isError"] != true || !strings.HasPrefix(resultText(res), fmt.Sprintf("CONFLICT: %d calls to %s already wait", mcpserve.MaxWaitingCalls, capability.AskUser)) {
		t.Errorf("a call over the limit: %v", res)
	}
	// A call that does not wait is served while they all wait.
	get := r.request("tools/call", map[string]any{"name": "get_task_kandev", "arguments": map[string]any{}})
	resp, _ = r.response(get)
	if res := resp["result"].(map[string]any); res["isError"] == true {
		t.Errorf("get_task_kandev while %d calls wait: %v", mcpserve.MaxWaitingCalls, res)
	}
	// EOF cuts the waiting calls off.
	r.in.Close()
	for m := range r.msgs {
		if id, ok := m["id"].(float64); ok && waiting[id] {
			if res, _ := m["result"].(map[string]any); res["isError"] != true {
				t.Errorf("a waiting call answered successfully after EOF: %v", m)
			}
		}
	}
	if err := <-r.done; err != nil {
		t.Fatal(err)
	}
}

// A message is at most MaxMessage bytes, newline included: one of that
// size is served, a longer one ends the session with ErrMessageTooLong.
func TestMessageSizeCap(t *testing.T) {
	if mcpserve.MaxMessage <= daemon.MaxBody {
		t.Errorf("MaxMessage %d: a call the daemon takes (up to %d bytes) must fit", mcpserve.MaxMessage, daemon.MaxBody)
	}
	// The cap of the test's bridge is smaller, to keep the test quick; the
	// reader is the same.
	const max = 64 << 10
	r := startBridge(t, &fakeHost{surface: surfaceOf(capability.Case{Surface: capability.External})}, nil,
		mcpserve.WithMaxMessage(max))
	r.initialize()
	line := func(id int, size int) []byte {
		head := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping","params":{"pad":"`, id)
		tail := `"}}` + "\n"
		return []byte(head + strings.Repeat("x", size-len(head)-len(tail)) + tail)
	}
	write := func(b []byte) {
		t.Helper()
		if _, err := r.in.Write(b); err != nil {
			t.Fatalf("write: %v", err)
		}
	}
	write(line(50, max))
	if m, _ := r.response(50); m["result"] == nil {
		t.Fatalf("a message of the cap's size: %v", m)
	}
	// The bridge stops reading at the cap, so the rest of the line may
	// find nobody reading it.
	go func() { _, _ = r.in.Write(line(51, max+1)) }()
	select {
	case err := <-r.done:
		if !errors.Is(err, mcpserve.ErrMessageTooLong) {
			t.Fatalf("Run after a message over the cap: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a message over the cap did not end the session")
	}
	for m := range r.msgs {
		if m["id"] == float64(51) {
			t.Errorf("the message over the cap was answered: %v", m)
		}
	}
}

// A cancel names its request by value: 7.0 is request 7. The cancelled
// call gets no answer.
func TestCancelMatchesTheIDByValue(t *testing.T) {
	entered := make(chan struct{})
	cancelled := make(chan struct{})
	host := &fakeHost{surface: surfaceOf(capability.Case{Surface: capability.KanbanTask})}
	gone := make(chan struct{}) // a bridge that misses the cancel must still end
	host.call = func(ctx context.Context, name string, args []byte) (any, error) {
		close(entered)
		select {
		case <-ctx.Done():
			close(cancelled)
		case <-gone:
		}
		return nil, ctx.Err()
	}
	r := startBridge(t, host, nil)
	t.Cleanup(func() { close(gone) })
	r.initialize()
	if _, err := r.in.Write([]byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"get_task_kandev","arguments":{}}}` + "\n")); err != nil {
		t.Fatal(err)
	}
	<-entered
	if _, err := r.in.Write([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7.0}}` + "\n")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-cancelled:
	case <-time.After(30 * time.Second):
		t.Fatal("a cancel of request 7.0 did not cancel request 7")
	}
	// The next answer is the ping's, not the cancelled call's.
	if m, _ := r.response(r.request("ping", nil)); m["result"] == nil {
		t.Fatalf("ping: %v", m)
	}
	r.in.Close()
	for m := range r.msgs {
		if m["id"] == float64(7) {
			t.Errorf("the cancelled call was answered: %v", m)
		}
	}
	if err := <-r.done; err != nil {
		t.Fatal(err)
	}
}
