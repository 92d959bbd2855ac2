package tui

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
)

// fakeClient is an in-memory api.Client. The embedded interface is nil:
// a method the TUI should never call panics.
type fakeClient struct {
	api.Client

	mu       sync.Mutex
	tasks    []core.Task
	profiles []core.Profile
	convo    map[string][]core.Message          // by task, in sequence order
	convoIns map[string][]api.ConversationInput // by task
	gate     chan struct{}                      // when set, Conversation waits for it
	gated    int                                // Conversation calls waiting at gate
	streams  []*fakeStream
	pushed   int // events pushed on any stream
	calls    []string
	errs     map[string]error // by method name
	// unfollowed lists the conversations read while the stream did not
	// follow their appends.
	unfollowed []string

	created  []api.CreateTaskInput
	answers  []api.AnswerInput
	messages []api.MessageInput
	budgets  []api.BudgetInput
	stopRes  string
	roles    []api.Role
	persons  []api.Person
	statuses []statusCall
	handoffs []api.HandoffInput
	queue    map[string][]api.QueuedItem // by task
	diffs    map[string]api.TaskDiff     // by task
}

// statusCall is one SetTaskStatus the UI made.
type statusCall struct {
	id string
	to core.Status
}

func newFake(tasks ...core.Task) *fakeClient {
	return &fakeClient{
		tasks: tasks,
		profiles: []core.Profile{
			{Name: "claude", MCP: true}, {Name: "mock", MCP: true}, {Name: "plain", MCP: false},
		},
		convo:   map[string][]core.Message{},
		queue:   map[string][]api.QueuedItem{},
		diffs:   map[string]api.TaskDiff{},
		errs:    map[string]error{},
		stopRes: "stopped",
		roles: []api.Role{
			{Name: "mock", Profile: "mock", Implicit: true},
			{Name: "reviewer", Profile: "claude", ReportsTo: &core.Ref{Kind: "person", Name: core.Operator}},
			{Name: "plainer", Profile: "plain"},
		},
		persons: []api.Person{{Name: core.Operator}, {Name: "alice"}},
	}
}

func (f *fakeClient) record(call string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, call)
	name, _, _ := strings.Cut(call, " ")
	return f.errs[name]
}

func (f *fakeClient) setErr(method string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errs[method] = err
}

func (f *fakeClient) callCount(prefix string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.calls {
		if strings.HasPrefix(c, prefix) {
			n++
		}
	}
	return n
}

func (f *fakeClient) ListTasks(ctx context.Context, in api.ListTasksInput) ([]core.Task, error) {
	if err := f.record("ListTasks"); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]core.Task(nil), f.tasks...), nil
}

func (f *fakeClient) ListProfiles(ctx context.Context) ([]core.Profile, error) {
	if err := f.record("ListProfiles"); err != nil {
		return nil, err
	}
	return f.profiles, nil
}

// Conversation pages like the engine: forward from After (Next, More),
// or the newest entries before Before (-1: the tail) with First and Older.
// A test may hold every call at gate until it lets it through.
func (f *fakeClient) Conversation(ctx context.Context, id string, in api.ConversationInput) (api.ConversationPage, error) {
	if err := f.record("Conversation " + id); err != nil {
		return api.ConversationPage{}, err
	}
	f.mu.Lock()
	if n := len(f.streams); n > 0 && f.streams[n-1].sub != "" && !f.streams[n-1].closed && f.streams[n-1].appends != id {
		// An append between the page and a later move would be lost.
		f.unfollowed = append(f.unfollowed, id+" while following "+f.streams[n-1].appends)
	}
	if f.convoIns == nil {
		f.convoIns = map[string][]api.ConversationInput{}
	}
	f.convoIns[id] = append(f.convoIns[id], in)
	gate := f.gate
	if gate != nil {
		f.gated++
	}
	f.mu.Unlock()
	if gate != nil {
		var err error
		select {
		case <-gate:
		case <-ctx.Done():
			err = ctx.Err()
		}
		f.mu.Lock()
		f.gated--
		f.mu.Unlock()
		if err != nil {
			return api.ConversationPage{}, err
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	all := f.convo[id]
	limit := in.Limit
	if limit <= 0 {
		limit = 50
	}
	p := api.ConversationPage{TaskID: id, Messages: []core.Message{}, Next: in.After}
	if in.Before != 0 {
		before := in.Before
		if before == -1 {
			before = math.MaxInt64
		}
		i := sort.Search(len(all), func(i int) bool { return all[i].Seq >= before })
		j := max(0, i-limit)
		p.Messages = append(p.Messages, all[j:i]...)
		p.Older = j > 0
	} else {
		i := sort.Search(len(all), func(i int) bool { return all[i].Seq > in.After })
		j := min(len(all), i+limit)
		p.Messages = append(p.Messages, all[i:j]...)
		p.More, p.Older = j < len(all), in.After > 0
	}
	for k, m := range p.Messages {
		if k == 0 {
			p.First = m.Seq
		}
		p.Next = m.Seq
	}
	return p, nil
}

// conversationCalls is what each Conversation call for the task asked for.
func (f *fakeClient) conversationCalls(id string) []api.ConversationInput {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]api.ConversationInput(nil), f.convoIns[id]...)
}

