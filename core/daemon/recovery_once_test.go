package daemon_test

import (
	"fmt"
	"math/rand"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/daemon/daemontest"
)

// recoverySize is how many cut turns and how many kills during recovery
// the test runs: 8 and 5 by default, KANDEV_TEST_RECOVERY=150x20 for the
// full case of issue 10.
func recoverySize(t *testing.T) (turns, kills int) {
	turns, kills = 8, 5
	if v := os.Getenv("KANDEV_TEST_RECOVERY"); v != "" {
		if _, err := fmt.Sscanf(v, "%dx%d", &turns, &kills); err != nil {
			t.Fatalf("KANDEV_TEST_RECOVERY=%q: want TURNSxKILLS", v)
		}
	}
	return turns, kills
}

// kill -9 during startup recovery, again and again: every cut prompt is
// queued again exactly once, and delivered once.
func TestKill9DuringRecoveryRunsPromptsOnce(t *testing.T) {
	n, kills := recoverySize(t)
	d := daemontest.Start(t)
	tasks := make([]core.Task, n)
	for i := range tasks {
		tasks[i] = create(t, d, api.CreateTaskInput{Title: fmt.Sprintf("cut %d", i),
			Prompt: fmt.Sprintf("mock: say up %d\nmock: hang", i), Start: true})
	}
	for i, task := range tasks {
		waitSaid(t, d, task.ID, fmt.Sprintf("up %d", i))
	}
	d.Kill9()
	// Every start leaves the cut turns queued, so the count can be checked
	// (resuming them is TestInterruptedRunResumesOnStart's).
	d.SetEnv("KANDEV_NO_RESUME", "1")

	// Each failing start commits the recovery of the sessions before the
	// failpoint's one and dies inside that one's transaction.
	rng := rand.New(rand.NewSource(1))
	remaining := n
	for k := 0; k < kills; k++ {
		// Spread the kills over the whole recovery; at < remaining, so the
		// failpoint always fires.
		at := rng.Intn(max(1, remaining/(kills-k)))
		env := append(os.Environ(), d.Env...)
		env = append(env, fmt.Sprintf("KANDEV_FAILPOINT=exit-during-recovery:%d", at))
		r := d.RunEnv(env, "", "serve", "--home", d.Home.Dir)
		if r.Code != 70 || !strings.Contains(r.Stderr, "failpoint: exiting during recovery") {
			t.Fatalf("start %d with the failpoint at %d: exit %d\n%s", k, at, r.Code, r.Stderr)
		}
		remaining -= at
	}
	t.Logf("%d cut turns, %d kills during recovery, %d sessions left to the last start", n, kills, remaining)
	d.Restart()

	for i, task := range tasks {
		if got := get(t, d, task.ID); got.Queued != 1 {
			t.Fatalf("task %d: %d items queued after recovery, want its cut prompt once", i, got.Queued)
		}
	}
	// Deliver: the redelivery is the next turn (it hangs again); the
	// message sent now waits behind it. Nothing else may be queued.
	var wg sync.WaitGroup
	for i, task := range tasks {
		wg.Add(1)
		go func(i int, id string) {
			defer wg.Done()
			message(t, d, id, fmt.Sprintf("mock: say next %d", i))
		}(i, task.ID)
	}
	wg.Wait()
	for i, task := range tasks {
		want := fmt.Sprintf("up %d", i)
		daemontest.Eventually(t, wait, "the redelivery of task "+task.ID, func() bool {
			return strings.Count(strings.Join(said(t, d, task.ID), "\n"), want) == 2
		})
		got := get(t, d, task.ID)
		delivered := 0
		for _, p := range prompts(conversation(t, d, task.ID)) {
			if strings.Contains(p, want) {
				delivered++
			}
		}
		if delivered != 2 || got.Queued != 1 {
			t.Fatalf("task %d: prompt delivered %d times (want the first and one redelivery), %d queued (want the new message only)",
				i, delivered, got.Queued)
		}
	}
}
