package engine_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/kandev/kandev/core"
)

// BenchmarkListTasksToolFirstPage100k: list_tasks_kandev's first page over
// 100,000 tasks on the external surface (every task), the engine's share
// of the call: one pass over the snapshot, only the page copied. The
// result is encoded too, as the daemon does before answering.
func BenchmarkListTasksToolFirstPage100k(b *testing.B) {
	dbPath, _ := benchEngineHome(b, 100_000)
	eng := benchEngine(b, dbPath)
	ctx := core.WithActor(context.Background(), core.Actor{Kind: core.ActorExternal})
	for b.Loop() {
		res, err := eng.Tools.CallTool(ctx, "list_tasks_kandev", []byte(`{}`))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := json.Marshal(res); err != nil {
			b.Fatal(err)
		}
	}
}
