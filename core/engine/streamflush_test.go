package engine

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/store"
)

// A tick takes a recorder's pending output and lets go of the recorder
// before it writes: while the write waits for the database, the agent's
// next updates are taken in (and timed from the write's end). Order is kept all the same: an entry the
// recorder writes next (a tool call) waits for that write, so followers
// see the appends, then the call, and the conversation holds them so.
func TestTickTakesUpdatesInWhileItWrites(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "kandev.db")
	db, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	e, err := New(ctx, Options{DB: db, Home: core.Home{Dir: dir}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	task, err := e.Tasks.CreateTask(ctx, api.CreateTaskInput{Title: "stream", CWD: dir})
	if err != nil {
		t.Fatal(err)
	}
	events, stop := e.k.bus.Subscribe(task.ID)
	defer stop()
	r := newRecorder(e.Runs, task.ID, "", nil)
	say := func(text string) {
		r.Update(ctx, acp.SessionNotification{Update: acp.UpdateAgentMessageText(text)})
	}
	say("first ") // the entry, written at once

	// Another connection holds the database's write lock: the tick's
	// write waits for it (busy_timeout) once it has taken the output.
	other, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	hold, err := other.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Close()
	if _, err := hold.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	say("second ")
	for taken := false; !taken; {
		r.mu.Lock()
		taken = len(r.pend) == 0 && r.inflight != nil
		r.mu.Unlock()
	}
	say("third ") // taken in while the tick's write waits
	// and timed from the write's end: a slow commit is followed by fewer
	// of them, not by one at once.
	e.flusher.mu.Lock()
	armed := e.flusher.timer != nil
	e.flusher.mu.Unlock()
	if armed {
		t.Error("output marked while a tick writes should be timed from the write's end")
	}
	called := make(chan struct{})
	go func() {
		defer close(called)
		r.Update(ctx, acp.SessionNotification{Update: acp.StartToolCall("call-1", "a tool")})
	}()
	if _, err := hold.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	<-called

	var got []string
	// Not a clock on the test: an append that was lost never comes.
	lost := time.After(time.Minute)
	for len(got) < 4 {
		var ev core.Event
		select {
		case ev = <-events:
		case <-lost:
			t.Fatalf("followers saw only %q", got)
		}
		switch {
		case ev.Type == core.EventMessageAdded && ev.Message != nil:
			got = append(got, "added "+string(ev.Message.Kind)+" "+ev.Message.Text)
		case ev.Type == core.EventMessageAppended && ev.Append != nil:
			got = append(got, "appended "+ev.Append.Text)
		}
	}
	want := []string{"added agent first ", "appended second ", "appended third ", "added tool_call a tool [pending]"}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("followers saw %q, want %q", got, want)
		}
	}
	ms, err := db.Messages(ctx, task.ID, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	var convo []string
	for _, m := range ms {
		convo = append(convo, string(m.Kind)+" "+m.Text)
	}
	if len(convo) < 2 || convo[len(convo)-2] != "agent first second third " || convo[len(convo)-1] != "tool_call a tool [pending]" {
		t.Fatalf("the conversation holds %q", convo)
	}
}
