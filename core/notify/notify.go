// Package notify tells a person, outside any terminal kandev draws, that a
// task started needing them: a desktop notification (notify-send on Linux,
// osascript on macOS) when the `notifications` config key is on, and one
// JSON object on the stdin of the `notify_command` config key (for ntfy,
// Slack, a phone). The daemon runs one Notifier; the TUI only rings its
// bell on the engine's needs-you events.
//
// What a notification says comes from agents (titles, questions, stall
// details): it is cleaned of terminal controls, bounded, and, for a desktop
// notification whose body notify-send reads as markup, escaped, so an
// agent cannot put a link or a file:// image in front of the person.
// Every command runs in its own process group, bounded in time, and the
// group is ended when the command returns or times out. Deliveries are
// rate-limited: a burst, then one per interval, the events that came
// meanwhile folded into the next delivery's count.
package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/agent"
	"github.com/kandev/kandev/core/textsafe"
)

// Event is one notification: what a notify_command reads on stdin, one
// JSON object and a newline per event.
type Event struct {
	// Type is "needs_you": the task started needing a person.
	Type    string `json:"type"`
	TaskID  string `json:"task_id"`
	Title   string `json:"title"`
	Why     string `json:"why"`
	Urgency string `json:"urgency"`
	// Urgent: a person is waited on (a question, a permission, a stall),
	// not merely handed work back.
	Urgent bool `json:"urgent"`
	// Text is the question or the stall's detail, one paragraph, bounded
	// ("" for neither).
	Text string `json:"text"`
	// Summary is the one line a desktop notification shows.
	Summary string    `json:"summary"`
	At      time.Time `json:"at"`
	// Folded counts the events the rate limit folded into this one since
	// the last delivery (their tasks needed you too).
	Folded int `json:"folded"`
	// URL is the task's page on the web inbox, when the daemon serves
	// one (docs/web.md); "" otherwise.
	URL string `json:"url,omitempty"`
}

// EventNeedsYou is Event.Type for a task that started needing a person.
const EventNeedsYou = "needs_you"

// Bounds of the agent-supplied text an event carries, in runes.
const (
	titleMax = 200
	textMax  = 500
)

// FromTask describes a task that started needing a person.
func FromTask(t *core.Task, at time.Time) Event {
	a := t.NeedsYou()
	ev := Event{Type: EventNeedsYou, TaskID: textsafe.Line(t.ID), Title: bound(textsafe.Line(t.Title), titleMax),
		Why: a.Why, Urgency: a.Urgency.String(), Urgent: a.Urgency.Urgent(), At: at.UTC()}
	switch {
	case t.PendingQuestion != nil && t.PendingQuestion.Status == core.QuestionPending:
		q := t.PendingQuestion
		text := q.Text
		if q.Tool != nil && q.Tool.Title != "" {
			text = q.Tool.Title
		}
		ev.Text = bound(textsafe.Line(text), textMax)
	case len(t.ChildQuestions) > 0:
		// A subtask asked it while a person holds it (ADR 0069): the
		// newest question is the news.
		cq := t.ChildQuestions[0]
		for _, c := range t.ChildQuestions[1:] {
			if c.Question.AskedAt.After(cq.Question.AskedAt) {
				cq = c
			}
		}
		ev.Text = bound(textsafe.Line("subtask "+cq.TaskID+" asks: "+cq.Question.Text), textMax)
		whom := "you"
		if t.Assignee != nil && !t.Assignee.IsOperator() {
			whom = textsafe.Line(t.Assignee.Name)
		}
		ev.Summary = "task " + ev.TaskID + " has a question from subtask " + textsafe.Line(cq.TaskID) + " for " + whom + ": " + ev.Title
		return ev
	case t.Stalled != nil:
		ev.Text = bound(textsafe.Line(t.Stalled.Detail), textMax)
	}
	ev.Summary = "task " + ev.TaskID + " " + describe(a) + ": " + ev.Title
	return ev
}

