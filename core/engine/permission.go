package engine

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/config"
	"github.com/kandev/kandev/core/textsafe"
	"github.com/kandev/kandev/store"
)

// permissionOption is one of the agent's options, as its request gave it
// (the id goes back to the agent; name and kind are shown).
type permissionOption struct {
	ID   string `json:"id"`
	Kind string `json:"kind"`
	Name string `json:"name"`
}

// permissionDecision is how one request was answered.
type permissionDecision struct {
	option  string // the chosen option id; "" answers cancelled
	outcome string // what the conversation says: "allowed (allow)", ...
	by      string // "policy", "kandev", "person:operator", ...
	policy  string
	source  string
	// remember is the tool key an "allow always" answer is remembered by.
	remember   string
	questionID string
}

// Bounds on agent-supplied text in a permission request.
const (
	permissionTitleMax  = 200
	permissionOptionMax = 80
)

// pickOption returns the id of the first option of the first kind that
// the agent offers, or "".
func pickOption(opts []acp.PermissionOption, kinds ...acp.PermissionOptionKind) string {
	for _, k := range kinds {
		for _, o := range opts {
			if o.Kind == k {
				return string(o.OptionId)
			}
		}
	}
	return ""
}

// permissionPolicy resolves the policy for a run's task: the profile's own
// setting, else the environment, else config.toml, else the built-in
// (ask on a normal task, allow on autopilot). Read at every request, so a
// `kandev config set permission` applies without a restart.
func (qs *Questions) permissionPolicy(ctx context.Context, profile string, autopilot bool) (policy, source string) {
	key := "permission"
	if autopilot {
		key = "autopilot_permission"
	}
	if p, err := qs.profile(ctx, profile); err == nil {
		own := p.Permission
		if autopilot {
			own = p.AutopilotPermission
		}
		if own != "" {
			return own, "profile " + p.Name
		}
	}
	var cfg config.Config
	if qs.k.opts.Config != nil {
		c, err := qs.k.opts.Config()
		if err != nil {
			// A broken file fails closed: whatever it said, no built-in
			// default may be more permissive than it (ADR 0042). Deny,
			// with the reason in the record.
			return core.PermissionDeny, "deny (config error: " + err.Error() + ")"
		}
		cfg = c
	}
	v, err := cfg.Get(key)
	if err != nil {
		return core.PermissionDeny, "deny (config error: " + err.Error() + ")"
	}
	switch v.Source {
	case config.SourceEnv:
		return v.Value, "$" + v.Env
	case config.SourceFile:
		return v.Value, "config file"
	}
	return v.Value, "default"
}

// requestPermission answers an agent's session/request_permission for a
// live run: kandev's own tools are allowed; an autopilot task follows its
// autopilot policy; a normal task follows its policy, and with "ask" the
// request becomes the operator's pending question and the turn waits for
// it. Every decision is recorded in the conversation.
func (qs *Questions) requestPermission(ctx context.Context, run *liveRun, req acp.RequestPermissionRequest, tool core.PermissionTool) acp.RequestPermissionResponse {
	taskID := run.rt.id
	opts := make([]permissionOption, 0, len(req.Options))
	for _, o := range req.Options {
		opts = append(opts, permissionOption{ID: string(o.OptionId), Kind: string(o.Kind), Name: string(o.Name)})
	}
	allow := func() string {
		return pickOption(req.Options, acp.PermissionOptionKindAllowOnce, acp.PermissionOptionKindAllowAlways)
	}
	var d permissionDecision
	if name, ok := kandevToolName(req, tool); ok {
		d = permissionDecision{option: allow(), by: "kandev", policy: "allow", source: name + " is kandev's own tool"}
	} else {
		t, _ := qs.k.cached(taskID)
		policy, source := qs.permissionPolicy(ctx, run.profile, t.Autopilot)
		if t.Autopilot {
			source = "autopilot, " + source
		}
		d = permissionDecision{by: "policy", policy: policy, source: source}
		switch policy {
		case core.PermissionAllow:
			d.option = allow()
		case core.PermissionDeny:
			d.option = pickOption(req.Options, acp.PermissionOptionKindRejectOnce, acp.PermissionOptionKindRejectAlways)
		default:
			if t.Autopilot {
				// Nobody is asked on autopilot, whatever a bad value says.
				d.policy = core.PermissionDeny
				d.option = pickOption(req.Options, acp.PermissionOptionKindRejectOnce, acp.PermissionOptionKindRejectAlways)
				break
			}
			d = qs.askPermission(ctx, run, req, tool, opts, source)
		}
	}
	qs.recordPermission(run, tool, opts, d)
	if d.option == "" {
		return acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{Cancelled: &acp.RequestPermissionOutcomeCancelled{}}}
	}
	return acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{
		Selected: &acp.RequestPermissionOutcomeSelected{OptionId: acp.PermissionOptionId(d.option)}}}
}

