package agent

import "sync"

// flowLimit is how many session/update notifications may wait in the SDK
// at once. The SDK queues at most 1024 and closes the connection when the
// queue overflows; holding the reader back below that keeps a chatty
// agent (or a long session/load replay) connected, with the agent's own
// writes blocking on the pipe meanwhile.
const flowLimit = 256

// flow counts notifications handed to the SDK and not yet handled, and
// the bytes read from the agent and not yet parsed. handed and handled
// count the same notifications over the run's life, so a request can
// wait for those that came before it (waitHandled).
type flow struct {
	mu       sync.Mutex
	cond     *sync.Cond
	pending  int
	buffered int
	handed   uint64
	handled  uint64
	closed   bool
}

// setBuffered records how much the reader holds that it has not parsed.
func (f *flow) setBuffered(n int) {
	f.mu.Lock()
	f.buffered = n
	f.cond.Broadcast()
	f.mu.Unlock()
}

// settle waits until everything read so far is handled, the run is torn
// down, or done closes.
func (f *flow) settle(done <-chan struct{}) {
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		select {
		case <-done:
			f.mu.Lock()
			f.cond.Broadcast()
			f.mu.Unlock()
		case <-stop:
		}
	}()
	f.mu.Lock()
	defer f.mu.Unlock()
	for (f.pending > 0 || f.buffered > 0) && !f.closed {
		select {
		case <-done:
			return
		default:
		}
		f.cond.Wait()
	}
}

// handedSoFar is how many notifications the reader has passed on.
func (f *flow) handedSoFar() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.handed
}

// waitHandled waits until target notifications have been handled, the
// run is torn down, or done closes. The SDK queues notifications for one
// goroutine but hands each request to a goroutine of its own, so a
// session/request_permission can overtake the session/updates the agent
// sent before it (its own words, the tool call it asks about); waiting
// for them keeps the conversation in the order the agent wrote it.
func (f *flow) waitHandled(target uint64, done <-chan struct{}) {
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		select {
		case <-done:
			f.mu.Lock()
			f.cond.Broadcast()
			f.mu.Unlock()
		case <-stop:
		}
	}()
	f.mu.Lock()
	defer f.mu.Unlock()
	for f.handled < target && !f.closed {
		select {
		case <-done:
			return
		default:
		}
		f.cond.Wait()
	}
}

func newFlow() *flow {
	f := &flow{}
	f.cond = sync.NewCond(&f.mu)
	return f
}

// acquire waits for room for one more notification.
func (f *flow) acquire() {
	f.mu.Lock()
	for f.pending >= flowLimit && !f.closed {
		f.cond.Wait()
	}
	f.pending++
	f.handed++
	f.mu.Unlock()
}

// release marks one notification handled.
func (f *flow) release() {
	f.mu.Lock()
	if f.pending > 0 {
		f.pending--
	}
	f.handled++
	f.cond.Broadcast()
	f.mu.Unlock()
}

// close lets the reader go on regardless: the run is being torn down.
func (f *flow) close() {
	f.mu.Lock()
	f.closed = true
	f.cond.Broadcast()
	f.mu.Unlock()
}
