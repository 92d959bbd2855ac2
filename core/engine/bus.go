package engine

import (
	"strconv"
	"sync"
	"time"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
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
	// ids finds a subscription by the id SetAppends names it by; lastID
	// numbers them after idPrefix, the bus's start, so that an id held
	// across a daemon's restart names nothing in the new one.
	ids      map[string]*subscription
	idPrefix string
	lastID   int64
}

type subscription struct {
	ch     chan core.Event
	taskID string
	lagged bool
	// appends: which task's streamed output it receives (SetAppends may
	// change it while the subscription lives).
	appends Appends
}

// Appends is which task's message.appended events a subscription
// receives. They are nearly all of the bus's traffic while agents stream,
// and a front end shows one conversation: a follower that asks for that
// task's alone is spared the rest (issue 26).
type Appends struct {
	// All: every task's (Subscribe's, what the CLI's followers read).
	All bool
	// Task: else only this task's; "" none.
	Task string
}

// AllAppends lets every task's appends through.
var AllAppends = Appends{All: true}

// AppendsOf reads the filter a client asked for (api.EventsInput.Appends):
// "" every task's, core.AppendsNone none, else that task's.
func AppendsOf(s string) Appends {
	switch s {
	case "":
		return AllAppends
	case api.AppendsNone:
		return Appends{}
	}
	return Appends{Task: s}
}

func (a Appends) admits(e *core.Event) bool {
	return e.Type != core.EventMessageAppended || a.All || (a.Task != "" && e.TaskID == a.Task)
}

func newBus() *Bus {
	return &Bus{subs: map[*subscription]struct{}{}, ids: map[string]*subscription{},
		idPrefix: strconv.FormatInt(time.Now().UnixNano(), 36) + "-"}
}

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
		// Before the buffer: an append the subscriber does not follow
		// costs it no room.
		if !s.appends.admits(&e) {
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
	_, ch, cancel := b.SubscribeAppends(taskID, AllAppends)
	return ch, cancel
}

// SubscribeAppends is Subscribe with the subscription's appends filter,
// and the id SetAppends changes it by; the id is gone once cancel is
// called.
func (b *Bus) SubscribeAppends(taskID string, appends Appends) (id string, events <-chan core.Event, cancel func()) {
	s := &subscription{ch: make(chan core.Event, subscriberBuffer), taskID: taskID, appends: appends}
	b.mu.Lock()
	b.lastID++
	id = b.idPrefix + strconv.FormatInt(b.lastID, 10)
	b.subs[s] = struct{}{}
	b.ids[id] = s
	b.mu.Unlock()
	var once sync.Once
	return id, s.ch, func() {
		once.Do(func() {
			b.mu.Lock()
			delete(b.subs, s)
			delete(b.ids, id)
			b.mu.Unlock()
			close(s.ch)
		})
	}
}

// SetAppends changes which appends subscription id receives, from the
// next event published; false when no such subscription lives.
func (b *Bus) SetAppends(id string, appends Appends) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	s, ok := b.ids[id]
	if ok {
		s.appends = appends
	}
	return ok
}

// Seq is the sequence number of the last event published.
func (b *Bus) Seq() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.seq
}