// addMessages appends entries to a task's stored conversation.
func (f *fakeClient) addMessages(id string, ms ...core.Message) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.convo[id] = append(f.convo[id], ms...)
}

// fakeStream is one event stream: the test feeds it with push and ends it
// with endStream.
type fakeStream struct {
	ch     chan core.Event
	closed bool
	// sub names it; opened is the appends filter it opened with, appends
	// the filter as opened and moved.
	sub, opened, appends string
}

// Events opens a stream the test feeds with push and ends with endStream.
func (f *fakeClient) Events(ctx context.Context, in api.EventsInput) (<-chan core.Event, error) {
	if err := f.record("Events"); err != nil {
		return nil, err
	}
	s := &fakeStream{ch: make(chan core.Event, 64), opened: in.Appends, appends: in.Appends}
	if in.Appends == api.AppendsNone {
		s.appends = ""
	}
	f.mu.Lock()
	f.streams = append(f.streams, s)
	s.sub = fmt.Sprintf("sub%d", len(f.streams))
	if in.Appends != "" {
		// As the daemon's client: the subscription first (counted as
		// pushed, so the driver waits for the model to read it).
		f.pushed++
		s.ch <- core.Event{Type: core.EventSubscribed, Subscription: s.sub}
	}
	f.mu.Unlock()
	return s.ch, nil
}

// FollowAppends records the move; the fake's streams carry only what the
// test pushes, so it filters nothing.
func (f *fakeClient) FollowAppends(ctx context.Context, sub, taskID string) error {
	if err := f.record("FollowAppends " + sub + " " + taskID); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, s := range f.streams {
		if s.sub == sub && !s.closed {
			s.appends = taskID
			return nil
		}
	}
	return core.Errorf(core.CodeNotFound, "no event stream %q", sub)
}

func (f *fakeClient) stream() *fakeStream {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.streams) == 0 {
		return nil
	}
	return f.streams[len(f.streams)-1]
}

func (f *fakeClient) push(evs ...core.Event) {
	s := f.stream()
	for _, ev := range evs {
		f.mu.Lock()
		if s.closed {
			f.mu.Unlock()
			panic("push on an ended event stream")
		}
		f.pushed++
		f.mu.Unlock()
		s.ch <- ev
	}
}

func (f *fakeClient) endStream() { f.closeStream(f.stream()) }

func (f *fakeClient) closeStream(s *fakeStream) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !s.closed {
		s.closed = true
		close(s.ch)
	}
}

// streamState: whether the stream the UI follows is open, how many
// Conversation calls wait at the gate, and how many events were pushed.
func (f *fakeClient) streamState(following <-chan core.Event) (open, holding bool, gated, pushed int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, s := range f.streams {
		if (<-chan core.Event)(s.ch) == following {
			open = !s.closed
		}
	}
	if f.gate != nil {
		select {
		case <-f.gate: // opened: the held calls are on their way
		default:
			holding, gated = true, f.gated
		}
	}
	return open, holding, gated, f.pushed
}

func (f *fakeClient) CreateTask(ctx context.Context, in api.CreateTaskInput) (core.Task, error) {
	f.mu.Lock()
	f.created = append(f.created, in)
	f.mu.Unlock()
	if err := f.record("CreateTask"); err != nil {
		return core.Task{}, err
	}
	t := core.Task{ID: fmt.Sprintf("new%03d", len(f.created)), Title: in.Title, ParentID: in.ParentID, Profile: in.Profile,
		Autopilot: in.Autopilot, Status: core.StatusTodo, CreatedAt: testNow, UpdatedAt: testNow}
	f.mu.Lock()
	f.tasks = append(f.tasks, t)
	f.mu.Unlock()
	return t, nil
}

