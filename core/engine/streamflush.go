package engine

import (
	"context"
	"sync"
	"time"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/store"
)

// streamFlusher writes the streamed output every recorder holds back, for
// all of them in one transaction, streamFlushDelay after the first of it
// arrived (ADR 0050). Fifty agents streaming cost twenty small
// transactions a second, not a thousand.
type streamFlusher struct {
	e *Engine
	// ticking serialises ticks: a tick is the only holder of more than
	// one recorder's lock, so two of them must never overlap.
	ticking sync.Mutex
	mu      sync.Mutex
	dirty   map[*recorder]struct{}
	timer   *time.Timer
}

// mark schedules r's pending output for the next tick. r.mu is held (the
// order is a recorder's lock, then the flusher's).
func (f *streamFlusher) mark(r *recorder) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.dirty == nil {
		f.dirty = map[*recorder]struct{}{}
	}
	f.dirty[r] = struct{}{}
	if f.timer == nil {
		f.timer = time.AfterFunc(streamFlushDelay, f.tick)
	}
}

// tick writes what the marked recorders hold. Their locks are held over
// the write, so an append cannot overtake the one being written (a
// recorder that must write now, a tool call arriving, waits for it).
// Nothing else holds two recorders' locks (ticks take turns), and
// nothing takes a recorder's lock inside a transaction: the order is
// recorders, then the store, as for every recorder write.
func (f *streamFlusher) tick() {
	f.ticking.Lock()
	defer f.ticking.Unlock()
	f.mu.Lock()
	rs := make([]*recorder, 0, len(f.dirty))
	for r := range f.dirty {
		rs = append(rs, r)
	}
	f.dirty, f.timer = nil, nil
	f.mu.Unlock()
	for _, r := range rs {
		r.mu.Lock()
	}
	defer func() {
		for _, r := range rs {
			r.mu.Unlock()
		}
	}()
	now := time.Now().UTC()
	var chunks []store.Chunk
	var events []core.MessageAppend
	var owners []*recorder
	for _, r := range rs {
		if len(r.pend) == 0 {
			continue // written meanwhile by the recorder itself
		}
		a := r.takePending(now)
		chunks = append(chunks, store.Chunk{Seq: a.Seq, Field: a.Field, Text: a.Text, At: now})
		events = append(events, a)
		owners = append(owners, r)
	}
	if len(chunks) == 0 {
		return
	}
	if err := f.e.db.AppendMessageChunks(context.Background(), chunks); err != nil {
		f.e.log.Error("record agent output", "entries", len(chunks), "err", err)
		return
	}
	for i := range events {
		f.e.bus.Publish(core.Event{Type: core.EventMessageAppended, TaskID: owners[i].taskID, Append: &events[i]})
	}
}
