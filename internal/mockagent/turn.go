package mockagent

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"

	acp "github.com/coder/acp-go-sdk"
)

// errCrashed unwinds a turn after `mock: crash` when the exit hook returns
// (only in tests; os.Exit never returns).
var errCrashed = errors.New("mock agent crashed")

// ackLimit is how many runes of the prompt an `ack:` reply quotes.
const ackLimit = 80

// turn is one session/prompt being interpreted.
type turn struct {
	a       *agent
	s       *session
	ctx     context.Context
	sid     acp.SessionId
	number  int    // 1-based over the session's whole life
	script  script // the prompt
	vars    map[string]string
	earlier []string // first lines of the session's earlier prompts
	toolSeq int
	usage   *acp.Usage // what `mock: usage` reported, for the prompt response
	// atEnd are `mock: usage-at-end` reports, sent when the turn ends
	// (not when it is cancelled): nothing of them comes mid-turn.
	atEnd []string
}

func (a *agent) runTurn(ctx context.Context, s *session, text string) (acp.PromptResponse, error) {
	cancelled := acp.PromptResponse{StopReason: acp.StopReasonCancelled}
	if err := s.acquire(ctx); err != nil {
		return cancelled, nil
	}
	defer s.release()

	sc := parseScript(text)
	st := &s.state
	st.Turns++
	t := &turn{
		a:       a,
		s:       s,
		ctx:     ctx,
		sid:     acp.SessionId(st.SessionID),
		number:  st.Turns,
		script:  sc,
		vars:    maps.Clone(sc.vars),
		earlier: slices.Clone(st.Prompts),
	}
	t.vars["session_id"] = st.SessionID
	t.vars["turn"] = strconv.Itoa(st.Turns)
	// Snapshot before running so that reactions registered in this turn
	// wait for the next one.
	reactions := slices.Clone(st.Reactions)
	st.Prompts = append(st.Prompts, sc.first)

	err := t.run(reactions)
	if err == nil && ctx.Err() == nil {
		for _, arg := range t.atEnd {
			t.reportUsage(arg)
		}
	}
	if errors.Is(err, errCrashed) {
		// A crashed process persists nothing.
		return acp.PromptResponse{}, err
	}
	cancelledTurn := ctx.Err() != nil
	if cancelledTurn && a.cancelMode == "forget" {
		// Gemini CLI: a cancel leaves the session without that turn's prompt.
		st.Prompts = st.Prompts[:len(st.Prompts)-1]
	}
	if serr := a.store.save(s.state); serr != nil {
		a.logger.Warn("persist mock session", "session", st.SessionID, "err", serr)
	}
	switch {
	case cancelledTurn && a.cancelMode == "error":
		// Qwen Code answers a cancelled prompt with an error, not a stop reason.
		return acp.PromptResponse{}, &acp.RequestError{Code: -32603, Message: "Request was aborted"}
	case cancelledTurn:
		return cancelled, nil
	case err != nil:
		return acp.PromptResponse{}, err
	}
	return acp.PromptResponse{StopReason: acp.StopReasonEndTurn, Usage: t.usage}, nil
}

// run executes the prompt's directives, then the reactions its tags fire.
// A non-nil error ends the turn: the context's error, a `fail`, or a crash.
func (t *turn) run(reactions []reaction) error {
	for _, d := range t.script.directives {
		if err := t.exec(d); err != nil {
			return err
		}
	}
	fired := false
	for _, r := range reactions {
		if r.Kind != "any" && !hasTag(t.script.text, r.Kind) {
			continue
		}
		fired = true
		if err := t.exec(r.Directive); err != nil {
			return err
		}
	}
	if len(t.script.directives) == 0 && !fired {
		t.say("ack: " + truncateRunes(t.script.first, ackLimit))
	}
	return t.ctx.Err()
}

// update streams one session/update. Delivery errors are only logged: they
// mean the client is gone, and the turn's context ends with it.
func (t *turn) update(u acp.SessionUpdate) {
	t.updateCtx(t.ctx, u)
}

func (t *turn) updateCtx(ctx context.Context, u acp.SessionUpdate) {
	if err := t.a.conn.SessionUpdate(ctx, acp.SessionNotification{SessionId: t.sid, Update: u}); err != nil {
		t.a.logger.Debug("session/update", "session", t.sid, "err", err)
	}
}

func (t *turn) say(text string) { t.update(acp.UpdateAgentMessageText(text + "\n")) }

func (t *turn) sayf(format string, args ...any) { t.say(fmt.Sprintf(format, args...)) }

// nextToolCallID is unique within the session across processes, because
// turn numbers are.
func (t *turn) nextToolCallID() acp.ToolCallId {
	t.toolSeq++
	return acp.ToolCallId(fmt.Sprintf("mock-t%d-%d", t.number, t.toolSeq))
}
