//go:build linux

package main

// Soak (issue 39, first slice): N mock sessions over M hosts (this machine
// and loopback SSH hosts, one sshd each), a workload generated from a seed,
// one kill -9 of the daemon mid-run and its restart, then an oracle that
// compares the driver's own log with kandev's record (soak_oracle.go).
//
//	go run ./cmd/kandev-bench soak -sessions 10 -hosts 2 -seed 1
//
// The hosts are internal/sshtest's loopback sshds: each is its own sshd,
// port, key and remote directory, all on the one remote account
// (kandevremote) that sshtest makes. Without root or sshd the soak runs on
// this machine alone and says so.

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/daemonclient"
	"github.com/kandev/kandev/internal/sshtest"
)

// init runs `kandev-bench soak ...` before main's own flags are parsed.
func init() {
	if len(os.Args) > 1 && os.Args[1] == "soak" {
		if err := soakMain(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "kandev-bench soak:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
}

type soakConfig struct {
	seed     uint64
	sessions int
	hosts    int
	kills    int
	wait     time.Duration // how long a round may take to settle
	duration time.Duration // rounds until this has passed
	bin      string        // kandev binary; built when empty
	warm     bool          // one session per SSH host before the workload
}

func soakMain(args []string) error {
	fs := flag.NewFlagSet("soak", flag.ContinueOnError)
	cfg := soakConfig{}
	fs.Uint64Var(&cfg.seed, "seed", uint64(time.Now().UnixNano()), "the workload's seed (printed, to replay a run)")
	fs.IntVar(&cfg.sessions, "sessions", 100, "root sessions of the workload")
	fs.IntVar(&cfg.hosts, "hosts", 10, "hosts: this machine plus hosts-1 loopback SSH hosts")
	fs.IntVar(&cfg.kills, "kills", 1, "kill -9s of the daemon mid-run (each followed by a restart)")
	fs.DurationVar(&cfg.wait, "wait", 5*time.Minute, "how long a round of the workload may take to settle (a bound on a hang)")
	fs.DurationVar(&cfg.duration, "duration", 0, "run rounds of -sessions sessions (each with -kills kill -9s; the last round's stopped) until this has passed; 0: one round")
	fs.BoolVar(&cfg.warm, "warm", true, "start one session on each SSH host before the workload (false: sessions race in the host's first copy of kandev)")
	fs.StringVar(&cfg.bin, "bin", "", "kandev binary (default: build ./cmd/kandev)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if cfg.sessions < 1 || cfg.hosts < 1 || cfg.kills < 0 {
		return fmt.Errorf("-sessions and -hosts must be at least 1, -kills at least 0")
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if cfg.bin != "" {
		abs, err := filepath.Abs(cfg.bin)
		if err != nil {
			return err
		}
		cfg.bin = abs
	}
	rep, err := runSoak(cfg)
	if rep != nil {
		rep.print(os.Stdout)
	}
	if err != nil {
		return err
	}
	if n := rep.violations(); n > 0 {
		return fmt.Errorf("%d violations (seed %d)", n, cfg.seed)
	}
	return nil
}

// soakKind is what the driver does with a session beyond its first turn.
type soakKind string

const (
	kindPlain     soakKind = "plain"     // one turn: say, stream, tool, usage
	kindFollowup  soakKind = "followup"  // a second turn by a queued message
	kindInterrupt soakKind = "interrupt" // a long turn, interrupted by a message
	kindStop      soakKind = "stop"      // a long turn, stopped by the driver
	kindTree      soakKind = "tree"      // delegates a child that asks the parent
	kindKill      soakKind = "kill"      // mid-turn at a kill -9: must be delivered again once
)

var soakKinds = []soakKind{kindPlain, kindPlain, kindFollowup, kindInterrupt, kindStop, kindTree}

// soakSession is the driver's log of one root session.
type soakSession struct {
	idx    int
	kind   soakKind
	host   string
	taskID string
	// turns are the tokens of the turns the driver started, in order;
	// interrupted[tok] marks those it cut (they need no end).
	turns       []string
	interrupted map[string]bool
	stopped     bool
	calltime    bool
}

// prompt builds turn tok's prompt: it says the token at its start and end,
// so the oracle can tell a turn that ran once, twice or not at all.
func soakPrompt(r *rand.Rand, tok string, long bool, calltime bool) string {
	lines := []string{"mock: say begin " + tok}
	switch r.IntN(3) {
	case 0:
		lines = append(lines, fmt.Sprintf("mock: stream %d %dms", 20+r.IntN(80), 200+r.IntN(800)))
	case 1:
		lines = append(lines, "mock: tool soak-"+tok)
	default:
		lines = append(lines, fmt.Sprintf("mock: say %s", strings.Repeat("x", 10+r.IntN(200))))
	}
	if r.IntN(2) == 0 {
		lines = append(lines, fmt.Sprintf("mock: usage %d %d 0.0%d", 100+r.IntN(900), 50+r.IntN(500), 1+r.IntN(9)))
	}
	if calltime {
		lines = append(lines, "mock: calltime 6 get_task_kandev")
	}
	if long {
		lines = append(lines, "mock: chatter 10m")
	}
	return strings.Join(append(lines, "mock: say end "+tok), "\n")
}

func soakCall(tool string, args map[string]any) string {
	b, _ := json.Marshal(args)
	return "mock: call " + tool + " " + string(b)
}

// treePrompt: the parent answers its child's question and delegates an
// autopilot child that asks it (core/daemon/questions_test.go's pattern).
func treePrompt(tok string) string {
	reply := soakCall("message_task_kandev", map[string]any{"task_id": "${child_task_id}",
		"prompt": "mock: say answer " + tok, "reply_to_question_id": "${question_id}"})
	child := soakCall("ask_parent_question_kandev", map[string]any{"questions": []map[string]any{{"prompt": "which colour " + tok + "?"}}}) +
		"\nmock: say child asked " + tok
	return strings.Join([]string{
		"mock: on question: " + strings.TrimPrefix(reply, "mock: "),
		"mock: say begin " + tok,
		soakCall("create_task_kandev", map[string]any{"title": "child " + tok, "autopilot": true, "prompt": child}),
		"mock: say end " + tok,
	}, "\n")
}

type soakRun struct {
	cfg      soakConfig
	h        *home
	c        *daemonclient.Client
	sessions []*soakSession
	hosts    []string // "" is this machine
	hostNote string

	mu        sync.Mutex
	rssPeak   int64 // KiB
	startRate float64
	recovery  []time.Duration
	kills     int
	next      int // the next session's index
}

func runSoak(cfg soakConfig) (*soakReport, error) {
	fmt.Printf("kandev-bench soak: seed %d, %d sessions, %d hosts, %d kill -9 (replay: kandev-bench soak -seed %d -sessions %d -hosts %d -kills %d)\n",
		cfg.seed, cfg.sessions, cfg.hosts, cfg.kills, cfg.seed, cfg.sessions, cfg.hosts, cfg.kills)
	work, err := os.MkdirTemp("", "kb-soak-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	bin := cfg.bin
	if bin == "" {
		bin = filepath.Join(work, "kandev")
		if err := goBuild(bin, "./cmd/kandev"); err != nil {
			return nil, err
		}
	}
	s := &soakRun{cfg: cfg, hosts: []string{""}}

	// The hosts: one loopback sshd each, their client configs joined.
	var sshCfg []byte
	for i := 1; i < cfg.hosts; i++ {
		rig, tb, err := startRig()
		if err != nil {
			s.hostNote = fmt.Sprintf("only %d of %d hosts: no loopback sshd: %v", len(s.hosts), cfg.hosts, err)
			break
		}
		defer tb.close()
		b, err := os.ReadFile(rig.Config)
		if err != nil {
			return nil, err
		}
		sshCfg = append(append(sshCfg, b...), '\n')
		s.hosts = append(s.hosts, "h"+fmt.Sprint(i)+"|"+rig.Alias+"|"+rig.RemoteDir)
	}
	dir := filepath.Join(work, "home")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	env := append(cleanEnv(), "KANDEV_HOME="+dir, "KANDEV_CONFIG="+filepath.Join(dir, "config.toml"),
		"KANDEV_PROFILE=mock", "KANDEV_MOCK_STATE_DIR="+filepath.Join(dir, "mock-state"),
		"KANDEV_QUESTION_TURN_GRACE=300ms")
	if len(sshCfg) > 0 {
		p := filepath.Join(work, "ssh_config")
		if err := os.WriteFile(p, sshCfg, 0o600); err != nil {
			return nil, err
		}
		env = append(env, "KANDEV_SSH_CONFIG="+p)
	}
	s.h = &home{bin: binary{"kandev", bin}, dir: dir, env: env}
	if _, err := s.h.start(); err != nil {
		return nil, err
	}
	defer s.h.stop()
	s.c = daemonclient.Dial(core.Home{Dir: dir}.Socket())
	defer s.c.Close()
	ctx := context.Background()
	for i, hs := range s.hosts {
		if hs == "" {
			continue
		}
		f := strings.SplitN(hs, "|", 3)
		if _, err := s.c.AddHost(ctx, api.HostInput{Name: f[0], SSH: f[1], Dir: f[2] + "/kandev"}); err != nil {
			return nil, fmt.Errorf("add host %s: %w", f[0], err)
		}
		s.hosts[i] = f[0]
	}
	if cfg.warm {
		// A host's first session copies kandev there; sessions started
		// together on a fresh host race in that copy (see the report of
		// issue 39), so each host gets one session first unless -warm=false.
		for _, host := range s.hosts[1:] {
			if _, _, err := sessionOnce(ctx, s.c, api.CreateTaskInput{CWD: dir, Host: host}, 2); err != nil {
				return nil, fmt.Errorf("warm host %s: %w", host, err)
			}
		}
	}
	stopRSS := s.watchRSS()
	defer stopRSS()

	// The workload, from the seed: rounds of -sessions sessions, each
	// with its kill -9s, until -duration has passed (one round at least).
	r := rand.New(rand.NewPCG(cfg.seed, cfg.seed^0x9e3779b97f4a7c15))
	cwd := filepath.Join(work, "cwd")
	_ = os.MkdirAll(cwd, 0o755)
	rep := &soakReport{seed: cfg.seed, hostNote: s.hostNote, hosts: len(s.hosts), sessions: cfg.sessions}
	t0 := time.Now()
	var created int
	var creating time.Duration
	settled := true
	rounds := 0
	for rounds == 0 || time.Since(t0) < cfg.duration {
		if rounds > 0 {
			// The last round's sessions are stopped: churn, and a bound
			// on the live sessions at once.
			for _, ss := range s.sessions {
				_, _ = s.c.StopTask(ctx, ss.taskID, api.StopTaskInput{})
			}
		}
		rounds++
		var round []*soakSession
		prompts := make([]string, cfg.sessions)
		for j := range cfg.sessions {
			i := s.next
			s.next++
			ss := &soakSession{idx: i, kind: soakKinds[r.IntN(len(soakKinds))], host: s.hosts[j%len(s.hosts)],
				interrupted: map[string]bool{}, calltime: r.IntN(4) == 0}
			tok := fmt.Sprintf("s%d-t0", i)
			ss.turns = []string{tok}
			switch ss.kind {
			case kindTree:
				prompts[j] = treePrompt(tok)
			case kindInterrupt, kindStop:
				prompts[j] = soakPrompt(r, tok, true, ss.calltime)
			default:
				prompts[j] = soakPrompt(r, tok, false, ss.calltime)
			}
			round = append(round, ss)
		}
		c0 := time.Now()
		for j, ss := range round {
			t, err := s.c.CreateTask(ctx, api.CreateTaskInput{Title: fmt.Sprintf("soak %d %s", ss.idx, ss.kind), Prompt: prompts[j],
				Start: true, CWD: cwd, Host: ss.host})
			if err != nil {
				return rep, fmt.Errorf("create session %d: %w", ss.idx, err)
			}
			ss.taskID = t.ID
		}
		creating += time.Since(c0)
		created += len(round)
		s.sessions = append(s.sessions, round...)

		// The driver's own acts, each once its turn has begun; the kill
		// -9s fall among them, each while a turn runs.
		deadline := time.Now().Add(cfg.wait)
		killAt := map[int]bool{}
		for k := range cfg.kills {
			killAt[(k+1)*len(round)/(cfg.kills+1)] = true
		}
		kills := 0
		for i, ss := range round {
			if killAt[i] {
				victim, err := s.killMidTurn(ctx, cwd, deadline)
				if err != nil {
					return rep, err
				}
				round = append(round, victim)
				kills++
			}
			if err := s.act(ctx, ss, r, deadline); err != nil {
				rep.add(fmt.Sprintf("driver: session %d's act", ss.idx), false, err.Error()+"\n"+s.dump(ctx, ss.taskID))
			}
		}
		for ; kills < cfg.kills; kills++ { // more kills than sessions
			victim, err := s.killMidTurn(ctx, cwd, deadline)
			if err != nil {
				return rep, err
			}
			round = append(round, victim)
		}
		if err := s.settle(ctx, round, deadline); err != nil {
			if settled {
				rep.add("workload settled", false, fmt.Sprintf("round %d: %v", rounds, err))
				for _, ss := range round {
					ts, _ := s.c.ListTasks(ctx, api.ListTasksInput{Root: ss.taskID})
					for _, t := range ts {
						fmt.Println(s.dump(ctx, t.ID))
					}
				}
			}
			settled = false
			break
		}
	}
	if settled {
		rep.add("workload settled", true, fmt.Sprintf("%d rounds in %.1fs", rounds, time.Since(t0).Seconds()))
	}
	s.startRate = float64(created) / creating.Seconds()
	rep.figure("sessions (root, driver-made) / rounds", fmt.Sprintf("%d / %d", len(s.sessions), rounds))
	s.oracle(ctx, rep)
	rep.figure("sessions started per second", fmt.Sprintf("%.1f", s.startRate))
	rep.kills = s.kills
	rep.figure("kill -9s (daemon restarted)", fmt.Sprint(s.kills))
	for i, d := range s.recovery {
		rep.figure(fmt.Sprintf("restart %d: spawn to ready", i+1), msStr(d)+" ms")
	}
	stopRSS()
	rep.figure("daemon RSS peak", fmt.Sprintf("%.1f MB", float64(s.rssPeak)/1024))
	// Stop the daemon, then the database's own check.
	s.h.stop()
	s.checkDB(filepath.Join(dir, "kandev.db"), rep)
	return rep, nil
}

// watchRSS samples the daemon's RSS every 100ms until stopped.
func (s *soakRun) watchRSS() func() {
	done := make(chan struct{})
	var once sync.Once
	go func() {
		for {
			select {
			case <-done:
				return
			case <-time.After(100 * time.Millisecond):
			}
			s.mu.Lock()
			if s.h.daemon != nil {
				s.rssPeak = max(s.rssPeak, rssKiB(s.h.daemon.Process.Pid))
			}
			s.mu.Unlock()
		}
	}()
	return func() { once.Do(func() { close(done) }) }
}

// kill9 kills the daemon with SIGKILL and starts it again.
func (s *soakRun) kill9() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	_ = s.h.daemon.Process.Signal(syscall.SIGKILL)
	_ = s.h.daemon.Wait()
	s.h.daemon = nil
	smp, err := s.h.start()
	if err != nil {
		return fmt.Errorf("restart after kill -9: %w", err)
	}
	s.kills++
	s.recovery = append(s.recovery, smp.took)
	return nil
}

// killMidTurn makes sure a turn is running when the daemon is killed: a
// session of its own whose turn waits at a gate. After the restart the
// gate opens and a message resumes the session (nothing restarts by
// itself, ADR 0006): the cut turn must be delivered again, once, and end
// once, before the message's turn.
func (s *soakRun) killMidTurn(ctx context.Context, cwd string, deadline time.Time) (*soakSession, error) {
	k := s.next
	s.next++
	gate := filepath.Join(s.h.dir, fmt.Sprintf("gate-%d", k))
	tok, poke := fmt.Sprintf("s%d-t0", k), fmt.Sprintf("s%d-t1", k)
	ss := &soakSession{idx: k, kind: kindKill, interrupted: map[string]bool{}, turns: []string{tok, poke}}
	t, err := s.c.CreateTask(ctx, api.CreateTaskInput{Title: fmt.Sprintf("soak %d kill", k), CWD: cwd, Start: true,
		Prompt: "mock: say begin " + tok + "\nmock: waitfile " + gate + "\nmock: say end " + tok})
	if err != nil {
		return nil, err
	}
	ss.taskID = t.ID
	s.sessions = append(s.sessions, ss)
	if err := s.waitSaid(ctx, t.ID, "begin "+tok, deadline); err != nil {
		return nil, err
	}
	if err := s.kill9(); err != nil {
		return nil, err
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		return nil, err
	}
	_, err = s.c.MessageTask(ctx, t.ID, api.MessageInput{Text: "mock: say begin " + poke + "\nmock: say end " + poke})
	return ss, err
}

// act does the driver's part of a session: it waits for the first turn
// to begin (its "begin" said), then sends, interrupts or stops.
func (s *soakRun) act(ctx context.Context, ss *soakSession, r *rand.Rand, deadline time.Time) error {
	switch ss.kind {
	case kindFollowup, kindInterrupt, kindStop:
	default:
		return nil
	}
	first := ss.turns[0]
	want := "begin " + first
	if ss.kind == kindFollowup {
		want = "end " + first
	}
	if err := s.waitSaid(ctx, ss.taskID, want, deadline); err != nil {
		return fmt.Errorf("session %d (%s): %w", ss.idx, ss.kind, err)
	}
	switch ss.kind {
	case kindStop:
		if _, err := s.c.StopTask(ctx, ss.taskID, api.StopTaskInput{}); err != nil {
			return fmt.Errorf("stop %s: %w", ss.taskID, err)
		}
		ss.stopped = true
		ss.interrupted[first] = true
	default:
		tok := fmt.Sprintf("s%d-t1", ss.idx)
		in := api.MessageInput{Text: soakPrompt(r, tok, false, false)}
		if ss.kind == kindInterrupt {
			in.Delivery = api.DeliveryInterrupt
			ss.interrupted[first] = true
		}
		if _, err := s.c.MessageTask(ctx, ss.taskID, in); err != nil {
			return fmt.Errorf("message %s: %w", ss.taskID, err)
		}
		ss.turns = append(ss.turns, tok)
	}
	return nil
}

// waitSaid polls a task's agent text for want. A daemon being restarted
// is waited for, not an error.
func (s *soakRun) waitSaid(ctx context.Context, id, want string, deadline time.Time) error {
	for time.Now().Before(deadline) {
		msgs, err := s.conversation(ctx, id)
		if err == nil {
			for _, m := range msgs {
				if m.Kind == core.MsgAgent && strings.Contains(m.Text, want) {
					return nil
				}
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("task %s never said %q", id, want)
}

// waitFor polls cond until it holds or the deadline passes.
func (s *soakRun) waitFor(ctx context.Context, id string, deadline time.Time, what string, cond func() bool) error {
	for time.Now().Before(deadline) {
		if cond() {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("task %s never %s", id, what)
}

// saidOrHeld: the task's agent said want, or the turn is visibly held: a
// queued item holds begin (its prompt), or its prompt is the open turn of
// a running session.
//
// A delivery between two states (a queued item while its new session is
// made) can look held for a moment: held must still hold a second later.
func (s *soakRun) saidOrHeld(ctx context.Context, id, want, begin string) bool {
	switch s.turnState(ctx, id, want, begin) {
	case turnSaid:
		return true
	case turnMissing:
		return false
	}
	time.Sleep(time.Second)
	return s.turnState(ctx, id, want, begin) != turnMissing
}

type turnStatus int

const (
	turnMissing turnStatus = iota
	turnSaid
	turnQueued
	turnRunning
)

func (s *soakRun) turnState(ctx context.Context, id, want, begin string) turnStatus {
	msgs, err := s.conversation(ctx, id)
	if err != nil {
		return turnMissing
	}
	for _, m := range msgs {
		if m.Kind == core.MsgAgent && strings.Contains(m.Text, want) {
			return turnSaid
		}
	}
	// The open turn: the last prompt with no turn_end after it, if the
	// session runs. A turn that chatters until cut (`mock: chatter`) holds
	// what is queued behind it; with no session running, nothing delivers
	// the queue by itself after a daemon exit (ADR 0006).
	t, err := s.c.GetTask(ctx, id)
	if err != nil {
		return turnMissing
	}
	// A starting session delivers its queue soon: nothing is held yet.
	if t.Session != nil && t.Session.State == core.SessionStarting {
		return turnMissing
	}
	running := t.Session != nil && t.Session.State == core.SessionRunning
	open := ""
	for i := len(msgs) - 1; i >= 0 && running; i-- {
		if msgs[i].Kind == core.MsgTurnEnd {
			break
		}
		if msgs[i].Kind == core.MsgPrompt {
			open = msgs[i].Text
			break
		}
	}
	chatters := strings.Contains(open, "mock: chatter")
	if q, err := s.c.TaskQueue(ctx, id); err == nil && (!running || chatters) {
		for _, it := range q.Items {
			if begin == "" && strings.Contains(it.Text, "mock: say "+want) ||
				begin != "" && strings.Contains(it.Text, "mock: say "+begin+"\n") {
				return turnQueued
			}
		}
	}
	if begin != "" && chatters && strings.Contains(open, "mock: say "+begin+"\n") {
		return turnRunning
	}
	return turnMissing
}

// conversation reads a task's whole conversation, page by page.
func (s *soakRun) conversation(ctx context.Context, id string) ([]core.Message, error) {
	var all []core.Message
	var after int64
	for {
		p, err := s.c.Conversation(ctx, id, api.ConversationInput{After: after, Limit: 500})
		if err != nil {
			return nil, err
		}
		all = append(all, p.Messages...)
		if !p.More || len(p.Messages) == 0 {
			return all, nil
		}
		after = p.Next
	}
}

// settle waits until every turn the driver started that it did not cut
// has said its end, and every child has been answered or asks visibly.
func (s *soakRun) settle(ctx context.Context, round []*soakSession, deadline time.Time) error {
	for _, ss := range round {
		for _, tok := range ss.turns {
			if ss.interrupted[tok] {
				continue
			}
			if err := s.waitFor(ctx, ss.taskID, deadline, "said end "+tok, func() bool {
				return s.saidOrHeld(ctx, ss.taskID, "end "+tok, "begin "+tok)
			}); err != nil {
				return err
			}
		}
		if ss.kind == kindTree {
			for time.Now().Before(deadline) {
				kids, err := s.c.ListTasks(ctx, api.ListTasksInput{Root: ss.taskID})
				if err == nil && len(kids) >= 2 {
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
			kids, err := s.c.ListTasks(ctx, api.ListTasksInput{Root: ss.taskID})
			if err != nil || len(kids) < 2 {
				return fmt.Errorf("session %d: no child was delegated (%v)", ss.idx, err)
			}
			child := kids[1].ID
			if err := s.waitFor(ctx, child, deadline, "said answer "+ss.turns[0]+" or asks visibly", func() bool {
				if t, err := s.c.GetTask(ctx, child); err == nil && t.PendingQuestion != nil {
					return true
				}
				return s.saidOrHeld(ctx, child, "answer "+ss.turns[0], "")
			}); err != nil {
				return err
			}
		}
	}
	return nil
}

var _ = sshtest.RemoteUser

// dump is what a stranger needs of a task whose check failed: its state
// and its conversation's last entries.
func (s *soakRun) dump(ctx context.Context, id string) string {
	var b strings.Builder
	t, err := s.c.GetTask(ctx, id)
	if err != nil {
		return fmt.Sprintf("  task %s: %v", id, err)
	}
	fmt.Fprintf(&b, "  task %s %q status %s waiting %q", t.ID, t.Title, t.Status, t.Waiting)
	if t.Session != nil {
		fmt.Fprintf(&b, " session %s %s", t.Session.ID, t.Session.State)
	}
	if q, err := s.c.TaskQueue(ctx, id); err == nil {
		for _, it := range q.Items {
			txt := it.Text
			if len(txt) > 100 {
				txt = txt[:100] + "…"
			}
			fmt.Fprintf(&b, "\n    queued %d %s interrupt=%v %q", it.Position, it.Kind, it.Interrupt, txt)
		}
	}
	msgs, _ := s.conversation(ctx, id)
	for _, m := range msgs[max(0, len(msgs)-dumpN):] {
		txt := m.Text
		if len(txt) > 160 {
			txt = txt[:160] + "…"
		}
		fmt.Fprintf(&b, "\n    %d %s %s %q %s", m.Seq, m.Kind, m.SessionID, txt, m.Meta)
	}
	return b.String()
}

// dumpN is how many of a failed task's last entries are shown
// (KANDEV_SOAK_DUMP, default 12).
var dumpN = func() int {
	if n, err := strconv.Atoi(os.Getenv("KANDEV_SOAK_DUMP")); err == nil && n > 0 {
		return n
	}
	return 12
}()
