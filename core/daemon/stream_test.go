package daemon_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/daemon/daemontest"
)

// Streamed output is appended, not rewritten (ADR 0050). These tests
// check that what an entry reads as, assembled from its appended chunks,
// is the full text the old rewrite-per-chunk recorder wrote, for every
// kind that streams, across a restart and a kill -9.

// counted is what the mock's bursts stream: prefix0 prefix1 ... each
// followed by a space.
func counted(prefix string, n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(prefix + strconv.Itoa(i) + " ")
	}
	return b.String()
}

// streamScript streams an agent message, a thought and a tool call's
// output, each in thousands of chunks.
const streamScript = "mock: burst 3000\nmock: burst-think 2000\nmock: tool-stream 300\n"

type entry struct {
	Kind   core.MessageKind
	Text   string
	Output string
	Status string
}

// wantStream is the conversation streamScript records after its prompt:
// the full texts, as one entry each.
func wantStream(last string) []entry {
	return []entry{
		{Kind: core.MsgAgent, Text: counted("", 3000) + "\nburst: sent 3000\n"},
		{Kind: core.MsgThought, Text: counted("t", 2000)},
		{Kind: core.MsgAgent, Text: "burst-think: sent 2000\n"},
		{Kind: core.MsgToolCall, Text: "streaming tool [completed]", Output: counted("o", 300), Status: "completed"},
		{Kind: core.MsgAgent, Text: "tool-stream: sent 300\n" + last},
	}
}

// streamed is the task's agent-written entries after its first prompt,
// up to the turn's end.
func streamed(t *testing.T, d *daemontest.Daemon, id string) []entry {
	t.Helper()
	var out []entry
	prompted := false
	for _, m := range conversation(t, d, id) {
		switch {
		case m.Kind == core.MsgPrompt:
			prompted = true
			continue
		case !prompted:
			continue
		case m.Kind == core.MsgTurnEnd:
			return out
		case m.Kind != core.MsgAgent && m.Kind != core.MsgThought && m.Kind != core.MsgToolCall:
			continue
		}
		e := entry{Kind: m.Kind, Text: m.Text}
		if m.Kind == core.MsgToolCall {
			e.Output, e.Status = metaField(m, "output"), metaField(m, "status")
		}
		out = append(out, e)
	}
	return out
}

func sameEntries(t *testing.T, when string, got, want []entry) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d entries, want %d: %.300q", when, len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("%s: entry %d is\n%.200q...(%d bytes)\nwant\n%.200q...(%d bytes)", when, i, got[i], len(got[i].Text)+len(got[i].Output), want[i], len(want[i].Text)+len(want[i].Output))
		}
	}
}

