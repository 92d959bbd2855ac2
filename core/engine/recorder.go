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
//
// Streamed output costs what it weighs (ADR 0050): the first chunk of an
// entry inserts it (so its place in the conversation is where it always
// was); the chunks after it wait in pend and are appended as one chunk
// row, and published as one message.appended event, at most
// streamFlushDelay after the first of them arrived (the engine's
// streamFlusher, for every recorder in one transaction), once
// streamFlushBytes wait, or before anything else is recorded (flush). A tool call's
// output that only grows is appended the same way.
type recorder struct {
	// runs: the run it records, which it may fail; through it the
	// kernel, the questions area (permission asks) and the flusher.
	runs      *Runs
	taskID    string
	sessionID string
	run       *liveRun

	mu sync.Mutex
	// the entry streamed chunks are appended to, while nothing else came
	// in between, and the bytes its text holds (recorded or pending)
	streamSeq  int64
	streamKind core.MessageKind
	streamLen  int
	tools      map[string]toolEntry
	// turn counts the run's turns, so a tool call id an agent uses again
	// in a later turn is a new call.
	turn int
	// replaying drops updates while the session opens: session/load
	// streams the whole earlier conversation before its response.
	replaying bool

	// pend is streamed text not yet written, to be appended at byte
	// pendOff of field pendField of entry pendSeq.
	pend      []byte
	pendSeq   int64
	pendKind  core.MessageKind
	pendField string
	pendOff   int
	// The turn's estimate from streamed text (usage.go): the bytes
	// streamed, the tokens recorded, and whether the agent's own figure
	// replaced it (then no more is estimated).
	estBytes, estTokens int64
	estDone             bool
	// inflight is closed when the stream flusher's tick that took this
	// recorder's pending output has written and published it; nil when
	// none is in flight (settleWrites).
	inflight chan struct{}
}

// What a kill -9 may lose of streamed output (ADR 0050): what arrived in
// the last streamFlushDelay, at most streamFlushBytes of one entry.
const (
	streamFlushDelay = 10 * time.Millisecond
	streamFlushBytes = 16 << 10
)

type toolEntry struct {
	seq  int64
	meta map[string]any
	turn int
}

var _ agent.Handler = (*recorder)(nil)

func newRecorder(runs *Runs, taskID, sessionID string, run *liveRun) *recorder {
	return &recorder{runs: runs, taskID: taskID, sessionID: sessionID, run: run, tools: map[string]toolEntry{}}
}

func (r *recorder) resetTurn() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.endStream()
	r.turn++
	r.estBytes, r.estTokens, r.estDone = 0, 0, false
}

func (r *recorder) setReplaying(on bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.replaying = on
	r.endStream()
}

// flush writes the streamed output still waiting: at a turn's end, before
// the end is recorded, and at shutdown.
func (r *recorder) flush() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.flushLocked()
}

// endStream ends the entry chunks append to: what waits is written, and
// the next chunk starts an entry of its own. r.mu must be held.
func (r *recorder) endStream() {
	r.flushLocked()
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
		r.toolCall(u.ToolCall)
	case u.ToolCallUpdate != nil:
		r.toolCallUpdate(u.ToolCallUpdate)
	case u.UsageUpdate != nil:
		r.usageUpdate(u.UsageUpdate)
	case u.Plan != nil:
		r.plan(u.Plan)
	}
}

// toolCall records a tool call the agent announces (or announces again:
// announcedAgain). Under r.mu.
func (r *recorder) toolCall(tc *acp.SessionUpdateToolCall) {
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
	r.endStream()
	if ent, ok := r.announcedAgain(string(tc.ToolCallId)); ok {
		mergeToolMeta(ent.meta, meta)
		r.tools[string(tc.ToolCallId)] = ent
		r.rewrite(ent.seq, toolText(ent.meta), ent.meta)
		return
	}
	m := r.insert(core.MsgToolCall, toolText(meta), meta, r.sessionID+":"+string(tc.ToolCallId))
	r.tools[string(tc.ToolCallId)] = toolEntry{seq: m.Seq, meta: meta, turn: r.turn}
}

