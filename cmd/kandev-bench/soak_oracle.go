//go:build linux

package main

// The soak's oracle: the driver's own log (soakSession) against kandev's
// record, read through the daemon's client, and the database's own check.

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/agent"
	"github.com/kandev/kandev/core/api"

	_ "modernc.org/sqlite"
)

type soakCheck struct {
	name   string
	ok     bool
	detail string
}

type soakReport struct {
	seed            uint64
	hostNote        string
	hosts, sessions int
	kills           int
	checks          []soakCheck
	held            []string // turns and questions visibly held at the end
	dumps           []string // the tasks of failed checks, as kandev records them
	figures         [][2]string
}

func (r *soakReport) add(name string, ok bool, detail string) {
	r.checks = append(r.checks, soakCheck{name, ok, detail})
}

func (r *soakReport) figure(name, v string) { r.figures = append(r.figures, [2]string{name, v}) }

func (r *soakReport) violations() int {
	n := 0
	for _, c := range r.checks {
		if !c.ok {
			n++
		}
	}
	return n
}

func (r *soakReport) print(w io.Writer) {
	fmt.Fprintf(w, "\n## soak: seed %d, %d sessions on %d hosts\n", r.seed, r.sessions, r.hosts)
	if r.hostNote != "" {
		fmt.Fprintln(w, r.hostNote)
	}
	fmt.Fprintf(w, "| %-52s | %-4s | %s\n", "check", "", "detail")
	fmt.Fprintf(w, "|%s|%s|%s\n", strings.Repeat("-", 54), strings.Repeat("-", 6), strings.Repeat("-", 40))
	for _, c := range r.checks {
		v := "ok"
		if !c.ok {
			v = "FAIL"
		}
		fmt.Fprintf(w, "| %-52s | %-4s | %s\n", c.name, v, c.detail)
	}
	fmt.Fprintf(w, "\n| %-52s | %s\n", "figure", "value")
	fmt.Fprintf(w, "|%s|%s\n", strings.Repeat("-", 54), strings.Repeat("-", 20))
	for _, f := range r.figures {
		fmt.Fprintf(w, "| %-52s | %s\n", f[0], f[1])
	}
	for _, d := range r.dumps {
		fmt.Fprintln(w, d)
	}
	for _, h := range r.held {
		fmt.Fprintf(w, "held: %s\n", h)
	}
	fmt.Fprintf(w, "violations: %d\n", r.violations())
}

// first lists at most three of a check's failures, and how many more.
type failures struct {
	n    int
	some []string
}

func (f *failures) add(format string, args ...any) {
	f.n++
	if len(f.some) < 3 {
		f.some = append(f.some, fmt.Sprintf(format, args...))
	}
}

func (f *failures) String() string {
	if f.n == 0 {
		return ""
	}
	s := strings.Join(f.some, "; ")
	if f.n > len(f.some) {
		s += fmt.Sprintf("; and %d more", f.n-len(f.some))
	}
	return s
}