func (f *fakeClient) AnswerQuestion(ctx context.Context, id string, in api.AnswerInput) (api.AnswerResult, error) {
	f.mu.Lock()
	f.answers = append(f.answers, in)
	f.mu.Unlock()
	if err := f.record("AnswerQuestion " + id); err != nil {
		return api.AnswerResult{}, err
	}
	return api.AnswerResult{TaskID: id, QuestionID: in.QuestionID, Status: "answered", Delivered: "waiting_call"}, nil
}

func (f *fakeClient) MessageTask(ctx context.Context, id string, in api.MessageInput) (api.MessageResult, error) {
	f.mu.Lock()
	f.messages = append(f.messages, in)
	f.mu.Unlock()
	if err := f.record("MessageTask " + id); err != nil {
		return api.MessageResult{}, err
	}
	st := "queued"
	if in.Delivery == api.DeliveryInterrupt {
		st = "interrupted"
	}
	res := api.MessageResult{TaskID: id, Status: st, Position: 1}
	for _, c := range in.Comments {
		res.Comments = append(res.Comments, api.ReviewComment{TaskID: id, File: c.File, Line: c.Line, EndLine: c.EndLine, Text: c.Text, State: api.ReviewOpen})
	}
	return res, nil
}

// SetBudget records the change and raises a cost budget by Add (or
// fixes it to Set), clearing its halt.
func (f *fakeClient) SetBudget(ctx context.Context, id string, in api.BudgetInput) (core.Task, error) {
	f.mu.Lock()
	f.budgets = append(f.budgets, in)
	f.mu.Unlock()
	if err := f.record("SetBudget " + id); err != nil {
		return core.Task{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	t := f.task(id)
	if t == nil {
		return core.Task{}, core.Errorf(core.CodeNotFound, "task %s not found", id)
	}
	amt, err := api.CheckBudgetChange(budgetAmount(t), in)
	if err != nil {
		return core.Task{}, err
	}
	if t.Budget == nil {
		t.Budget = &core.BudgetInfo{Holder: id}
	}
	t.Budget.Amount, t.Budget.Reached, t.Stalled = amt, false, nil
	return *t, nil
}

// Usage makes the fake an api.Spender; the UI reads no report.
func (f *fakeClient) Usage(ctx context.Context, in api.UsageInput) (api.UsageReport, error) {
	return api.UsageReport{}, f.record("Usage")
}

func budgetAmount(t *core.Task) *core.Amount {
	if t.Budget == nil {
		return nil
	}
	return &t.Budget.Amount
}

func (f *fakeClient) StopTask(ctx context.Context, id string, _ api.StopTaskInput) (api.StopResult, error) {
	if err := f.record("StopTask " + id); err != nil {
		return api.StopResult{}, err
	}
	return api.StopResult{TaskID: id, Result: f.stopRes}, nil
}

func (f *fakeClient) StartTask(ctx context.Context, id string, in api.StartTaskInput) (core.Task, error) {
	if err := f.record("StartTask " + id); err != nil {
		return core.Task{}, err
	}
	return core.Task{ID: id, Status: core.StatusInProgress}, nil
}

func (f *fakeClient) GetTask(ctx context.Context, id string) (core.Task, error) {
	if err := f.record("GetTask " + id); err != nil {
		return core.Task{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if t := f.task(id); t != nil {
		return *t, nil
	}
	return core.Task{}, core.Errorf(core.CodeNotFound, "task %s not found", id)
}

func (f *fakeClient) ArchiveTask(ctx context.Context, id string, _ api.ArchiveTaskInput) (core.Task, error) {
	if err := f.record("ArchiveTask " + id); err != nil {
		return core.Task{}, err
	}
	return core.Task{ID: id, Archived: true}, nil
}

func (f *fakeClient) ListRoles(ctx context.Context) ([]api.Role, error) {
	if err := f.record("ListRoles"); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]api.Role(nil), f.roles...), nil
}

func (f *fakeClient) ListPersons(ctx context.Context) ([]api.Person, error) {
	if err := f.record("ListPersons"); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]api.Person(nil), f.persons...), nil
}

// task finds a stored task; the caller holds mu.
func (f *fakeClient) task(id string) *core.Task {
	for i := range f.tasks {
		if f.tasks[i].ID == id {
			return &f.tasks[i]
		}
	}
	return nil
}

