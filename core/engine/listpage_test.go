package engine_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
)

type listPage struct {
	Tasks      []core.Task `json:"tasks"`
	NextCursor string      `json:"next_cursor"`
}

func (c *coordEnv) listPage(as string, args map[string]any) listPage {
	c.t.Helper()
	res, err := c.call(as, "list_tasks_kandev", args)
	if err != nil {
		c.t.Fatalf("list_tasks_kandev %v: %v", args, err)
	}
	b, err := json.Marshal(res)
	if err != nil {
		c.t.Fatal(err)
	}
	var p listPage
	if err := json.Unmarshal(b, &p); err != nil {
		c.t.Fatalf("result %s: %v", b, err)
	}
	return p
}

func ids(ts []core.Task) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.ID
	}
	return out
}

// TestListTasksPages: list_tasks_kandev returns the listing a page at a
// time; following next_cursor visits every task once, in order; filters
// narrow the pages; bad limits and stale cursors are refused. With a root
// and without (every task, as on the external surface).
func TestListTasksPages(t *testing.T) {
	c := newCoord(t)
	root := c.task("root", "", false)
	var kids []core.Task
	for i := range 25 {
		k := c.task(fmt.Sprintf("kid %d", i), root.ID, false)
		kids = append(kids, k)
		if i%5 == 0 {
			c.task(fmt.Sprintf("grandkid %d", i), k.ID, false)
		}
		if i%4 == 0 {
			if _, err := c.eng.Tasks.SetTaskStatus(c.ctx, k.ID, core.StatusCancelled); err != nil {
				t.Fatal(err)
			}
		}
	}
	whole, err := c.eng.Tasks.ListTasks(c.ctx, api.ListTasksInput{Root: root.ID})
	if err != nil {
		t.Fatal(err)
	}
	if len(whole) != 31 {
		t.Fatalf("subtree has %d tasks, want 31", len(whole))
	}

	// Default: one page holds the whole subtree (under the default limit).
	if p := c.listPage(root.ID, nil); !slices.Equal(ids(p.Tasks), ids(whole)) || p.NextCursor != "" {
		t.Fatalf("default page: %d tasks, cursor %q", len(p.Tasks), p.NextCursor)
	}

	// Pages of 7, followed to the end: the subtree, and every task
	// (the external surface's listing).
	unrelated := c.task("unrelated", "", false)
	everything, err := c.eng.Tasks.ListTasks(c.ctx, api.ListTasksInput{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args map[string]any
		call func(map[string]any) listPage
		want []core.Task
	}{
		{map[string]any{"limit": 7}, func(a map[string]any) listPage { return c.listPage(root.ID, a) }, whole},
		{map[string]any{"limit": 7}, c.listExternal, everything},
	} {
		var got []string
		for pages := 1; ; pages++ {
			p := tc.call(tc.args)
			if len(p.Tasks) > 7 {
				t.Fatalf("page %d: %d tasks", pages, len(p.Tasks))
			}
			got = append(got, ids(p.Tasks)...)
			if p.NextCursor == "" {
				if want := (len(tc.want) + 6) / 7; pages != want {
					t.Fatalf("%d pages of 7 for %d tasks, want %d", pages, len(tc.want), want)
				}
				break
			}
			if p.NextCursor != p.Tasks[len(p.Tasks)-1].ID {
				t.Fatalf("next_cursor %q is not the page's last task", p.NextCursor)
			}
			tc.args["cursor"] = p.NextCursor
		}
		if !slices.Equal(got, ids(tc.want)) {
			t.Fatalf("paging visited %v, want %v", got, ids(tc.want))
		}
	}
	if !slices.Contains(ids(everything), unrelated.ID) {
		t.Fatal("the external listing lacks a task outside the subtree")
	}

	// Filters: status, direct children, both with paging.
	cancelled := c.listPage(root.ID, map[string]any{"status": "cancelled", "limit": 3})
	if len(cancelled.Tasks) != 3 || cancelled.NextCursor == "" {
		t.Fatalf("cancelled: %d tasks, cursor %q", len(cancelled.Tasks), cancelled.NextCursor)
	}
	rest := c.listPage(root.ID, map[string]any{"status": "cancelled", "limit": 10, "cursor": cancelled.NextCursor})
	for _, tk := range append(cancelled.Tasks, rest.Tasks...) {
		if tk.Status != core.StatusCancelled {
			t.Fatalf("status filter let %s (%s) through", tk.ID, tk.Status)
		}
	}
	if len(rest.Tasks) != 4 || rest.NextCursor != "" {
		t.Fatalf("second cancelled page: %d tasks, cursor %q", len(rest.Tasks), rest.NextCursor)
	}
	children := c.listPage(root.ID, map[string]any{"parent_id": root.ID})
	if !slices.Equal(ids(children.Tasks), ids(kids)) {
		t.Fatalf("parent_id: %v, want %v", ids(children.Tasks), ids(kids))
	}
	if p := c.listPage(root.ID, map[string]any{"assignee": "role:idle"}); len(p.Tasks) != 31 {
		t.Fatalf("assignee role:idle: %d tasks, want 31", len(p.Tasks))
	}
	if p := c.listPage(root.ID, map[string]any{"assignee": "person:operator"}); len(p.Tasks) != 0 {
		t.Fatalf("assignee person:operator: %d tasks", len(p.Tasks))
	}

	// Refusals.
	for _, bad := range []map[string]any{
		{"limit": 501},
		{"limit": -1},
		{"status": "sleeping"},
	} {
		_, err := c.call(root.ID, "list_tasks_kandev", bad)
		wantCode(t, err, core.CodeValidation)
	}
	if _, err := c.eng.Tasks.ArchiveTask(c.ctx, kids[24].ID, api.ArchiveTaskInput{}); err != nil {
		t.Fatal(err)
	}
	_, err = c.call(root.ID, "list_tasks_kandev", map[string]any{"cursor": kids[24].ID})
	wantCode(t, err, core.CodeValidation)
	_, err = c.eng.Tools.CallTool(core.WithActor(c.ctx, core.Actor{Kind: core.ActorExternal}), "list_tasks_kandev",
		[]byte(`{"cursor":"`+kids[24].ID+`"}`))
	wantCode(t, err, core.CodeValidation)
}

// listExternal calls list_tasks_kandev as the external surface: every
// task.
func (c *coordEnv) listExternal(args map[string]any) listPage {
	c.t.Helper()
	b, _ := json.Marshal(args)
	res, err := c.eng.Tools.CallTool(core.WithActor(c.ctx, core.Actor{Kind: core.ActorExternal}), "list_tasks_kandev", b)
	if err != nil {
		c.t.Fatalf("list_tasks_kandev %v: %v", args, err)
	}
	b, _ = json.Marshal(res)
	var p listPage
	if err := json.Unmarshal(b, &p); err != nil {
		c.t.Fatal(err)
	}
	return p
}
