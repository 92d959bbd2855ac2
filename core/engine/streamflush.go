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
	k *kernel
	// ticking serialises ticks: a tick that took a recorder's output
	// writes it before the next tick takes more of it.
	ticking sync.Mutex
	mu      sync.Mutex
	dirty   map[*recorder]struct{}
	timer   *time.Timer
	// writing: a tick is writing; output marked meanwhile is timed from
	// its end, so a machine that makes commits slow gets fewer of them
	// (each costs the pages of every entry it touches), not more.
	writing bool
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
	if f.timer == nil && !f.writing {
		f.timer = time.AfterFunc(streamFlushDelay, f.tick)
	}
}

// wrote ends a tick's write: output marked while it wrote is timed now.
func (f *streamFlusher) wrote() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writing = false
	if len(f.dirty) > 0 && f.timer == nil {
		f.timer = time.AfterFunc(streamFlushDelay, f.tick)
	}
}

// tick writes what the marked recorders hold. It takes each one's
// pending output under its lock and releases it before the write: an
// agent's next updates are taken in while the tick writes (holding fifty
// recorders over a commit that waited for a core kept every agent's
// stream waiting with it). Order is kept by the recorders instead: each
// one whose output a tick took waits for that tick's write to end
// (recorder.inflight) before it writes anything itself, so an append
// never overtakes the one before it, and ticks take turns.
func (f *streamFlusher) tick() {
	f.ticking.Lock()
	defer f.ticking.Unlock()
	f.mu.Lock()
	rs := make([]*recorder, 0, len(f.dirty))
	for r := range f.dirty {
		rs = append(rs, r)
	}
	f.dirty, f.timer, f.writing = nil, nil, true
	f.mu.Unlock()
	defer f.wrote()
	done := make(chan struct{})
	defer close(done)
	now := time.Now().UTC()
	var chunks []store.Chunk
	var events []core.MessageAppend
	var owners []*recorder
	for _, r := range rs {
		r.mu.Lock()
		if len(r.pend) > 0 { // else written meanwhile by the recorder itself
			r.settleWrites() // a tick before this one: done, as ticks take turns
			a := r.takePending(now)
			r.inflight = done
			chunks = append(chunks, store.Chunk{Seq: a.Seq, Field: a.Field, Text: a.Text, At: now})
			events = append(events, a)
			owners = append(owners, r)
		}
		r.mu.Unlock()
	}
	if len(chunks) == 0 {
		return
	}
	if err := f.k.db.AppendMessageChunks(context.Background(), chunks); err != nil {
		f.k.log.Error("record agent output", "entries", len(chunks), "err", err)
		return
	}
	for i := range events {
		f.k.bus.Publish(core.Event{Type: core.EventMessageAppended, TaskID: owners[i].taskID, Append: &events[i]})
	}
}