// chunkRows counts the rows streamed output was appended as, read from
// the database beside the daemon: the entries above were assembled from
// appends, not written whole.
func chunkRows(t *testing.T, d *daemontest.Daemon) int {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(d.Home.Dir, "kandev.db")+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM message_chunks`).Scan(&n); err != nil {
		t.Fatalf("count chunks: %v", err)
	}
	return n
}

// TestStreamedEntriesAssembleWhole: an agent message, a thought and a
// tool call's output, streamed in thousands of chunks, each read as one
// entry holding the whole text, before and after a restart.
func TestStreamedEntriesAssembleWhole(t *testing.T) {
	d := daemontest.Start(t)
	task := create(t, d, api.CreateTaskInput{Title: "streams", Prompt: streamScript + "mock: say done", Start: true})
	waitSaid(t, d, task.ID, "done")
	waitSettled(t, d, task.ID)
	want := wantStream("done\n")
	sameEntries(t, "after the turn", streamed(t, d, task.ID), want)
	if n := chunkRows(t, d); n == 0 {
		t.Fatal("no chunk rows: the entries were not appended to")
	}
	d.Stop()
	d.Restart()
	sameEntries(t, "after a restart", streamed(t, d, task.ID), want)
}

// TestStreamedEntriesSurviveKill9: the daemon killed -9 once the agent's
// last entry is in: every append before it is on disk (an entry that
// ends, another beginning, writes what it held back), so the entries
// read whole after the restart.
func TestStreamedEntriesSurviveKill9(t *testing.T) {
	d := daemontest.Start(t, daemontest.WithEnv("KANDEV_NO_RESUME=1"))
	gate := filepath.Join(d.Home.Dir, "never")
	task := create(t, d, api.CreateTaskInput{Title: "streams", Prompt: streamScript + "mock: waitfile " + gate, Start: true})
	waitSaid(t, d, task.ID, "tool-stream: sent 300")
	d.Kill9()
	d.Restart()
	got := streamed(t, d, task.ID)
	sameEntries(t, "after kill -9", got, wantStream(""))
}

var stampLines = regexp.MustCompile(`^(@\d{19}\n)*$`)

// TestKill9KeepsWhatFollowersSaw: killed -9 in the middle of a stream,
// the daemon loses none of the text it had sent a follower (an append
// is published only once written), and what it kept is the stream's
// beginning, chunk by chunk, with nothing torn.
func TestKill9KeepsWhatFollowersSaw(t *testing.T) {
	d := daemontest.Start(t, daemontest.WithEnv("KANDEV_NO_RESUME=1"))
	task := create(t, d, api.CreateTaskInput{Title: "streams", Prompt: "mock: say go"})
	// The stream ends (and the loop below with it) if the appends never
	// come.
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	events, err := d.Client.Events(ctx, api.EventsInput{TaskID: task.ID})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Client.StartTask(ctx, task.ID, api.StartTaskInput{}); err != nil {
		t.Fatal(err)
	}
	message(t, d, task.ID, "mock: stream 200 60s")
	var seen core.Message
	appends := 0
	for ev := range events {
		switch {
		case ev.Type == core.EventMessageAdded && ev.Message != nil && strings.HasPrefix(ev.Message.Text, "@"):
			seen = *ev.Message
		case ev.Type == core.EventMessageAppended && ev.Append != nil && ev.Append.Seq == seen.Seq && seen.Seq != 0:
			if ev.Append.Apply(&seen) != core.AppendApplied {
				t.Fatalf("append at %d does not continue the %d bytes seen", ev.Append.Offset, len(seen.Text))
			}
			appends++
		}
		if appends == 10 {
			break
		}
	}
	if appends < 10 {
		t.Fatalf("saw %d appends to the streamed entry before the stream ended", appends)
	}
	d.Kill9()
	cancel()
	d.Restart()
	var kept string
	for _, m := range conversation(t, d, task.ID) {
		if m.Seq == seen.Seq {
			kept = m.Text
		}
	}
	if !strings.HasPrefix(kept, seen.Text) {
		t.Fatalf("the entry kept %d bytes, not beginning with the %d a follower saw", len(kept), len(seen.Text))
	}
	if !stampLines.MatchString(kept) {
		t.Fatalf("the entry kept is not whole chunks: %.200q", kept)
	}
}

// follower is a `kandev task log --follow` process and its output.
type follower struct {
	cmd *exec.Cmd
	mu  sync.Mutex
	out bytes.Buffer
}

func (f *follower) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.out.Write(p)
}

func (f *follower) String() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.out.String()
}

func follow(t *testing.T, d *daemontest.Daemon, args ...string) *follower {
	t.Helper()
	f := &follower{cmd: exec.Command(d.Bin, append([]string{"task", "log", "--follow"}, args...)...)}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KANDEV_") {
			f.cmd.Env = append(f.cmd.Env, kv)
		}
	}
	f.cmd.Env = append(f.cmd.Env, d.Env...)
	f.cmd.Stdout = f
	if err := f.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.cmd.Process.Kill(); _ = f.cmd.Wait() })
	return f
}

// TestFollowEqualsLog: `task log --follow`, started before a turn that
// streams thousands of chunks, has printed exactly what `task log`
// prints once the turn is over: each entry once, its chunks joined. With
// --json, each entry's last line is `task log --json`'s line for it.
func TestFollowEqualsLog(t *testing.T) {
	d := daemontest.Start(t)
	gate := filepath.Join(d.Home.Dir, "gate")
	task := create(t, d, api.CreateTaskInput{Title: "followed", Start: true,
		Prompt: "mock: waitfile " + gate + "\nmock: burst 3000\nmock: burst-think 2000\nmock: say done"})
	waitState(t, d, task.ID, core.SessionRunning)
	text := follow(t, d, task.ID)
	jsonF := follow(t, d, "--json", task.ID)
	// Both printed the prompt: they are following.
	daemontest.Eventually(t, wait, "the followers to print the prompt", func() bool {
		return strings.Contains(text.String(), "mock: waitfile") && strings.Contains(jsonF.String(), "mock: waitfile")
	})
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	waitSaid(t, d, task.ID, "done")
	waitSettled(t, d, task.ID)
	var log string
	daemontest.Eventually(t, wait, "--follow to print what task log prints", func() bool {
		log = d.MustRun("task", "log", task.ID)
		return text.String() == log
	})
	if !strings.Contains(log, counted("", 3000)) || !strings.Contains(log, counted("t", 2000)) {
		t.Fatalf("task log does not hold the streams: %.300q", log)
	}
	daemontest.Eventually(t, wait, "--follow --json to print each entry as task log --json does", func() bool {
		return sameJSONEntries(jsonF.String(), d.MustRun("task", "log", "--json", task.ID))
	})
}

// sameJSONEntries: followed holds the entries of logged in the same
// order, each entry's last line equal to its line in logged.
func sameJSONEntries(followed, logged string) bool {
	last := map[int64]string{}
	var order []int64
	for _, l := range strings.Split(strings.TrimSpace(followed), "\n") {
		var m core.Message
		if json.Unmarshal([]byte(l), &m) != nil {
			return false
		}
		if _, ok := last[m.Seq]; !ok {
			order = append(order, m.Seq)
		}
		last[m.Seq] = l
	}
	lines := strings.Split(strings.TrimSpace(logged), "\n")
	if len(lines) != len(order) {
		return false
	}
	for i, l := range lines {
		if last[order[i]] != l {
			fmt.Fprintf(os.Stderr, "entry %d: followed %.200q\nlogged %.200q\n", order[i], last[order[i]], l)
			return false
		}
	}
	return true
}