// toolCallUpdate records a change to a tool call: the entry is written
// whole, or only its output's new end appended. Under r.mu.
func (r *recorder) toolCallUpdate(tu *acp.SessionToolCallUpdate) {
	ent, ok := r.tools[string(tu.ToolCallId)]
	if !ok {
		meta := map[string]any{"tool_call_id": string(tu.ToolCallId), "status": "pending"}
		r.endStream()
		m := r.insert(core.MsgToolCall, toolText(meta), meta, r.sessionID+":"+string(tu.ToolCallId))
		ent = toolEntry{seq: m.Seq, meta: meta, turn: r.turn}
	}
	before := toolFields(ent.meta)
	oldOutput, _ := ent.meta["output"].(string)
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
	newOutput, _ := ent.meta["output"].(string)
	switch {
	case toolFields(ent.meta) != before || !strings.HasPrefix(newOutput, oldOutput):
		// Something besides a longer output: the entry is written
		// whole (what waits for it first, so nothing is lost).
		r.flushLocked()
		r.rewrite(ent.seq, toolText(ent.meta), ent.meta)
	case len(newOutput) > len(oldOutput):
		// Output that only grew (a command's streamed output, sent
		// whole each time as ACP's content is): only what is new is
		// appended.
		r.appendPending(ent.seq, core.MsgToolCall, store.ChunkOutput, len(oldOutput), newOutput[len(oldOutput):])
	}
	if title, _ := ent.meta["title"].(string); ent.meta["status"] == string(acp.ToolCallStatusFailed) && strings.Contains(title, capability.AskUser) {
		// The agent gave up on its question call (a client timeout):
		// nothing handed to that call would reach the model.
		r.runs.questions.dropWaitingCall(context.Background(), r.taskID, "the agent reported the call failed")
	}
}

// plan records the agent's plan as one entry. Under r.mu.
func (r *recorder) plan(p *acp.SessionUpdatePlan) {
	var lines []string
	entries := make([]map[string]any, 0, len(p.Entries))
	for _, e := range p.Entries {
		lines = append(lines, fmt.Sprintf("[%s] %s", e.Status, e.Content))
		entries = append(entries, map[string]any{"content": e.Content, "status": string(e.Status), "priority": string(e.Priority)})
	}
	r.endStream()
	r.insert(core.MsgPlan, strings.Join(lines, "\n"), map[string]any{"entries": entries}, "")
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
	r.endStream()
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
	return r.runs.questions.requestPermission(ctx, r.run, req, tool)
}

// insertEntry records an entry from outside the recorder's own calls.
func (r *recorder) insertEntry(kind core.MessageKind, text string, meta map[string]any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.endStream()
	r.insert(kind, text, meta, "")
}

// Garbage implements agent.Handler: output that is not ACP fails the run.
func (r *recorder) Garbage(line string) {
	go r.runs.failRun(r.run, fmt.Sprintf("agent wrote output that is not ACP: %q", truncateRunes(line, 200)))
}

// Fault implements agent.Handler: the agent broke the stream (a line too
// long to read); the run fails with that reason.
func (r *recorder) Fault(reason string) {
	go r.runs.failRun(r.run, reason)
}

func (r *recorder) stream(kind core.MessageKind, text string) {
	if text == "" {
		return
	}
	r.countStreamed(len(text))
	if r.streamSeq != 0 && r.streamKind == kind {
		r.appendPending(r.streamSeq, kind, "", r.streamLen, text)
		r.streamLen += len(text)
		return
	}
	r.endStream()
	m := r.insert(kind, text, nil, "")
	r.streamSeq, r.streamKind, r.streamLen = m.Seq, kind, len(text)
}

// appendPending adds text that goes at byte off of an entry's field to
// what waits, writing what waits first when it belongs elsewhere, and
// all of it once streamFlushBytes wait. r.mu must be held.
func (r *recorder) appendPending(seq int64, kind core.MessageKind, field string, off int, text string) {
	if seq == 0 {
		return // the entry was never written (logged); nothing to append to
	}
	if len(r.pend) > 0 && (r.pendSeq != seq || r.pendField != field || r.pendOff+len(r.pend) != off) {
		r.flushLocked()
	}
	if len(r.pend) == 0 {
		r.pendSeq, r.pendKind, r.pendField, r.pendOff = seq, kind, field, off
	}
	r.pend = append(r.pend, text...)
	if len(r.pend) >= streamFlushBytes {
		r.flushLocked()
		return
	}
	r.runs.flusher.mark(r)
}