// SetTaskStatus moves the stored task as the engine's transition table
// allows, refusing the rest as the engine does (both states named).
func (f *fakeClient) SetTaskStatus(ctx context.Context, id string, to core.Status) (core.Task, error) {
	f.mu.Lock()
	f.statuses = append(f.statuses, statusCall{id, to})
	f.mu.Unlock()
	if err := f.record("SetTaskStatus " + id + " " + string(to)); err != nil {
		return core.Task{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	t := f.task(id)
	if t == nil {
		return core.Task{}, core.Errorf(core.CodeNotFound, "task %s not found", id)
	}
	if err := core.CheckTransition(t.Status, to); err != nil {
		return core.Task{}, core.Errorf(core.CodeConflict, "task %s: %s", id, core.AsError(err).Message)
	}
	t.Status = to
	return *t, nil
}

// HandoffTask resolves the name like the engine (back, a role, a person)
// and says how the new assignee hears of it.
func (f *fakeClient) HandoffTask(ctx context.Context, id string, in api.HandoffInput) (api.HandoffResult, error) {
	f.mu.Lock()
	f.handoffs = append(f.handoffs, in)
	f.mu.Unlock()
	if err := f.record("HandoffTask " + id + " " + in.To); err != nil {
		return api.HandoffResult{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	t := f.task(id)
	if t == nil {
		return api.HandoffResult{}, core.Errorf(core.CodeNotFound, "task %s not found", id)
	}
	var to *core.Ref
	switch {
	case in.To == "back":
		to = t.HandedBy
		if to == nil {
			return api.HandoffResult{}, core.Errorf(core.CodeValidation, "task %s has nobody to hand back to: nobody handed it over; name a role or a person", id)
		}
	default:
		for _, r := range f.roles {
			if r.Name == in.To {
				to = &core.Ref{Kind: "role", Name: r.Name}
			}
		}
		for _, p := range f.persons {
			if p.Name == in.To {
				to = &core.Ref{Kind: "person", Name: p.Name}
			}
		}
		if to == nil {
			return api.HandoffResult{}, core.Errorf(core.CodeNotFound, "no role or person named %s (see kandev role list, kandev person list)", in.To)
		}
	}
	r := api.HandoffResult{TaskID: id, To: *to, Status: "handed_off", Delivered: "turn"}
	if t.Assignee != nil {
		r.From = *t.Assignee
	}
	if r.From == *to {
		return api.HandoffResult{}, core.Errorf(core.CodeConflict, "task %s is already with %s %s", id, to.Kind, to.Name)
	}
	for _, ro := range f.roles {
		for _, p := range f.profiles {
			if to.Kind == "role" && ro.Name == to.Name && p.Name == ro.Profile && t.Autopilot && !p.MCP {
				return api.HandoffResult{}, core.Errorf(core.CodeValidation, "task %s is on autopilot and role %s cannot run it: profile %s does not take kandev's MCP server", id, ro.Name, p.Name)
			}
		}
	}
	switch to.Kind {
	case "person":
		r.Delivered = "waiting"
	case "task":
		r.Delivered = "sign_off"
	}
	return r, nil
}

// ---- fixtures ----

var testNow = time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC)

func ago(d time.Duration) time.Time { return testNow.Add(-d) }

func session(taskID string, state core.SessionState, at time.Time) *core.SessionInfo {
	return &core.SessionInfo{ID: "s-" + taskID, TaskID: taskID, Profile: "mock", State: state, PID: 4242, Turns: 1, CreatedAt: at, UpdatedAt: at}
}

func userQuestion(id string, items ...core.QuestionItem) *core.QuestionInfo {
	return &core.QuestionInfo{ID: id, Kind: core.QuestionUser, Status: core.QuestionPending, Text: items[0].Prompt, Questions: items, AskedAt: ago(time.Minute)}
}

func parentQuestion(id, parent string) *core.QuestionInfo {
	return &core.QuestionInfo{ID: id, Kind: core.QuestionParent, Status: core.QuestionPending, Text: "Which colour?", ParentTaskID: parent,
		Questions: []core.QuestionItem{{Prompt: "Which colour?"}}, AskedAt: ago(time.Minute)}
}

var dbQuestion = core.QuestionItem{Prompt: "Which DB?", Options: []core.QuestionOption{{Label: "sqlite"}, {Label: "postgres", Description: "the big one"}}}

// turnFrom marks a session's current turn as begun at.
func turnFrom(s *core.SessionInfo, at time.Time) *core.SessionInfo {
	s.TurnStartedAt = at
	return s
}

// demoTasks is the demo's shape: an autopilot root with children (one
// running, one asking its parent, one failed), a normal task asking the
// operator, and a stopped task. The running ones say when their turn
// began.
func demoTasks() []core.Task {
	return []core.Task{
		{ID: "root01", Title: "Split the auth module", Status: core.StatusInProgress, Autopilot: true, Profile: "claude",
			CreatedAt: ago(time.Hour), UpdatedAt: ago(40 * time.Minute), Session: session("root01", core.SessionWaitingForInput, ago(40*time.Minute))},
		{ID: "kid001", Title: "Extract the token store", ParentID: "root01", Status: core.StatusInProgress, Autopilot: true, Profile: "mock",
			CreatedAt: ago(50 * time.Minute), UpdatedAt: ago(3 * time.Minute), Session: turnFrom(session("kid001", core.SessionRunning, ago(3*time.Minute)), ago(3*time.Minute))},
		{ID: "kid002", Title: "Pick a colour for the login page", ParentID: "root01", Status: core.StatusInProgress, Autopilot: true, Profile: "mock",
			CreatedAt: ago(45 * time.Minute), UpdatedAt: ago(2 * time.Minute), Session: session("kid002", core.SessionWaitingForInput, ago(2*time.Minute)),
			PendingQuestion: parentQuestion("q-par", "root01")},
		{ID: "kid003", Title: "Write the migration", ParentID: "root01", Status: core.StatusReview, Profile: "mock",
			Assignee: &core.Ref{Kind: "person", Name: core.Operator}, HandedBy: &core.Ref{Kind: "role", Name: "mock"}, YourTurn: true,
			Stalled:   &core.Stall{Reason: "Stalled", From: core.ParseBy("role:mock"), Detail: "agent exited with status 3", At: ago(30 * time.Minute)},
			CreatedAt: ago(44 * time.Minute), UpdatedAt: ago(30 * time.Minute), Session: &core.SessionInfo{ID: "s-kid003", TaskID: "kid003", State: core.SessionFailed, Error: "agent exited with status 3", CreatedAt: ago(31 * time.Minute), UpdatedAt: ago(30 * time.Minute)}},
		{ID: "ask001", Title: "Choose the database for the audit log, which needs a long title to show truncation", Status: core.StatusInProgress, Profile: "mock",
			CreatedAt: ago(20 * time.Minute), UpdatedAt: ago(5 * time.Minute), Session: turnFrom(session("ask001", core.SessionRunning, ago(5*time.Minute)), ago(5*time.Minute+5*time.Second)),
			PendingQuestion: userQuestion("q-usr", dbQuestion)},
		{ID: "stop01", Title: "Benchmark the cache", Status: core.StatusReview, Profile: "mock", Halted: true,
			CreatedAt: ago(10 * time.Minute), UpdatedAt: ago(8 * time.Minute), Session: session("stop01", core.SessionCancelled, ago(8*time.Minute))},
		{ID: "done01", Title: "Ship v0.1 — 日本語のタイトル", Status: core.StatusDone, Profile: "mock",
			CreatedAt: ago(48 * time.Hour), UpdatedAt: ago(26 * time.Hour)},
	}
}

func demoConvo() map[string][]core.Message {
	msg := func(seq int64, task string, kind core.MessageKind, author, text, meta string) core.Message {
		m := core.Message{Seq: seq, TaskID: task, Kind: kind, Author: core.ParseBy(author), Text: text, CreatedAt: ago(5 * time.Minute), UpdatedAt: ago(5 * time.Minute)}
		if meta != "" {
			m.Meta = []byte(meta)
		}
		return m
	}
	return map[string][]core.Message{
		"ask001": {
			msg(1, "ask001", core.MsgStatus, "kandev", "agent mock (pid 4242): started a new agent session", ""),
			msg(2, "ask001", core.MsgPrompt, "person:operator", "Pick the audit log's database.", ""),
			msg(3, "ask001", core.MsgAgent, "task:ask001", "Looking at the \x1b[1;31mschema\x1b[0m…\tdone\r\n", ""),
			msg(4, "ask001", core.MsgToolCall, "task:ask001", "kandev: ask_user_question_kandev [in_progress]", `{"status":"in_progress","title":"kandev: ask_user_question_kandev"}`),
			msg(5, "ask001", core.MsgQuestion, "task:ask001", "Which DB?\n   1) sqlite\n   2) postgres — the big one", `{"question_id":"q-usr","kind":"user","status":"pending"}`),
		},
	}
}

// ---- driver ----

// driver runs the model as bubbletea would, without a terminal: it feeds
// every message the commands produce back into Update. Commands that
// block (the event stream's wait) keep running in the background and
// deliver when something arrives. Timers are the driver's: short ones
// (backoff, debounce) fire at once, long ones (the flash) never do, so a
// test sees the same thing on a fast or a loaded machine.
type driver struct {
	t    *testing.T
	m    *Model
	f    *fakeClient
	msgs chan tea.Msg
	quit bool
	ctx  context.Context

	running  atomic.Int64 // commands whose message is not yet in msgs
	waiting  atomic.Int64 // of those, waits on an event stream
	consumed int          // stream events Update has been given
	// restPending: the model waits for the rest of a listing whose first
	// rows it drew; that wait is parked while the fake's gate holds it.
	restPending bool
}

func testStyles() styles {
	r := lipgloss.NewRenderer(nil)
	r.SetColorProfile(termenv.Ascii)
	return newStyles(r, false)
}

func newDriver(t *testing.T, f *fakeClient, w, h int, opts ...func(*Options)) *driver {
	t.Helper()
	return startDriver(t, f, f, w, h, opts...)
}

// startDriver runs a model over client (f, or a wrapper of it) and
// settles its start.
func startDriver(t *testing.T, client api.Client, f *fakeClient, w, h int, opts ...func(*Options)) *driver {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	o := Options{Now: func() time.Time { return testNow }, Location: time.UTC, CWD: "/work"}
	for _, fn := range opts {
		fn(&o)
	}
	m := newModel(ctx, client, o, testStyles())
	d := &driver{t: t, m: m, f: f, msgs: make(chan tea.Msg, 1024), ctx: ctx}
	// A fake another driver used: what was pushed before was its own (the
	// subscribed event each stream opens with, at least).
	_, _, _, d.consumed = f.streamState(nil)
	// Reconnects wait for the test to send reconnectMsg: the first backoff
	// is long enough for the driver to park it.
	m.tickEvery, m.debounce, m.backoff, m.after = 0, 0, time.Hour, d.after
	d.send(tea.WindowSizeMsg{Width: w, Height: h})
	d.run(m.Init())
	d.settle()
	return d
}

// shortTimer is the longest timer the driver fires at once.
const shortTimer = 100 * time.Millisecond

func (d *driver) after(dur time.Duration, fn func(time.Time) tea.Msg) tea.Cmd {
	if dur > shortTimer {
		return nil
	}
	return func() tea.Msg { return fn(testNow) }
}

func (d *driver) run(cmd tea.Cmd) {
	if cmd == nil {
		return
	}
	d.running.Add(1)
	wait := isEventWait(cmd)
	if wait {
		d.waiting.Add(1)
	}
	go func() {
		defer func() { // after the message is in msgs: settle sees one or the other
			if wait {
				d.waiting.Add(-1)
			}
			d.running.Add(-1)
		}()
		msg := cmd()
		select {
		case d.msgs <- msg:
		case <-d.ctx.Done():
		}
	}()
}

func (d *driver) send(msg tea.Msg) {
	d.t.Helper()
	switch msg := msg.(type) {
	case nil:
		return
	case tea.BatchMsg:
		for _, c := range msg {
			d.run(c)
		}
		return
	case tea.QuitMsg:
		d.quit = true
		return
	}
	_, cmd := d.m.Update(msg)
	d.run(cmd)
}

// isEventWait: cmd is a wait on the event stream (waitEventsCmd's
// closure, found by its name: a tea.Cmd carries no other mark).
func isEventWait(cmd tea.Cmd) bool {
	fn := runtime.FuncForPC(reflect.ValueOf(cmd).Pointer())
	return fn != nil && strings.Contains(fn.Name(), "waitEventsCmd")
}

// deliver hands Update a message a command produced, counting the stream
// events it carries (a test's own eventsMsg is not from the stream).
func (d *driver) deliver(msg tea.Msg) {
	d.t.Helper()
	switch msg := msg.(type) {
	case eventsMsg:
		d.consumed += len(msg.events)
	case tasksMsg:
		// First rows with the rest still on its way: the model now runs
		// the command that waits for the rest.
		d.restPending = msg.rest != nil
	}
	d.send(msg)
}

// quiet: no message waits, every event pushed has reached Update, and
// every command still running is parked on the test (see parked).
func (d *driver) quiet() bool {
	// The order matters: a command puts its message in msgs before it
	// stops counting as running, so msgs is read last.
	running := d.running.Load()
	return running == d.parked() && len(d.msgs) == 0
}

// parked counts the running commands that only the test can move:
// Conversation calls held at a closed gate, the wait for the rest of a
// listing the gate holds (restPending), and the waits on the event
// stream while the stream the model follows is open and every event
// pushed has reached Update (a wait that took events is still on its
// way). A wait on an older stream is parked too: the fake ends a stream
// only when the test says so, and the model ignores what an old
// generation delivers.
func (d *driver) parked() int64 {
	open, holding, gated, pushed := d.f.streamState(d.m.events)
	n := int64(gated)
	if d.m.conn == connLive && open && pushed == d.consumed {
		n += d.waiting.Load()
	}
	if d.restPending && holding {
		n++
	}
	return n
}

// settleLimit only ends a test that can never settle (a command that
// blocks on something the fake does not count as parked); reaching it is
// a bug in the test or the model, not slowness.
const settleLimit = time.Minute

// settleMessages ends a test whose commands feed each other for ever.
const settleMessages = 100_000

// settle processes messages until the model is quiet. It waits on the
// commands themselves, never on a quiet spell, so a slow machine only
// makes it slower.
func (d *driver) settle() {
	d.t.Helper()
	stuck := time.NewTimer(settleLimit)
	defer stuck.Stop()
	poll := time.NewTicker(time.Millisecond)
	defer poll.Stop()
	delivered := 0
	for {
		if delivered > settleMessages {
			d.t.Fatalf("the model never settled: %d messages and counting (commands feeding each other)", delivered)
		}
		select {
		case msg := <-d.msgs:
			d.deliver(msg)
			delivered++
			stuck.Reset(settleLimit)
			continue
		default:
		}
		if d.quiet() {
			return
		}
		select {
		case msg := <-d.msgs:
			d.deliver(msg)
			delivered++
			stuck.Reset(settleLimit)
		case <-poll.C:
		case <-stuck.C:
			_, _, _, pushed := d.f.streamState(d.m.events)
			d.t.Fatalf("the model never settled: %d commands running, %d parked, %d of %d events consumed",
				d.running.Load(), d.parked(), d.consumed, pushed)
		}
	}
}

// keys sends key presses ("j", "enter", "ctrl+c", or text) and settles.
func (d *driver) keys(keys ...string) {
	d.t.Helper()
	for _, k := range keys {
		d.send(keyMsg(k))
		d.settle()
	}
}

// typeText sends each rune as a key press.
func (d *driver) typeText(s string) {
	d.t.Helper()
	for _, r := range s {
		d.send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}})
	}
	d.settle()
}

