package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/agent"
	"github.com/kandev/kandev/core/capability"
	"github.com/kandev/kandev/store"
)

// recorder writes everything an agent sends into the task's conversation,
// in order, before the turn's end is recorded (the ACP SDK hands it every
// notification sent before the prompt response). Streamed text chunks merge
// into one message; tool call updates rewrite their call's entry.
type recorder struct {
	e         *Engine
	taskID    string
	sessionID string
	run       *liveRun

	mu sync.Mutex
	// the entry streamed chunks are appended to, while nothing else came
	// in between
	streamSeq  int64
	streamKind core.MessageKind
	streamText strings.Builder
	tools      map[string]toolEntry
	// turn counts the run's turns, so a tool call id an agent uses again
	// in a later turn is a new call.
	turn int
	// replaying drops updates while the session opens: session/load
	// streams the whole earlier conversation before its response.
	replaying bool
}

type toolEntry struct {
	seq  int64
	meta map[string]any
	turn int
}

var _ agent.Handler = (*recorder)(nil)

func newRecorder(e *Engine, taskID, sessionID string, run *liveRun) *recorder {
	return &recorder{e: e, taskID: taskID, sessionID: sessionID, run: run, tools: map[string]toolEntry{}}
}

func (r *recorder) resetTurn() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.streamSeq = 0
	r.turn++
}

func (r *recorder) setReplaying(on bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.replaying = on
	r.streamSeq = 0
}

func (r *recorder) isReplaying() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.replaying
}

// Update implements agent.Handler.
func (r *recorder) Update(ctx context.Context, n acp.SessionNotification) {
	r.mu.Lock()
	defer r.mu.Unlock()
	// A stopped run is past its end: what its agent still says before the
	// signals reach it (a turn that went on after the cancel, say after a
	// permission answered cancelled) is not the task's conversation. Only
	// a stop: a run that ends by itself may still have updates queued
	// that it sent before its exit.
	if r.replaying || (r.run != nil && r.run.stopped.Load()) {
		return
	}
	u := n.Update
	switch {
	case u.AgentMessageChunk != nil:
		r.stream(core.MsgAgent, contentText(u.AgentMessageChunk.Content))
	case u.AgentThoughtChunk != nil:
		r.stream(core.MsgThought, contentText(u.AgentThoughtChunk.Content))
	case u.UserMessageChunk != nil:
		// Replays of the user's own prompt (session/load): already recorded.
	case u.ToolCall != nil:
		tc := u.ToolCall
		meta := map[string]any{"tool_call_id": string(tc.ToolCallId), "title": tc.Title, "kind": string(tc.Kind),
			"status": string(tc.Status)}
		if tc.RawInput != nil {
			meta["raw_input"] = tc.RawInput
		}
		if tc.RawOutput != nil {
			meta["raw_output"] = tc.RawOutput
		}
		if meta["status"] == "" {
			meta["status"] = "pending"
		}
		r.streamSeq = 0
		if ent, ok := r.announcedAgain(string(tc.ToolCallId)); ok {
			mergeToolMeta(ent.meta, meta)
			r.tools[string(tc.ToolCallId)] = ent
			r.rewrite(ent.seq, toolText(ent.meta), ent.meta)
			break
		}
		m := r.insert(core.MsgToolCall, toolText(meta), meta, r.sessionID+":"+string(tc.ToolCallId))
		r.tools[string(tc.ToolCallId)] = toolEntry{seq: m.Seq, meta: meta, turn: r.turn}
	case u.ToolCallUpdate != nil:
		tu := u.ToolCallUpdate
		ent, ok := r.tools[string(tu.ToolCallId)]
		if !ok {
			meta := map[string]any{"tool_call_id": string(tu.ToolCallId), "status": "pending"}
			r.streamSeq = 0
			m := r.insert(core.MsgToolCall, toolText(meta), meta, r.sessionID+":"+string(tu.ToolCallId))
			ent = toolEntry{seq: m.Seq, meta: meta, turn: r.turn}
		}
		if tu.Status != nil {
			ent.meta["status"] = string(*tu.Status)
		}
		if tu.Title != nil {
			ent.meta["title"] = *tu.Title
		}
		if tu.Kind != nil {
			ent.meta["kind"] = string(*tu.Kind)
		}
		if tu.RawInput != nil {
			ent.meta["raw_input"] = tu.RawInput
		}
		if tu.RawOutput != nil {
			ent.meta["raw_output"] = tu.RawOutput
		}
		if txt := toolContentText(tu.Content); txt != "" {
			ent.meta["output"] = txt
		}
		r.tools[string(tu.ToolCallId)] = ent
		r.rewrite(ent.seq, toolText(ent.meta), ent.meta)
		if title, _ := ent.meta["title"].(string); ent.meta["status"] == string(acp.ToolCallStatusFailed) && strings.Contains(title, capability.AskUser) {
			// The agent gave up on its question call (a client timeout):
			// nothing handed to that call would reach the model.
			r.e.dropWaitingCall(context.Background(), r.taskID, "the agent reported the call failed")
		}
	case u.UsageUpdate != nil:
		r.usageUpdate(u.UsageUpdate)
	case u.Plan != nil:
		var lines []string
		entries := make([]map[string]any, 0, len(u.Plan.Entries))
		for _, p := range u.Plan.Entries {
			lines = append(lines, fmt.Sprintf("[%s] %s", p.Status, p.Content))
			entries = append(entries, map[string]any{"content": p.Content, "status": string(p.Status), "priority": string(p.Priority)})
		}
		r.streamSeq = 0
		r.insert(core.MsgPlan, strings.Join(lines, "\n"), map[string]any{"entries": entries}, "")
	}
}

