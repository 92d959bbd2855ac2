package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"
)

// hostileLines are lines an agent might write to make the guard's scan
// and the SDK's decoding disagree: repeated, re-cased and escaped keys,
// keys that fold onto ASCII names only under Unicode folding, nulls, wrong
// types, strings holding what looks like members.
var hostileLines = []string{
	`{}`,
	`[]`,
	`"session/update"`,
	`5`,
	`null`,
	`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}}}`,
	`{"jsonrpc":"2.0","method":"session/update","params":{}}`,
	`{"jsonrpc":"2.0","method":"session/update"}`,
	`{"jsonrpc":"2.0","method":"session/update","id":1,"params":{}}`,
	`{"jsonrpc":"2.0","method":"session/update","id":null,"params":{}}`,
	`{"jsonrpc":"2.0","id":1,"method":"session/update","id":null}`,
	`{"jsonrpc":"2.0","id":null,"method":"session/update","id":"x"}`,
	`{"jsonrpc":"2.0","method":"session/update","method":"other"}`,
	`{"jsonrpc":"2.0","method":"other","method":"session/update"}`,
	`{"jsonrpc":"2.0","METHOD":"session/update"}`,
	`{"jsonrpc":"2.0","Method":"session/update","ID":3}`,
	`{"jsonrpc":"2.0","method":"session/upd\u0061te"}`,
	`{"jsonrpc":"2.0","m\u0065thod":"session/update"}`,
	`{"jsonrpc":"2.0","ıd":1,"method":"session/update"}`,
	`{"jſonrpc":"2.0","method":"session/update"}`,
	`{"jsonrpc":"2.0","method":null}`,
	`{"jsonrpc":"2.0","method":"session/update","method":null}`,
	`{"jsonrpc":"2.0","method":5}`,
	`{"jsonrpc":"2.0","method":5,"method":"session/update"}`,
	`{"jsonrpc":2,"method":"session/update"}`,
	`{"jsonrpc":null,"method":"session/update"}`,
	`{"jsonrpc":"2.0","method":"session/update","error":null}`,
	`{"jsonrpc":"2.0","method":"session/update","error":{"code":1,"message":"x"}}`,
	`{"jsonrpc":"2.0","method":"session/update","error":"bad"}`,
	`{"jsonrpc":"2.0","id":7,"result":{"method":"session/update","id":null}}`,
	`{"jsonrpc":"2.0","params":"\"method\":\"session/update\"","id":1}`,
	`{"jsonrpc":"2.0","params":{"a":"}\"]{","b":[{"method":"x"}]},"method":"session/update"}`,
	`{ "jsonrpc" : "2.0" , "method" : "session/update" , "params" : { } }`,
	"{\t\"method\"\r\n:\"session/update\"}",
	`{"method":"$/cancel_request","params":{"requestId":1}}`,
	`{"method":"","params":{}}`,
	`{"method":"session/update\u0000"}`,
	`{"method":"sessi\u00f6n/update"}`,
	"{\"method\":\"session/update\xff\"}",
	`{"id":1}`,
	`{"id":[1,{"a":null}],"method":"session/update"}`,
	`{"x":true,"y":false,"z":-1.5e+3,"method":"session/update","w":null}`,
	`{"params":[[[[[[]]]]]],"method":"session/update"}`,
}

// The scan never claims a reading that encoding/json, decoding the line
// as the SDK does, would not give.
func TestLineScanAgreesWithDecode(t *testing.T) {
	fast := 0
	for _, l := range hostileLines {
		if checkScan(t, []byte(l)) {
			fast++
		}
	}
	if fast < len(hostileLines)/2 {
		t.Fatalf("the scan read only %d of %d lines itself", fast, len(hostileLines))
	}
}

func FuzzLineScan(f *testing.F) {
	for _, l := range hostileLines {
		f.Add([]byte(l))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		b = bytes.TrimSpace(b)
		if !json.Valid(b) {
			return
		}
		checkScan(t, b)
	})
}

// checkScan compares the scan of a valid line with its decoding and
// reports whether the scan read it.
func checkScan(t *testing.T, line []byte) bool {
	t.Helper()
	e, ok := scanEnvelope(line)
	if !ok {
		return false
	}
	var msg wireMessage
	if err := json.Unmarshal(line, &msg); err != nil {
		t.Errorf("scan read %s, decoding fails: %v", line, err)
		return true
	}
	if e.method != msg.Method || e.hasID != (msg.ID != nil) {
		t.Errorf("scan read %s as method %q id %v, decoding as method %q id %v", line, e.method, e.hasID, msg.Method, msg.ID != nil)
	}
	return true
}

