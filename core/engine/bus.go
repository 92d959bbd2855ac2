package engine

import (
	"sync"
	"time"

	"github.com/kandev/kandev/core"
)

// subscriberBuffer is how far a subscriber may fall behind before it is
// told to resync instead of blocking the engine.
const subscriberBuffer = 4096

// Bus fans events out to subscribers. Publishing never blocks: a subscriber
// whose buffer is full misses events and then receives one resync event,
// after which it must reload what it shows.
type Bus struct {
	mu   sync.Mutex
	seq  int64
	subs map[*subscription]struct{}
}

type subscription struct {
	ch     chan core.Event
	taskID string
	lagged bool
}

func newBus() *Bus { return &Bus{subs: map[*subscription]struct{}{}} }

// Publish stamps e with the next sequence number and delivers it.
func (b *Bus) Publish(e core.Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.seq++
	e.Seq = b.seq
	if e.At.IsZero() {
		e.At = time.Now().UTC()
	}
	for s := range b.subs {
		if s.taskID != "" && e.TaskID != s.taskID && e.Type != core.EventResync {
			continue
		}
		if s.lagged {
			select {
			case s.ch <- core.Event{Seq: e.Seq, Type: core.EventResync, At: e.At}:
				s.lagged = false
			default:
				continue
			}
		}
		select {
		case s.ch <- e:
		default:
			s.lagged = true
		}
	}
}

// Subscribe returns a channel of events (optionally for one task) and a
// function that ends the subscription and closes the channel.
func (b *Bus) Subscribe(taskID string) (<-chan core.Event, func()) {
	s := &subscription{ch: make(chan core.Event, subscriberBuffer), taskID: taskID}
	b.mu.Lock()
	b.subs[s] = struct{}{}
	b.mu.Unlock()
	var once sync.Once
	return s.ch, func() {
		once.Do(func() {
			b.mu.Lock()
			delete(b.subs, s)
			b.mu.Unlock()
			close(s.ch)
		})
	}
}

// Seq is the sequence number of the last event published.
func (b *Bus) Seq() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.seq
}