// announcedAgain returns the entry of a tool call this turn already
// recorded, when the agent announces it a second time: Codex asks
// permission for a command (which records the call, pending) and, once
// approved, sends a tool_call with the same id as it runs it. One call is
// one entry, so the second announcement updates the first. An id seen in
// an earlier turn is a new call.
func (r *recorder) announcedAgain(id string) (toolEntry, bool) {
	ent, ok := r.tools[id]
	if !ok || ent.turn != r.turn || id == "" {
		return toolEntry{}, false
	}
	return ent, true
}

// mergeToolMeta lays a new announcement of a call over its entry: what it
// says replaces what the entry had; what it leaves empty is kept.
func mergeToolMeta(into, from map[string]any) {
	for k, v := range from {
		if s, ok := v.(string); ok && s == "" {
			continue
		}
		into[k] = v
	}
}

// Permission implements agent.Handler: the task's permission policy
// answers (see requestPermission); with "ask" the call blocks until the
// operator answers or the turn is cancelled.
func (r *recorder) Permission(ctx context.Context, req acp.RequestPermissionRequest) acp.RequestPermissionResponse {
	r.mu.Lock()
	r.streamSeq = 0
	id := string(req.ToolCall.ToolCallId)
	var announced map[string]any
	if ent, known := r.tools[id]; known {
		announced = ent.meta
	} else if id != "" && req.ToolCall.Title != nil && *req.ToolCall.Title != "" {
		// Announced only here (Qwen Code sends no tool_call first): the
		// call's entry takes the request's title, not a bare id.
		meta := map[string]any{"tool_call_id": id, "title": *req.ToolCall.Title, "status": "pending"}
		if req.ToolCall.Kind != nil {
			meta["kind"] = string(*req.ToolCall.Kind)
		}
		if req.ToolCall.RawInput != nil {
			meta["raw_input"] = req.ToolCall.RawInput
		}
		m := r.insert(core.MsgToolCall, toolText(meta), meta, r.sessionID+":"+id)
		r.tools[id] = toolEntry{seq: m.Seq, meta: meta, turn: r.turn}
	}
	tool := permissionTool(req, announced)
	r.mu.Unlock()
	return r.e.requestPermission(ctx, r.run, req, tool)
}