func (s *soakRun) oracle(ctx context.Context, rep *soakReport) {
	// Every task of every tree, with its conversation.
	type taskRec struct {
		t    core.Task
		msgs []core.Message
		root *soakSession
	}
	var recs []taskRec
	var readErr failures
	for _, ss := range s.sessions {
		ts, err := s.c.ListTasks(ctx, api.ListTasksInput{Root: ss.taskID})
		if err != nil {
			readErr.add("list tree %s: %v", ss.taskID, err)
			continue
		}
		for _, t := range ts {
			msgs, err := s.conversation(ctx, t.ID)
			if err != nil {
				readErr.add("conversation %s: %v", t.ID, err)
				continue
			}
			recs = append(recs, taskRec{t: t, msgs: msgs, root: ss})
		}
	}
	rep.add("kandev's record read through the client", readErr.n == 0, fmt.Sprintf("%d tasks %s", len(recs), readErr.String()))

	said := func(msgs []core.Message, text string) int {
		n := 0
		for _, m := range msgs {
			if m.Kind == core.MsgAgent {
				n += strings.Count(m.Text, text+"\n") + boolInt(strings.HasSuffix(m.Text, text))
			}
		}
		return n
	}

	// Redeliveries (ADR 0006): a turn cut short by the daemon's exit is
	// delivered again, once; its turn may then have ended twice.
	var redeliv failures
	redelivered := map[string]int{} // task/original seq -> count
	redeliveredTok := map[string]bool{}
	for _, rec := range recs {
		for _, m := range rec.msgs {
			if m.Kind == core.MsgPrompt && metaString(m, "delivery") == "redeliver" {
				k := rec.t.ID + "/" + metaNumber(m, "original_seq")
				redelivered[k]++
				if redelivered[k] > 1 {
					redeliv.add("%s: prompt %s delivered again %d times", rec.t.ID, metaNumber(m, "original_seq"), redelivered[k])
				}
				if _, rest, ok := strings.Cut(m.Text, "mock: say begin "); ok {
					redeliveredTok[rec.t.ID+"/"+strings.Fields(rest)[0]] = true
				}
			}
		}
	}
	rep.add("a turn cut by kill -9 is delivered again once (ADR 0006)", redeliv.n == 0, fmt.Sprintf("%d redelivered %s", len(redelivered), redeliv.String()))
	rep.figure("turns delivered again after a kill -9", fmt.Sprint(len(redelivered)))

	// 1. Every turn the driver started has an outcome: its end said (never
	// lost) once, or twice only when kandev delivered it again; a turn
	// the driver cut needs no end.
	var lost, twice failures
	turns, held := 0, 0
	for _, rec := range recs {
		ss := rec.root
		if rec.t.ID != ss.taskID {
			continue
		}
		for _, tok := range ss.turns {
			turns++
			n := said(rec.msgs, "end "+tok)
			again := redeliveredTok[rec.t.ID+"/"+tok]
			switch {
			case ss.kind == kindKill && tok == ss.turns[0] && (!again || n != 1):
				lost.add("%s turn %s, cut by kill -9: delivered again %v, ended %d times (want once)", rec.t.ID, tok, again, n)
			case n == 0 && !ss.interrupted[tok]:
				// A turn still on its way gets until the end of a minute.
				st := s.turnState(ctx, rec.t.ID, "end "+tok, "begin "+tok)
				for wait := time.Now().Add(time.Minute); st == turnMissing && time.Now().Before(wait); {
					time.Sleep(50 * time.Millisecond)
					st = s.turnState(ctx, rec.t.ID, "end "+tok, "begin "+tok)
				}
				switch st {
				case turnSaid:
				case turnQueued, turnRunning:
					held++
					rep.held = append(rep.held, fmt.Sprintf("%s turn %s (%s): %s", rec.t.ID, tok, ss.kind, map[turnStatus]string{turnQueued: "queued", turnRunning: "running"}[st]))
					if dumpHeld {
						rep.dumps = append(rep.dumps, s.dump(ctx, rec.t.ID))
					}
				default:
					lost.add("%s turn %s (%s) never ended and is not queued or running", rec.t.ID, tok, ss.kind)
					rep.dumps = append(rep.dumps, s.dump(ctx, rec.t.ID))
				}
			case n > 2 || n == 2 && !again:
				twice.add("%s turn %s (%s) ended %d times (delivered again: %v)", rec.t.ID, tok, ss.kind, n, again)
			}
		}
	}
	rep.add("every turn the driver started ended (none lost)", lost.n == 0, fmt.Sprintf("%d turns %s", turns, lost.String()))
	rep.figure("driver turns held at the end (queued behind a stuck or chattering turn, or chattering)", fmt.Sprint(held))
	rep.add("no turn ran twice but by a redelivery", twice.n == 0, twice.String())

	// 2. Each recorded prompt has exactly one outcome: a turn_end, or the
	// "interrupted" note of a daemon exit (ADR 0006), before the next
	// prompt; the last may be open only while its task runs or holds it.
	var outcome failures
	prompts := 0
	for _, rec := range recs {
		open, ends := false, 0
		for _, m := range rec.msgs {
			switch {
			case m.Kind == core.MsgPrompt:
				prompts++
				if open && ends == 0 {
					outcome.add("%s: a prompt (seq %d) came with no outcome for the one before", rec.t.ID, m.Seq)
				}
				open, ends = true, 0
			case m.Kind == core.MsgTurnEnd, m.Kind == core.MsgStatus && metaBool(m, "interrupted") && open && ends == 0:
				ends++
				if ends > 1 {
					outcome.add("%s: a second outcome (seq %d) for one prompt", rec.t.ID, m.Seq)
				}
			}
		}
		if open && ends == 0 && rec.t.Session != nil && rec.t.Session.State != core.SessionRunning && rec.t.Waiting == "" {
			outcome.add("%s: its last turn has no outcome and is not running or held (session %s)", rec.t.ID, rec.t.Session.State)
			rep.dumps = append(rep.dumps, s.dump(ctx, rec.t.ID))
		}
	}
	rep.add("each recorded prompt has exactly one outcome", outcome.n == 0, fmt.Sprintf("%d prompts %s", prompts, outcome.String()))

	// An interrupt cancels the running turn and is delivered instead
	// (api.DeliveryInterrupt): it never waits in a queue behind a turn
	// that runs.
	var intr failures
	for _, rec := range recs {
		t, err := s.c.GetTask(ctx, rec.t.ID)
		if err != nil || t.Session == nil || t.Session.State != core.SessionRunning {
			continue
		}
		q, err := s.c.TaskQueue(ctx, rec.t.ID)
		if err != nil {
			continue
		}
		for _, it := range q.Items {
			if it.Kind == "message" && it.Interrupt {
				intr.add("%s: an interrupt message (queued %s) waits behind the running turn", rec.t.ID, it.QueuedAt.Format(time.TimeOnly))
				rep.dumps = append(rep.dumps, s.dump(ctx, rec.t.ID))
			}
		}
	}
	rep.add("an interrupt cuts the running turn, never queues behind it", intr.n == 0, intr.String())

	// 3. Every question is answered once or visibly pending.
	var qs failures
	questions := 0
	for _, rec := range recs {
		if rec.t.ParentID == "" {
			continue
		}
		for _, m := range rec.msgs {
			if m.Kind != core.MsgQuestion {
				continue
			}
			questions++
			st := metaString(m, "status")
			pending := rec.t.PendingQuestion != nil
			if st != "answered" && !pending {
				qs.add("%s: question %s is %q and not pending", rec.t.ID, metaString(m, "question_id"), st)
			}
		}
		tok := rec.root.turns[0]
		queued := s.turnState(ctx, rec.t.ID, "answer "+tok, "") == turnQueued
		// The answer's turn, cut by a kill -9, is delivered again (ADR
		// 0006): then it may be said twice.
		again := 0
		for _, m := range rec.msgs {
			if m.Kind == core.MsgPrompt && metaString(m, "delivery") == "redeliver" && strings.Contains(m.Text, "mock: say answer "+tok) {
				again++
			}
		}
		if n := said(rec.msgs, "answer "+tok); n > 1+again || n == 0 && rec.t.PendingQuestion == nil && !queued {
			qs.add("%s: the parent's answer was said %d times (delivered again %d) or never and no question is pending", rec.t.ID, n, again)
			rep.dumps = append(rep.dumps, s.dump(ctx, rec.t.ID), s.dump(ctx, rec.t.ParentID))
		} else if n == 0 && queued {
			rep.held = append(rep.held, fmt.Sprintf("%s: the parent's answer is queued on the child, no turn running", rec.t.ID))
		} else if n == 0 {
			rep.held = append(rep.held, fmt.Sprintf("%s: question pending (%s)", rec.t.ID, rec.t.PendingQuestion.ID))
		}
	}
	rep.add("every question answered once or visibly pending", qs.n == 0, fmt.Sprintf("%d questions %s", questions, qs.String()))

	// MCP call times the agents took (`mock: calltime`), the first apart.
	var mcp []time.Duration
	for _, rec := range recs {
		for _, m := range rec.msgs {
			if m.Kind != core.MsgAgent {
				continue
			}
			if _, rest, ok := strings.Cut(m.Text, "calltime get_task_kandev: "); ok {
				for i, f := range strings.Fields(rest) {
					us, err := strconv.Atoi(f)
					if err != nil {
						break
					}
					if i > 0 {
						mcp = append(mcp, time.Duration(us)*time.Microsecond)
					}
				}
			}
		}
	}
	if len(mcp) > 0 {
		rep.figure("MCP call (get_task_kandev) p50 / p99", fmt.Sprintf("%s / %s ms (n=%d)", msStr(pct(mcp, 0.5)), msStr(pct(mcp, 0.99)), len(mcp)))
	}

	// 4. No process of any session outlives it: stop every task, then
	// every session's marked processes must be gone.
	sids := map[string]string{}
	for _, rec := range recs {
		for _, m := range rec.msgs {
			if m.SessionID != "" {
				sids[m.SessionID] = rec.t.ID
			}
		}
		if rec.t.Session != nil && rec.t.Session.ID != "" {
			sids[rec.t.Session.ID] = rec.t.ID
		}
		_, _ = s.c.StopTask(ctx, rec.t.ID, api.StopTaskInput{})
	}
	var procs failures
	deadline := time.Now().Add(time.Minute)
	for sid, tid := range sids {
		var left []int
		for {
			left = agent.SessionProcs(sid)
			if len(left) == 0 || time.Now().After(deadline) {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if len(left) > 0 {
			procs.add("task %s session %s: pids %v still run a minute after stop", tid, sid, left)
		}
	}
	rep.add("no session's process outlives its stop", procs.n == 0, fmt.Sprintf("%d sessions %s", len(sids), procs.String()))
}

func metaBool(m core.Message, key string) bool {
	var meta map[string]any
	_ = json.Unmarshal(m.Meta, &meta)
	v, _ := meta[key].(bool)
	return v
}

func metaNumber(m core.Message, key string) string {
	var meta map[string]any
	_ = json.Unmarshal(m.Meta, &meta)
	return fmt.Sprint(meta[key])
}

// dumpHeld: KANDEV_SOAK_DUMP also shows the tasks of held turns.
var dumpHeld = os.Getenv("KANDEV_SOAK_DUMP") != ""

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func metaString(m core.Message, key string) string {
	var meta map[string]any
	_ = json.Unmarshal(m.Meta, &meta)
	v, _ := meta[key].(string)
	return v
}

// checkDB runs PRAGMA integrity_check on the stopped daemon's database,
// opened read-only.
func (s *soakRun) checkDB(path string, rep *soakReport) {
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		rep.add("database passes PRAGMA integrity_check", false, err.Error())
		return
	}
	defer db.Close()
	rows, err := db.Query("PRAGMA integrity_check")
	if err != nil {
		rep.add("database passes PRAGMA integrity_check", false, err.Error())
		return
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var l string
		_ = rows.Scan(&l)
		out = append(out, l)
	}
	ok := len(out) == 1 && out[0] == "ok"
	rep.add("database passes PRAGMA integrity_check", ok, strings.Join(out, "; "))
}
