package cmd

import (
	"bytes"
	"testing"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
)

func TestNewCmdTaskStatsFlags(t *testing.T) {
	f := testFactory(t, "", nil)
	same(t, "task stats", mustParse(t, f, NewCmdTaskStats).Input, api.ListTasksInput{})
	same(t, "task stats --all --root", mustParse(t, f, NewCmdTaskStats, "--all", "--root", "k3f9qa").Input,
		api.ListTasksInput{All: true, Root: "k3f9qa"})
	refused(t, f, NewCmdTaskStats, "", "extra")
}

func TestWriteTaskStats(t *testing.T) {
	var b bytes.Buffer
	st := api.TaskStats{Tasks: 3, ByStatus: map[core.Status]int{core.StatusDone: 1, core.StatusTodo: 2},
		BySandbox: map[string]int{"none": 2, "bwrap": 1}, ByHost: map[string]int{"local": 2, "box\x1b[2J": 1},
		Running: 1, PendingQuestions: 1, YourTurn: 2, Queued: 4, Spend: core.Spend{Tokens: 1500, Cost: 0.25, Currency: "USD"}}
	if err := writeTaskStats(&b, st); err != nil {
		t.Fatal(err)
	}
	want := `tasks      3
status     todo 2, done 1
sandbox    bwrap 1, none 2
host       box 1, local 2
running    1
questions  1 pending
your turn  2
stalled    0
queued     4 messages
spend      1.5k tokens, $0.25
`
	same(t, "task stats text", b.String(), want)
	b.Reset()
	if err := writeTaskStats(&b, api.TaskStats{}); err != nil {
		t.Fatal(err)
	}
	same(t, "task stats of nothing", b.String(), "tasks      0\nstatus     -\nsandbox    -\nhost       -\nrunning    0\n"+
		"questions  0 pending\nyour turn  0\nstalled    0\nqueued     0 messages\nspend      0 tokens, -\n")
}