// insertEntry records an entry from outside the recorder's own calls.
func (r *recorder) insertEntry(kind core.MessageKind, text string, meta map[string]any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.streamSeq = 0
	r.insert(kind, text, meta, "")
}

// Garbage implements agent.Handler: output that is not ACP fails the run.
func (r *recorder) Garbage(line string) {
	go r.e.failRun(r.run, fmt.Sprintf("agent wrote output that is not ACP: %q", truncateRunes(line, 200)))
}

// Fault implements agent.Handler: the agent broke the stream (a line too
// long to read); the run fails with that reason.
func (r *recorder) Fault(reason string) {
	go r.e.failRun(r.run, reason)
}

func (r *recorder) stream(kind core.MessageKind, text string) {
	if text == "" {
		return
	}
	if r.streamSeq != 0 && r.streamKind == kind {
		r.streamText.WriteString(text)
		r.rewrite(r.streamSeq, r.streamText.String(), nil)
		return
	}
	r.streamText.Reset()
	r.streamText.WriteString(text)
	m := r.insert(kind, text, nil, "")
	r.streamSeq, r.streamKind = m.Seq, kind
}

func (r *recorder) insert(kind core.MessageKind, text string, meta map[string]any, ref string) store.Message {
	metaJSON := "{}"
	if meta != nil {
		b, _ := json.Marshal(meta)
		metaJSON = string(b)
	}
	now := time.Now().UTC()
	m, err := r.e.db.InsertMessage(context.Background(), store.Message{TaskID: r.taskID, SessionID: r.sessionID,
		Kind: string(kind), Author: core.TaskRef(r.taskID).String(), Text: text, Meta: metaJSON, Ref: ref, CreatedAt: now, UpdatedAt: now})
	if err != nil {
		r.e.log.Error("record agent output", "task", r.taskID, "err", err)
		return store.Message{}
	}
	r.e.publishMessage(core.EventMessageAdded, m)
	return m
}

func (r *recorder) rewrite(seq int64, text string, meta map[string]any) {
	if seq == 0 {
		return
	}
	ctx := context.Background()
	m, err := r.e.db.GetMessage(ctx, seq)
	if err != nil {
		return
	}
	metaJSON := m.Meta
	if meta != nil {
		b, _ := json.Marshal(meta)
		metaJSON = string(b)
	}
	now := time.Now().UTC()
	if err := r.e.db.UpdateMessage(ctx, seq, text, metaJSON, now); err != nil {
		r.e.log.Error("record agent output", "task", r.taskID, "err", err)
		return
	}
	m.Text, m.Meta, m.UpdatedAt = text, metaJSON, now
	r.e.publishMessage(core.EventMessageUpdated, m)
}

func contentText(c acp.ContentBlock) string {
	switch {
	case c.Text != nil:
		return c.Text.Text
	case c.ResourceLink != nil:
		return "[" + c.ResourceLink.Name + "](" + c.ResourceLink.Uri + ")"
	case c.Image != nil:
		return "[image]"
	case c.Audio != nil:
		return "[audio]"
	case c.Resource != nil:
		return "[resource]"
	}
	return ""
}

func toolContentText(cs []acp.ToolCallContent) string {
	var parts []string
	for _, c := range cs {
		if c.Content != nil {
			if t := contentText(c.Content.Content); t != "" {
				parts = append(parts, t)
			}
		}
		if c.Diff != nil {
			parts = append(parts, "diff "+c.Diff.Path)
		}
	}
	return strings.Join(parts, "\n")
}

func toolText(meta map[string]any) string {
	title, _ := meta["title"].(string)
	if title == "" {
		title, _ = meta["tool_call_id"].(string)
	}
	status, _ := meta["status"].(string)
	return fmt.Sprintf("%s [%s]", title, status)
}