// takePending hands what waits over as one append, written at now.
// r.mu must be held.
func (r *recorder) takePending(now time.Time) core.MessageAppend {
	a := core.MessageAppend{Seq: r.pendSeq, TaskID: r.taskID, Kind: r.pendKind, Field: r.pendField, Offset: r.pendOff,
		Text: string(r.pend), UpdatedAt: now}
	r.pendOff += len(r.pend)
	r.pend = r.pend[:0]
	if cap(r.pend) > 4*streamFlushBytes {
		r.pend = nil // a burst's buffer is not kept for the run's life
	}
	return a
}

// settleWrites waits until output of this recorder that a tick took is
// written and published: whatever the recorder writes next comes after
// it. r.mu must be held (the tick does not take it while it writes).
func (r *recorder) settleWrites() {
	if r.inflight != nil {
		<-r.inflight
		r.inflight = nil
	}
}

// flushLocked appends what waits to its entry, as one chunk row, and
// publishes it as one append; when it returns, everything the recorder
// took in is written. r.mu must be held.
func (r *recorder) flushLocked() {
	r.settleWrites()
	if len(r.pend) == 0 {
		return
	}
	now := time.Now().UTC()
	a := r.takePending(now)
	if err := r.runs.k.db.AppendMessageChunk(context.Background(), a.Seq, a.Field, a.Text, now); err != nil {
		r.runs.k.log.Error("record agent output", "task", r.taskID, "err", err)
		return
	}
	r.runs.k.bus.Publish(core.Event{Type: core.EventMessageAppended, TaskID: r.taskID, Append: &a})
}

func (r *recorder) insert(kind core.MessageKind, text string, meta map[string]any, ref string) store.Message {
	metaJSON := "{}"
	if meta != nil {
		b, _ := json.Marshal(meta)
		metaJSON = string(b)
	}
	r.settleWrites()
	now := time.Now().UTC()
	m, err := r.runs.k.db.InsertMessage(context.Background(), store.Message{TaskID: r.taskID, SessionID: r.sessionID,
		Kind: string(kind), Author: core.TaskRef(r.taskID).String(), Text: text, Meta: metaJSON, Ref: ref, CreatedAt: now, UpdatedAt: now})
	if err != nil {
		r.runs.k.log.Error("record agent output", "task", r.taskID, "err", err)
		return store.Message{}
	}
	r.runs.k.publishMessage(core.EventMessageAdded, m)
	return m
}

func (r *recorder) rewrite(seq int64, text string, meta map[string]any) {
	if seq == 0 {
		return
	}
	r.settleWrites()
	ctx := context.Background()
	m, err := r.runs.k.db.GetMessage(ctx, seq)
	if err != nil {
		return
	}
	metaJSON := m.Meta
	if meta != nil {
		b, _ := json.Marshal(meta)
		metaJSON = string(b)
	}
	now := time.Now().UTC()
	if err := r.runs.k.db.UpdateMessage(ctx, seq, text, metaJSON, now); err != nil {
		r.runs.k.log.Error("record agent output", "task", r.taskID, "err", err)
		return
	}
	m.Text, m.Meta, m.UpdatedAt = text, metaJSON, now
	r.runs.k.publishMessage(core.EventMessageUpdated, m)
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

// toolFields is what a tool call's entry shows besides its output, to
// tell an update that only streams output from one that changes more.
func toolFields(meta map[string]any) string {
	cp := make(map[string]any, len(meta))
	for k, v := range meta {
		if k != "output" {
			cp[k] = v
		}
	}
	b, _ := json.Marshal(cp)
	return string(b)
}

func toolText(meta map[string]any) string {
	title, _ := meta["title"].(string)
	if title == "" {
		title, _ = meta["tool_call_id"].(string)
	}
	status, _ := meta["status"].(string)
	return fmt.Sprintf("%s [%s]", title, status)
}