func describe(a core.Attention) string {
	switch a.Why {
	case "permission":
		return "asks your permission"
	case "question":
		return "asks you a question"
	case "":
		return "needs you"
	}
	return "needs you (" + a.Why + ")"
}

// bound cuts s at n runes, marking the cut.
func bound(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// Settings are what the config says at the moment of an event, read at
// each delivery so `kandev config set` takes effect without a restart.
type Settings struct {
	Desktop bool   // the notifications key
	Command string // the notify_command key, run by sh -c
}

// Options configure a Notifier; zero values take the defaults.
type Options struct {
	Settings func() (Settings, error)
	Logger   *slog.Logger
	// Timeout bounds each command (default 10s); its process group is
	// killed then.
	Timeout time.Duration
	// Burst deliveries go at once (default 5), then one per Every
	// (default 30s).
	Burst int
	Every time.Duration
	Now   func() time.Time
	// LookPath and GOOS pick the desktop notifier (tests).
	LookPath func(string) (string, error)
	GOOS     string
}

// Notifier delivers events in order, one at a time, from its Run loop.
type Notifier struct {
	o      Options
	mu     sync.Mutex
	queue  []Event
	folded int
	kick   chan struct{}
}

// queueMax bounds the events waiting for delivery; beyond it the oldest
// are folded into the next delivery's count.
const queueMax = 32

// New makes a Notifier; call Run to deliver.
func New(o Options) *Notifier {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	if o.Burst <= 0 {
		o.Burst = 5
	}
	if o.Every <= 0 {
		o.Every = 30 * time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.LookPath == nil {
		o.LookPath = exec.LookPath
	}
	if o.GOOS == "" {
		o.GOOS = runtime.GOOS
	}
	return &Notifier{o: o, kick: make(chan struct{}, 1)}
}

// Notify queues an event without blocking.
func (n *Notifier) Notify(ev Event) {
	n.mu.Lock()
	if len(n.queue) >= queueMax {
		n.queue = n.queue[1:]
		n.folded++
	}
	n.queue = append(n.queue, ev)
	n.mu.Unlock()
	select {
	case n.kick <- struct{}{}:
	default:
	}
}

// Run delivers queued events until ctx ends. While the rate limit holds,
// events wait; when it lets one through, the most recent goes, counting
// the others it stands for.
func (n *Notifier) Run(ctx context.Context) {
	tokens := float64(n.o.Burst)
	last := n.o.Now()
	for {
		n.mu.Lock()
		pending := len(n.queue)
		n.mu.Unlock()
		if pending == 0 {
			select {
			case <-ctx.Done():
				return
			case <-n.kick:
				continue
			}
		}
		now := n.o.Now()
		tokens = min(float64(n.o.Burst), tokens+float64(now.Sub(last))/float64(n.o.Every))
		last = now
		if tokens < 1 {
			wait := time.Duration((1 - tokens) * float64(n.o.Every))
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			continue
		}
		tokens--
		n.mu.Lock()
		var ev Event
		if tokens < 1 {
			// The last token for a while: the latest event goes, standing
			// for every one queued with it.
			ev = n.queue[len(n.queue)-1]
			ev.Folded = n.folded + len(n.queue) - 1
			n.queue, n.folded = n.queue[:0], 0
		} else {
			ev = n.queue[0]
			ev.Folded = n.folded
			n.queue, n.folded = n.queue[1:], 0
		}
		n.mu.Unlock()
		n.deliver(ctx, ev)
	}
}

// deliver sends one event to every configured channel.
func (n *Notifier) deliver(ctx context.Context, ev Event) {
	var s Settings
	if n.o.Settings != nil {
		var err error
		if s, err = n.o.Settings(); err != nil {
			n.o.Logger.Warn("notify: read the config", "err", err)
			return
		}
	}
	if s.Desktop {
		if err := n.desktop(ctx, ev); err != nil {
			n.o.Logger.Warn("notify: desktop notification", "task", ev.TaskID, "err", err)
		}
	}
	if s.Command != "" {
		b, err := json.Marshal(ev)
		if err != nil {
			return
		}
		if err := n.run(ctx, append(b, '\n'), "/bin/sh", "-c", s.Command); err != nil {
			n.o.Logger.Warn("notify: notify_command", "task", ev.TaskID, "err", err)
		}
	}
}

// desktop shows the event through notify-send or osascript; neither on
// PATH is no error (the log says so once per event at debug level).
func (n *Notifier) desktop(ctx context.Context, ev Event) error {
	title := "kandev"
	body := ev.Summary
	if ev.Text != "" {
		body += "\n" + ev.Text
	}
	if ev.Folded > 0 {
		body += "\n(and " + itoa(ev.Folded) + " more)"
	}
	if n.o.GOOS == "darwin" {
		p, err := n.o.LookPath("osascript")
		if err != nil {
			n.o.Logger.Debug("notify: no osascript on PATH")
			return nil
		}
		return n.run(ctx, nil, p, "-e", "display notification "+appleString(body)+" with title "+appleString(title))
	}
	p, err := n.o.LookPath("notify-send")
	if err != nil {
		n.o.Logger.Debug("notify: no notify-send on PATH")
		return nil
	}
	return n.run(ctx, nil, p, "--app-name=kandev", "--", title, Escape(body))
}

// Escape makes text plain for a notification body that is read as markup
// (notify-send's servers take <b>, <a href>, <img src>): &, < and > are
// written as entities, so they show as themselves.
func Escape(s string) string {
	if !strings.ContainsAny(s, "&<>") {
		return s
	}
	r := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")
	return r.Replace(s)
}

// appleString quotes s as an AppleScript string literal.
func appleString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		if r == '"' || r == '\\' {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	b.WriteByte('"')
	return b.String()
}

// outputMax bounds what a command's output adds to the log.
const outputMax = 1024

// run runs one command with stdin, in its own process group, within the
// timeout; the group is killed when the command ends or times out, so
// nothing it started outlives it.
func (n *Notifier) run(ctx context.Context, stdin []byte, name string, args ...string) error {
	ctx, cancel := context.WithTimeout(ctx, n.o.Timeout)
	defer cancel()
	cmd := exec.Command(name, args...)
	cmd.Stdin = bytes.NewReader(stdin)
	out := &capped{max: outputMax}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// A process that left the group (setsid) and kept the output open
	// does not hold the wait past this.
	cmd.WaitDelay = 500 * time.Millisecond
	// Marked as an agent's session is (ADR 0013): what it starts with
	// setsid, out of the group, is found by the marker and ended with it.
	marker := agent.HelperMarker("notify")
	cmd.Env = append(os.Environ(), agent.SessionEnv+"="+marker)
	if err := cmd.Start(); err != nil {
		return err
	}
	pgid := cmd.Process.Pid
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-done
		err = errors.New("ended with the daemon; its processes were killed")
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			err = errors.New("timed out after " + n.o.Timeout.String() + "; its processes were killed")
		}
	}
	// Whatever the command left behind, in its group or not, ends with it.
	agent.EndHelper(pgid, marker)
	if err != nil && out.Len() > 0 {
		err = errors.New(err.Error() + ": " + textsafe.Line(out.String()))
	}
	return err
}

// capped keeps the first max bytes written to it. Writes never fail, so
// a chatty command is not stopped by a full buffer.
type capped struct {
	mu  sync.Mutex
	max int
	b   bytes.Buffer
}

func (c *capped) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if room := c.max - c.b.Len(); room > 0 {
		c.b.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

func (c *capped) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.b.Len()
}

func (c *capped) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.b.String()
}

func itoa(n int) string { return strconv.Itoa(n) }
