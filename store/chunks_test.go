package store

import (
	"context"
	"testing"
	"time"
)

// An entry appended to reads whole from every read, as if each append
// had rewritten it (ADR 0050): its text, a tool call's $.output, and
// updated_at the last append's; written whole again, its chunks go.
func TestAppendedChunksReadWhole(t *testing.T) {
	db := openFreshDB(t)
	ctx := context.Background()
	mustInsert(t, db, i2Task("chunk1", ""))
	agent, err := db.InsertMessage(ctx, Message{TaskID: "chunk1", Kind: "agent", Text: "one ", CreatedAt: i2Time, UpdatedAt: i2Time})
	if err != nil {
		t.Fatal(err)
	}
	tool, err := db.InsertMessage(ctx, Message{TaskID: "chunk1", Kind: "tool_call", Text: "run [in_progress]", Ref: "s:call1",
		Meta: `{"output":"o1 ","status":"in_progress","title":"run \u003cit\u003e"}`, CreatedAt: i2Time, UpdatedAt: i2Time})
	if err != nil {
		t.Fatal(err)
	}
	last := i2Time
	for i, s := range []string{"two ", "three ", "four"} {
		last = i2Time.Add(time.Duration(i+1) * time.Second)
		if err := db.AppendMessageChunk(ctx, agent.Seq, "", s, last); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.AppendMessageChunks(ctx, []Chunk{{Seq: tool.Seq, Field: ChunkOutput, Text: "o2 ", At: last}, {Seq: tool.Seq, Field: ChunkOutput, Text: "o3", At: last}}); err != nil {
		t.Fatal(err)
	}
	const wantText = "one two three four"
	const wantMeta = `{"output":"o1 o2 o3","status":"in_progress","title":"run \u003cit\u003e"}`
	check := func(how string, m Message) {
		t.Helper()
		switch m.Seq {
		case agent.Seq:
			if m.Text != wantText || !m.UpdatedAt.Equal(last) {
				t.Fatalf("%s: agent entry %q at %v, want %q at %v", how, m.Text, m.UpdatedAt, wantText, last)
			}
		case tool.Seq:
			if m.Meta != wantMeta || m.Text != "run [in_progress]" {
				t.Fatalf("%s: tool entry %q %s, want meta %s", how, m.Text, m.Meta, wantMeta)
			}
		}
	}
	m, err := db.GetMessage(ctx, agent.Seq)
	if err != nil {
		t.Fatal(err)
	}
	check("GetMessage", m)
	ms, err := db.Messages(ctx, "chunk1", 0, 10)
	if err != nil || len(ms) != 2 {
		t.Fatalf("Messages: %v %d", err, len(ms))
	}
	check("Messages", ms[0])
	check("Messages", ms[1])
	ms, err = db.MessagesBefore(ctx, "chunk1", 1<<40, 10)
	if err != nil || len(ms) != 2 {
		t.Fatalf("MessagesBefore: %v %d", err, len(ms))
	}
	check("MessagesBefore", ms[0])
	check("MessagesBefore", ms[1])
	if m, err = db.LastMessageOfKind(ctx, "chunk1", "agent"); err != nil {
		t.Fatal(err)
	}
	check("LastMessageOfKind", m)
	if m, err = db.MessageByRef(ctx, "s:call1"); err != nil {
		t.Fatal(err)
	}
	check("MessageByRef", m)

	// Written whole, the entry is what was written: its chunks are gone.
	if err := db.UpdateMessage(ctx, tool.Seq, "run [completed]", `{"output":"all","status":"completed"}`, last); err != nil {
		t.Fatal(err)
	}
	if m, err = db.GetMessage(ctx, tool.Seq); err != nil || m.Meta != `{"output":"all","status":"completed"}` || m.Chunks != 0 {
		t.Fatalf("rewritten: %+v %v", m, err)
	}
	var left int
	if err := db.sql.QueryRow(`SELECT count(*) FROM message_chunks WHERE seq = ?`, tool.Seq).Scan(&left); err != nil || left != 0 {
		t.Fatalf("%d chunks left of a rewritten entry (%v)", left, err)
	}
}