// askPermission makes the request the operator's pending question (kind
// permission) and waits for the answer, unless an earlier "allow always"
// of this task covers the tool. A cancelled turn, a stop, a superseding
// message or a shutdown ends the wait with the request cancelled and the
// question no longer pending.
func (qs *Questions) askPermission(ctx context.Context, run *liveRun, req acp.RequestPermissionRequest, tool core.PermissionTool, opts []permissionOption, source string) permissionDecision {
	rt := run.rt
	d := permissionDecision{by: "policy", policy: core.PermissionAsk, source: source}
	// One question at a time per task: parallel requests (an agent running
	// tools side by side) wait their turn, and may then find the tool
	// allowed always by the first answer.
	select {
	case rt.permSem <- struct{}{}:
	case <-ctx.Done():
		d.outcome = "cancelled: the turn was cancelled before kandev could ask"
		return d
	case <-qs.k.baseCtx.Done():
		d.outcome = "cancelled: the daemon is shutting down"
		return d
	}
	defer func() { <-rt.permSem }()
	key := toolKey(req, tool)
	if ok, err := qs.k.db.PermissionRemembered(ctx, rt.id, key); err == nil && ok {
		d.option = pickOption(req.Options, acp.PermissionOptionKindAllowAlways, acp.PermissionOptionKindAllowOnce)
		d.by, d.source = "remembered", "you chose allow always for "+key+" earlier in this task"
		return d
	}
	item := permissionItem(tool, opts)
	if len(item.Options) == 0 {
		d.outcome = "cancelled: the agent offered no option to choose"
		return d
	}
	qid := "q" + core.NewID()
	ch := make(chan answerDelivery, 1)
	qs.k.waiters.add(qid, ch)
	forget := func() { qs.k.waiters.forget(qid, ch) }
	// The waiter is registered above, before the question is announced, so
	// an answer given as soon as it shows finds the request waiting.
	m, busy, err := qs.recordPermissionQuestion(ctx, run, qid, item, tool, opts, key)
	if err != nil || busy != "" {
		forget()
		if err != nil {
			qs.k.log.Error("record permission question", "task", rt.id, "err", err)
			d.outcome = "cancelled: kandev could not record the question: " + err.Error()
		} else {
			d.outcome = "cancelled: question " + busy + " is already pending on this task"
		}
		return d
	}
	d.questionID = qid
	return qs.awaitPermission(ctx, m, ch, opts, key, d)
}

// permissionItem is the permission question's one part: its prompt, and
// the agent's options as choices, each bounded and made one line.
func permissionItem(tool core.PermissionTool, opts []permissionOption) core.QuestionItem {
	item := core.QuestionItem{Prompt: permissionPrompt(tool)}
	for _, o := range opts {
		label := truncateRunes(textsafe.Line(o.Name), permissionOptionMax)
		if label == "" {
			label = truncateRunes(textsafe.Line(o.ID), permissionOptionMax)
		}
		item.Options = append(item.Options, core.QuestionOption{Label: label, Description: truncateRunes(textsafe.Line(o.Kind), permissionOptionMax)})
	}
	return item
}

