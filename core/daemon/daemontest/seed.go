package daemontest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/store"
)

// SeedTasks writes n tasks in one transaction: a forest of small trees (one
// root in ten), realistic text, one task in a hundred with a finished
// agent session, one in four with a description: the load that
// benchmarks (kandev-bench, cmd's CLI benchmarks) run against. It returns
// the first task's id.
func SeedTasks(dbPath string, n int) (first string, err error) {
	ctx := context.Background()
	db, err := store.Open(ctx, dbPath)
	if err != nil {
		return "", err
	}
	defer db.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	ids := make([]string, 0, n)
	seen := make(map[string]bool, n)
	base := time.Now().Add(-time.Duration(n) * time.Second).UTC()
	cwd := filepath.Join(os.TempDir(), "project")
	err = db.Tx(ctx, func(tx *store.Tx) error {
		batch := make([]store.Task, 0, 1000)
		var sessions []store.Session
		for i := range n {
			id := core.NewID()
			for seen[id] {
				id = core.NewID()
			}
			seen[id] = true
			t := store.Task{ID: id, Title: fmt.Sprintf("Task %d: split the auth module into token and session parts", i),
				CWD: cwd, Profile: "claude", Status: string(core.Statuses[i%len(core.Statuses)]), Autopilot: i%3 == 0,
				CreatedBy: core.OperatorRef().String(), CreatedAt: base.Add(time.Duration(i) * time.Second)}
			t.UpdatedAt = t.CreatedAt
			if i%4 == 0 {
				t.Description = "Keep the public API; move parsing into its own file and add \"tests\" for it.\nSecond line."
			}
			if i%10 != 0 && len(ids) > 0 {
				lo := max(0, len(ids)-50)
				t.ParentID = ids[lo+rng.IntN(len(ids)-lo)]
				t.CreatedBy = core.TaskRef(t.ParentID).String()
			}
			batch = append(batch, t)
			if len(batch) == cap(batch) || i == n-1 {
				if err := tx.InsertTasks(ctx, batch); err != nil {
					return err
				}
				batch = batch[:0]
			}
			if i%100 == 0 {
				sessions = append(sessions, store.Session{ID: "s" + id, TaskID: id, Role: "worker", Profile: "claude", State: "completed",
					AgentSessionID: "agent-" + id, Turns: 3, CreatedAt: t.CreatedAt, UpdatedAt: t.CreatedAt})
			}
			ids = append(ids, id)
		}
		// After their tasks, which they reference.
		for _, s := range sessions {
			if err := tx.InsertSession(ctx, s); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("seed %d tasks: %w", n, err)
	}
	return ids[0], nil
}
