package engine_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/store"
)

// A stall stored before core.Stall had its Failed flag (a map with the
// "run failed: " prefix in its detail) still reads as a failed run; one
// that ended without a handoff does not.
func TestLegacyStallRowsRead(t *testing.T) {
	env := newEngineEnv(t)
	failed := env.create(api.CreateTaskInput{Title: "failed"})
	returned := env.create(api.CreateTaskInput{Title: "returned"})
	env.close()

	db, err := store.Open(env.ctx, env.path)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)
	// Exactly what escalation.go wrote then: metaJSON of a map, keys sorted.
	rows := map[string]string{
		failed.ID:   `{"at":"2026-11-01T09:00:00Z","detail":"run failed: exit status 3","from":"role:eng","reason":"Stalled"}`,
		returned.ID: `{"at":"2026-11-01T09:00:00Z","detail":"my last words","from":"role:eng","reason":"Returned"}`,
	}
	for id, row := range rows {
		if err := db.SetStalled(env.ctx, id, row, now); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	env.open()

	got := env.get(failed.ID)
	if got.Stalled == nil || !got.Stalled.Failed || got.Stalled.Detail != "run failed: exit status 3" || !got.Escalated() {
		t.Fatalf("old failed stall read as %+v", got.Stalled)
	}
	b, err := json.Marshal(got)
	if err != nil || !strings.Contains(string(b), `"failed":true`) {
		t.Fatalf("wire %s %v", b, err)
	}
	got = env.get(returned.ID)
	if got.Stalled == nil || got.Stalled.Failed || !got.BackToYou() {
		t.Fatalf("old returned stall read as %+v", got.Stalled)
	}
}