func keyMsg(k string) tea.KeyMsg {
	switch k {
	case "enter":
		return tea.KeyMsg{Type: tea.KeyEnter}
	case "esc":
		return tea.KeyMsg{Type: tea.KeyEsc}
	case "tab":
		return tea.KeyMsg{Type: tea.KeyTab}
	case "shift+tab":
		return tea.KeyMsg{Type: tea.KeyShiftTab}
	case "up":
		return tea.KeyMsg{Type: tea.KeyUp}
	case "down":
		return tea.KeyMsg{Type: tea.KeyDown}
	case "left":
		return tea.KeyMsg{Type: tea.KeyLeft}
	case "right":
		return tea.KeyMsg{Type: tea.KeyRight}
	case "pgdown":
		return tea.KeyMsg{Type: tea.KeyPgDown}
	case "pgup":
		return tea.KeyMsg{Type: tea.KeyPgUp}
	case "ctrl+c":
		return tea.KeyMsg{Type: tea.KeyCtrlC}
	case "ctrl+j":
		return tea.KeyMsg{Type: tea.KeyCtrlJ}
	case "alt+enter":
		return tea.KeyMsg{Type: tea.KeyEnter, Alt: true}
	case "home":
		return tea.KeyMsg{Type: tea.KeyHome}
	case "end":
		return tea.KeyMsg{Type: tea.KeyEnd}
	case " ", "space":
		return tea.KeyMsg{Type: tea.KeySpace, Runes: []rune{' '}}
	}
	return tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(k)}
}