// What the guard passes on, of lines that look like session/update.
func TestLineGuardClassifies(t *testing.T) {
	for _, tc := range []struct {
		line string
		pass bool
	}{
		{`{"jsonrpc":"2.0","method":"session/update","params":{}}`, true},
		{`{"jsonrpc":"2.0","METHOD":"session/update","params":{}}`, true},
		{`{"jsonrpc":"2.0","m\u0065thod":"session/update","params":{}}`, true},
		{`{"jsonrpc":"2.0","method":"session/update","id":null,"params":{}}`, true},
		// A request: the client would handle it out of order and release
		// the flow for it (ADR 0059).
		{`{"jsonrpc":"2.0","method":"session/update","id":1,"params":{}}`, false},
		{`{"jsonrpc":"2.0","method":"other/thing","params":{}}`, false},
		{`{"jsonrpc":"2.0","method":5}`, false},
		{`{"jsonrpc":"2.0","id":1,"result":null}`, true},
		{`{"jsonrpc":"2.0","id":1,"method":"fs/read_text_file","params":{}}`, true},
	} {
		g, _ := newGuard(strings.NewReader(tc.line + "\n"))
		out, _ := io.ReadAll(g)
		if got := len(out) > 0; got != tc.pass {
			t.Errorf("%s: passed %v, want %v", tc.line, got, tc.pass)
		}
		if want := 0; tc.pass && strings.Contains(tc.line, `"session/update"`) {
			want = 1
			if g.flow.pending != want {
				t.Errorf("%s: %d counted in flight, want %d", tc.line, g.flow.pending, want)
			}
		}
	}
}

// recordingHandler collects the updates it is handed.
type recordingHandler struct {
	mu      sync.Mutex
	updates []acp.SessionNotification
	got     chan struct{}
}

func (h *recordingHandler) Update(_ context.Context, n acp.SessionNotification) {
	h.mu.Lock()
	h.updates = append(h.updates, n)
	h.mu.Unlock()
	h.got <- struct{}{}
}

func (h *recordingHandler) Permission(context.Context, acp.RequestPermissionRequest) acp.RequestPermissionResponse {
	return acp.RequestPermissionResponse{}
}
func (h *recordingHandler) Garbage(string) {}
func (h *recordingHandler) Fault(string)   {}

// session/updates the SDK rejects (params it cannot decode or validate)
// are passed on undecoded and released by the SDK's log of the rejection:
// more of them than the flow's limit do not stall the stream, and the
// update after them arrives.
func TestGuardReleasesRejectedUpdates(t *testing.T) {
	toAgentR, toAgentW := io.Pipe()
	fromAgentR, fromAgentW := io.Pipe()
	done := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, toAgentR) }()
	h := &recordingHandler{got: make(chan struct{}, 1)}
	r := Attach(Spec{}, h, Peer{Stdin: toAgentW, Stdout: fromAgentR, Done: done, Err: func() error { return nil },
		Kill: func() { fromAgentW.Close() }})
	defer func() {
		r.flow.close()
		fromAgentW.Close()
		toAgentW.Close()
		close(done)
	}()
	bad := []string{
		`{"jsonrpc":"2.0","method":"session/update","params":5}`,
		`{"jsonrpc":"2.0","method":"session/update","params":"x"}`,
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":5}}`,
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":5}}}`,
	}
	go func() {
		for i := 0; i < 3*flowLimit; i++ {
			fmt.Fprintln(fromAgentW, bad[i%len(bad)])
		}
		fmt.Fprintln(fromAgentW, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"after"}}}}`)
	}()
	select {
	case <-h.got:
	case <-time.After(time.Minute):
		r.flow.mu.Lock()
		pending := r.flow.pending
		r.flow.mu.Unlock()
		t.Fatalf("the update after %d rejected ones never arrived (%d counted in flight)", 3*flowLimit, pending)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.updates) != 1 || h.updates[0].Update.AgentMessageChunk == nil || h.updates[0].Update.AgentMessageChunk.Content.Text.Text != "after" {
		t.Fatalf("updates %+v", h.updates)
	}
}