// recordPermissionQuestion writes the request's question qid as the task's
// pending question, in one commit; busy is the id of another question
// already pending, when one is (nothing is written then).
func (qs *Questions) recordPermissionQuestion(ctx context.Context, run *liveRun, qid string, item core.QuestionItem, tool core.PermissionTool, opts []permissionOption, key string) (store.Message, string, error) {
	rt := run.rt
	var m store.Message
	busy := ""
	// Written whole even if the request is cancelled meanwhile: the wait
	// below then stales it.
	bg := context.WithoutCancel(ctx)
	err := qs.k.commit(bg, func(tx *store.Tx, c *changes) error {
		busy = ""
		if cur, err := tx.PendingQuestion(bg, rt.id); err == nil {
			q, _ := parseQuestion(cur)
			busy = q.QuestionID
			return nil
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		var err error
		m, err = qs.recordQuestion(bg, tx, rt.id, run.sessionID, questionMeta{QuestionID: qid, Kind: core.QuestionPermission,
			Status: core.QuestionPending, Questions: []core.QuestionItem{item}, AskedSession: run.sessionID, AskedAt: time.Now().UTC(),
			Delivery: "waiting_call", Tool: &tool, PermissionOptions: opts, Remember: key})
		if err != nil {
			return err
		}
		c.addMessage(m)
		c.question(m.Seq)
		c.touch(rt.id)
		return nil
	})
	return m, busy, err
}

// awaitPermission waits for the answer to the request's question m on ch
// and completes d from it: the chosen option and who chose it, and the
// tool key remembered when that option allows always.
func (qs *Questions) awaitPermission(ctx context.Context, m store.Message, ch chan answerDelivery, opts []permissionOption, key string, d permissionDecision) permissionDecision {
	var got answerDelivery
	select {
	case got = <-ch:
	case <-ctx.Done():
		got = qs.endPermissionWait(m, ch, "the turn was cancelled while the request waited")
	case <-qs.k.baseCtx.Done():
		got = qs.endPermissionWait(m, ch, "the daemon shut down while the request waited")
	}
	if got.status != core.QuestionAnswered {
		d.outcome = "cancelled: " + string(got.status) + ": " + got.reason
		return d
	}
	d.option, d.by = got.option, got.by
	for _, o := range opts {
		if o.ID == got.option && o.Kind == string(acp.PermissionOptionKindAllowAlways) {
			d.remember = key
		}
	}
	return d
}

// endPermissionWait ends the wait of a permission question whose request
// is going away: it becomes stale, unless an answer or a supersede got it
// first, in which case that is what the agent is told.
func (qs *Questions) endPermissionWait(m store.Message, ch chan answerDelivery, why string) answerDelivery {
	ctx := context.Background()
	resolved := false
	// tx then announce: the waiter is dropped between the two, so nothing
	// can hand it an outcome once the question shows as stale.
	c, err := qs.k.tx(ctx, func(tx *store.Tx, c *changes) error {
		ok, err := qs.resolveQuestion(ctx, tx, m, core.QuestionStale, why, nil)
		resolved = ok
		if ok {
			c.question(m.Seq)
			c.touch(m.TaskID)
		}
		return err
	})
	if err != nil || resolved {
		qs.k.waiters.forget(m.Ref, ch)
		if err != nil {
			qs.k.log.Error("make permission question stale", "task", m.TaskID, "err", err)
			// Show the question as it stands all the same.
			c.question(m.Seq)
			c.touch(m.TaskID)
		}
		qs.k.announce(c)
		return answerDelivery{status: core.QuestionStale, reason: why}
	}
	// Someone resolved it first; they hand their outcome to the waiter
	// right after their commit.
	select {
	case d := <-ch:
		return d
	case <-qs.k.baseCtx.Done():
		return answerDelivery{status: core.QuestionStale, reason: why}
	}
}

// permissionPrompt is the question's text: the tool call, and what it
// would do, as far as the agent said.
func permissionPrompt(t core.PermissionTool) string {
	var b strings.Builder
	b.WriteString("The agent asks permission to run: " + t.Title)
	var extra []string
	if t.Kind != "" {
		extra = append(extra, "kind "+t.Kind)
	}
	if t.Input != "" {
		extra = append(extra, "input "+t.Input)
	}
	if len(extra) > 0 {
		b.WriteString("\n" + strings.Join(extra, "; "))
	}
	return b.String()
}

// recordPermission writes the decision into the conversation (after the
// call's own entry, created here when only the request announced it).
func (qs *Questions) recordPermission(run *liveRun, tool core.PermissionTool, opts []permissionOption, d permissionDecision) {
	chosen := ""
	for _, o := range opts {
		if o.ID == d.option {
			chosen = o.Name
			if chosen == "" {
				chosen = o.ID
			}
			chosen = truncateRunes(textsafe.Line(chosen), permissionOptionMax) + " (" + o.Kind + ")"
		}
	}
	var text string
	switch {
	case d.option != "" && d.by == "policy":
		text = fmt.Sprintf("%s by policy %s (%s)", chosen, d.policy, d.source)
	case d.option != "" && d.by == "kandev":
		text = fmt.Sprintf("%s: %s", chosen, d.source)
	case d.option != "" && d.by == "remembered":
		text = fmt.Sprintf("%s: %s", chosen, d.source)
	case d.option != "":
		text = fmt.Sprintf("%s, answered by %s", chosen, d.by)
	case d.outcome != "":
		text = d.outcome
	default:
		text = fmt.Sprintf("cancelled: policy %s (%s), but the agent offered no option for it", d.policy, d.source)
	}
	if d.remember != "" {
		text += "; remembered for " + d.remember + " for the rest of this task"
	}
	meta := map[string]any{"tool_call_id": tool.CallID, "title": tool.Title, "kind": tool.Kind, "options": opts,
		"selected": d.option, "policy": d.policy, "source": d.source, "by": d.by}
	if d.remember != "" {
		meta["remember"] = d.remember
	}
	if d.questionID != "" {
		meta["question_id"] = d.questionID
	}
	run.rec.insertEntry(core.MsgPermission, fmt.Sprintf("permission for %q: %s", tool.Title, text), meta)
}

// permissionChoice turns the operator's answer into one of the agent's
// options: an option number, or an option's name or id.
func permissionChoice(q questionMeta, in api.AnswerInput) (int, error) {
	raw := ""
	switch {
	case len(in.Answers) > 1:
		return 0, core.Errorf(core.CodeValidation, "a permission question has one part; give one answer")
	case len(in.Answers) == 1:
		raw = in.Answers[0]
	case in.Option > 0 && in.Text != "":
		return 0, core.Errorf(core.CodeValidation, "give either an option number or an option's name, not both")
	case in.Option > 0:
		raw = strconv.Itoa(in.Option)
	default:
		raw = in.Text
	}
	raw = strings.TrimSpace(raw)
	var names []string
	for i, o := range q.PermissionOptions {
		names = append(names, fmt.Sprintf("%d) %s", i+1, o.Name))
	}
	if raw == "" {
		return 0, core.Errorf(core.CodeValidation, "choose one of the agent's options with --option N: %s", strings.Join(names, ", "))
	}
	if n, err := strconv.Atoi(raw); err == nil {
		if n < 1 || n > len(q.PermissionOptions) {
			return 0, core.Errorf(core.CodeValidation, "option %d does not exist: the agent offered %s", n, strings.Join(names, ", "))
		}
		return n - 1, nil
	}
	for i, o := range q.PermissionOptions {
		if strings.EqualFold(raw, o.Name) || raw == o.ID {
			return i, nil
		}
	}
	return 0, core.Errorf(core.CodeValidation, "a permission question takes one of the agent's options, not free text: %s", strings.Join(names, ", "))
}

// answerPermission hands the operator's choice to the waiting request.
func (qs *Questions) answerPermission(ctx context.Context, t core.Task, m store.Message, q questionMeta, in api.AnswerInput) (api.AnswerResult, error) {
	i, err := permissionChoice(q, in)
	if err != nil {
		return api.AnswerResult{}, err
	}
	actor := core.ActorFrom(ctx)
	o := q.PermissionOptions[i]
	label := o.Name
	if i < len(q.Questions[0].Options) {
		label = q.Questions[0].Options[i].Label
	}
	now := time.Now().UTC()
	claimed := false
	// tx then announce: the waiting request is handed the answer only once
	// its claim committed, and the announcement carries the note written
	// when nobody waited.
	c, err := qs.k.tx(ctx, func(tx *store.Tx, c *changes) error {
		ok, err := qs.resolveQuestion(ctx, tx, m, core.QuestionAnswered, "",
			&answerMeta{Text: label, Answers: []string{label}, By: actor.String(), At: now})
		claimed = ok
		if ok {
			c.question(m.Seq)
			c.touch(t.ID)
		}
		return err
	})
	if err != nil {
		return api.AnswerResult{}, mapStoreErr(err, "answer to "+q.QuestionID)
	}
	if !claimed {
		cur, err := qs.k.db.GetMessage(ctx, m.Seq)
		if err == nil {
			if cq, err := parseQuestion(cur); err == nil && cq.Status != core.QuestionAnswered {
				return api.AnswerResult{}, core.Errorf(core.CodeConflict, "question %s is %s (%s); it can no longer be answered", q.QuestionID, cq.Status, cq.Resolution)
			}
		}
		return api.AnswerResult{TaskID: t.ID, QuestionID: q.QuestionID, Status: "already_answered"}, nil
	}
	delivered := "waiting_call"
	if !qs.k.notifyWaiter(q.QuestionID, answerDelivery{status: core.QuestionAnswered, answers: []string{label}, text: label, option: o.ID, by: actor.String()}) {
		// The request ended without staling its question (a daemon that
		// died before its recovery ran): nobody waits for this answer.
		// A second transaction: whether the note is due is known only
		// after the claim committed and the waiter was looked for.
		delivered = "none"
		nctx := context.WithoutCancel(ctx)
		note, err := qs.k.tx(nctx, func(tx *store.Tx, nc *changes) error {
			return nc.noteTx(nctx, tx, t.ID, core.MsgStatus, "kandev",
				fmt.Sprintf("permission question %s answered %q, but the agent's request had already ended", q.QuestionID, label), map[string]any{})
		})
		if err != nil {
			qs.k.log.Error("record note", "task", t.ID, "err", err)
		}
		c.messages = append(note.messages, c.messages...)
	}
	qs.k.announce(c)
	return api.AnswerResult{TaskID: t.ID, QuestionID: q.QuestionID, Status: "answered", Delivered: delivered}, nil
}

// stalePermission ends a pending permission question of a session whose
// turn ended or whose daemon went away: its request cannot be answered.
func (qs *Questions) stalePermission(ctx context.Context, taskID, sessionID, why string) {
	m, err := qs.k.db.PendingQuestion(ctx, taskID)
	if err != nil {
		return
	}
	q, err := parseQuestion(m)
	if err != nil || q.Kind != core.QuestionPermission || (sessionID != "" && q.AskedSession != sessionID) {
		return
	}
	err = qs.k.commit(ctx, func(tx *store.Tx, c *changes) error {
		ok, err := qs.resolveQuestion(ctx, tx, m, core.QuestionStale, why, nil)
		if ok {
			c.tellWaiter(q.QuestionID, answerDelivery{status: core.QuestionStale, reason: why})
			c.question(m.Seq)
			c.touch(taskID)
		}
		return err
	})
	if err != nil {
		qs.k.log.Error("make permission question stale", "task", taskID, "err", err)
	}
}