func (d *driver) view() string { return d.m.View() }

// select moves the cursor to the task with the id.
func (d *driver) selectTask(id string) {
	d.t.Helper()
	d.keys("g")
	for i := 0; i < len(d.m.tree.rows); i++ {
		if d.m.tree.selected == id {
			d.settle()
			return
		}
		d.keys("j")
	}
	d.t.Fatalf("task %s is not in the tree; rows: %v", id, d.m.tree.rows)
}

func (d *driver) mustShow(want ...string) {
	d.t.Helper()
	v := d.view()
	for _, w := range want {
		if !strings.Contains(v, w) {
			d.t.Fatalf("screen lacks %q:\n%s", w, v)
		}
	}
}

func (d *driver) mustNotShow(unwanted ...string) {
	d.t.Helper()
	v := d.view()
	for _, w := range unwanted {
		if strings.Contains(v, w) {
			d.t.Fatalf("screen shows %q:\n%s", w, v)
		}
	}
}

// rowOf is the screen line of the task's tree row.
func (d *driver) rowOf(id string) string {
	d.t.Helper()
	for _, l := range strings.Split(d.view(), "\n") {
		if strings.Contains(l, " "+id+" ") {
			return l
		}
	}
	d.t.Fatalf("no row for %s:\n%s", id, d.view())
	return ""
}

