package agent

import (
	"context"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"
)

// orderHandler records, in the order it is handed them, the updates'
// texts and the permission requests. Each update takes a while, as a
// recorder writing to the store does.
type orderHandler struct {
	mu     sync.Mutex
	seen   []string
	asked  chan struct{}
	sticky time.Duration
}

func (h *orderHandler) Update(_ context.Context, n acp.SessionNotification) {
	time.Sleep(h.sticky)
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case n.Update.AgentMessageChunk != nil && n.Update.AgentMessageChunk.Content.Text != nil:
		h.seen = append(h.seen, "text:"+n.Update.AgentMessageChunk.Content.Text.Text)
	case n.Update.ToolCall != nil:
		h.seen = append(h.seen, "tool:"+string(n.Update.ToolCall.ToolCallId))
	}
}

func (h *orderHandler) Permission(context.Context, acp.RequestPermissionRequest) acp.RequestPermissionResponse {
	h.mu.Lock()
	h.seen = append(h.seen, "permission")
	h.mu.Unlock()
	close(h.asked)
	return acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{Cancelled: &acp.RequestPermissionOutcomeCancelled{}}}
}
func (h *orderHandler) Garbage(string) {}
func (h *orderHandler) Fault(string)   {}

// A permission request reaches the handler after everything the agent
// sent before it: its words and the tool call it asks about. The SDK
// hands requests to goroutines of their own, so without the wait the
// question was recorded before the message that led to it.
func TestPermissionWaitsForEarlierUpdates(t *testing.T) {
	toAgentR, toAgentW := io.Pipe()
	fromAgentR, fromAgentW := io.Pipe()
	done := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, toAgentR) }()
	h := &orderHandler{asked: make(chan struct{}), sticky: 20 * time.Millisecond}
	r := Attach(Spec{}, h, Peer{Stdin: toAgentW, Stdout: fromAgentR, Done: done, Err: func() error { return nil },
		Kill: func() { fromAgentW.Close() }})
	defer func() {
		r.flow.close()
		fromAgentW.Close()
		toAgentW.Close()
		close(done)
	}()
	var want []string
	go func() {
		// A session id of its own on each chunk: the guard joins none.
		for i := range 5 {
			fmt.Fprintf(fromAgentW, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s%d","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"w%d"}}}}`+"\n", i, i)
		}
		fmt.Fprintln(fromAgentW, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"t1","title":"deploy","kind":"execute","status":"pending"}}}`)
		fmt.Fprintln(fromAgentW, `{"jsonrpc":"2.0","id":7,"method":"session/request_permission","params":{"sessionId":"s","toolCall":{"toolCallId":"t1"},"options":[{"optionId":"allow","name":"Allow","kind":"allow_once"}]}}`)
	}()
	for i := range 5 {
		want = append(want, fmt.Sprintf("text:w%d", i))
	}
	want = append(want, "tool:t1", "permission")
	select {
	case <-h.asked:
	case <-time.After(time.Minute):
		t.Fatal("the permission request never reached the handler")
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if fmt.Sprint(h.seen) != fmt.Sprint(want) {
		t.Fatalf("handled in the order %v, want %v", h.seen, want)
	}
}

// blockedHandler never finishes an update until released.
type blockedHandler struct {
	orderHandler
	release chan struct{}
}

func (h *blockedHandler) Update(context.Context, acp.SessionNotification) { <-h.release }

// AwaitEarlier is bounded by its context: a handler stuck on an update
// (a store that does not answer) does not hold a tool call for ever.
func TestAwaitEarlierEndsWithItsContext(t *testing.T) {
	toAgentR, toAgentW := io.Pipe()
	fromAgentR, fromAgentW := io.Pipe()
	done := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, toAgentR) }()
	h := &blockedHandler{release: make(chan struct{})}
	r := Attach(Spec{}, h, Peer{Stdin: toAgentW, Stdout: fromAgentR, Done: done, Err: func() error { return nil },
		Kill: func() { fromAgentW.Close() }})
	defer func() {
		close(h.release)
		r.flow.close()
		fromAgentW.Close()
		toAgentW.Close()
		close(done)
	}()
	fmt.Fprintln(fromAgentW, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"t1","title":"x","kind":"execute","status":"pending"}}}`)
	for r.flow.handedSoFar() == 0 {
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	r.AwaitEarlier(ctx)
	if ctx.Err() == nil {
		t.Fatal("AwaitEarlier returned before the stuck update was handled or its context ended")
	}
}