func (f *fakeClient) TaskQueue(ctx context.Context, id string) (api.QueueView, error) {
	if err := f.record("TaskQueue " + id); err != nil {
		return api.QueueView{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.queueView(id), nil
}

func (f *fakeClient) DropQueued(ctx context.Context, id string, in api.DropQueueInput) (api.QueueView, error) {
	if err := f.record(fmt.Sprintf("DropQueued %s %d %v", id, in.ID, in.All)); err != nil {
		return api.QueueView{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var kept []api.QueuedItem
	var dropped []int64
	for _, it := range f.queue[id] {
		if in.All || it.ID == in.ID {
			dropped = append(dropped, it.ID)
			continue
		}
		kept = append(kept, it)
	}
	f.queue[id] = kept
	v := f.queueView(id)
	v.Dropped = dropped
	return v, nil
}

func (f *fakeClient) queueView(id string) api.QueueView {
	v := api.QueueView{TaskID: id, Items: []api.QueuedItem{}}
	for i, it := range f.queue[id] {
		it.Position = i + 1
		v.Items = append(v.Items, it)
	}
	return v
}

// TaskDiff answers from diffs (by task); a task without one has no
// worktree, as the engine says.
func (f *fakeClient) PushTask(ctx context.Context, id string, in api.PushInput) (api.PushResult, error) {
	if err := f.record("PushTask " + id + " " + in.Remote); err != nil {
		return api.PushResult{}, err
	}
	return api.PushResult{Task: core.Task{ID: id}, Branch: "kandev/" + id, Remote: "origin", Commit: "0123456789abcdef"}, nil
}

func (f *fakeClient) PullRequestTask(ctx context.Context, id string, in api.PullRequestInput) (api.PullRequestResult, error) {
	if err := f.record(fmt.Sprintf("PullRequestTask %s draft=%v", id, in.Draft)); err != nil {
		return api.PullRequestResult{}, err
	}
	return api.PullRequestResult{Task: core.Task{ID: id}, URL: "https://github.com/me/app/pull/7"}, nil
}

func (f *fakeClient) TaskReview(ctx context.Context, id string) (api.ReviewView, error) {
	if err := f.record("TaskReview " + id); err != nil {
		return api.ReviewView{}, err
	}
	return api.ReviewView{TaskID: id, Comments: []api.ReviewComment{}}, nil
}

func (f *fakeClient) TaskDiff(ctx context.Context, id string, in api.DiffInput) (api.TaskDiff, error) {
	call := "TaskDiff " + id
	if in.Patch {
		call += " patch"
	}
	if err := f.record(call); err != nil {
		return api.TaskDiff{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	d, ok := f.diffs[id]
	if !ok {
		return api.TaskDiff{}, core.Errorf(core.CodeValidation, "task %s runs in a shared directory, not a worktree of its own: there is nothing to diff", id)
	}
	if !in.Patch {
		d.Patch = ""
	}
	return d, nil
}
