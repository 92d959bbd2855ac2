package engine

import "sync"

// waitingCalls are the agents' tool calls blocked on a person: an
// ask_user question or a permission request whose MCP call (or ACP
// request) waits for its answer. The answer itself is durable (the
// question's message, ADR 0027); this holds only the channel that wakes
// the call, by question id.
//
// mu guards byQuestion. Invariants under mu: at most one call waits on a
// question id; a channel, once removed from byQuestion, is sent to at most
// once by whoever removed it (the channels have room for one delivery, so
// a send under mu never blocks). mu is a leaf: nothing else is locked
// while it is held.
type waitingCalls struct {
	mu         sync.Mutex
	byQuestion map[string]chan answerDelivery
}

func newWaitingCalls() waitingCalls {
	return waitingCalls{byQuestion: map[string]chan answerDelivery{}}
}

// add registers ch as the call waiting on a new question id.
func (w *waitingCalls) add(id string, ch chan answerDelivery) {
	w.mu.Lock()
	w.byQuestion[id] = ch
	w.mu.Unlock()
}

// displace registers ch as the call waiting on id; a call that waited on
// it already is handed d and waits no more.
func (w *waitingCalls) displace(id string, ch chan answerDelivery, d answerDelivery) {
	w.mu.Lock()
	if old, ok := w.byQuestion[id]; ok {
		old <- d
	}
	w.byQuestion[id] = ch
	w.mu.Unlock()
}

// forget removes ch if it still waits on id, and reports whether any call
// was still registered on id (false: someone took the waiter, and its
// delivery is in, or on its way to, that call's channel).
func (w *waitingCalls) forget(id string, ch chan answerDelivery) (still bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	cur, still := w.byQuestion[id]
	if still && cur == ch {
		delete(w.byQuestion, id)
	}
	return still
}

// notify hands d to the call waiting on id; false when none waits.
func (w *waitingCalls) notify(id string, d answerDelivery) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	ch, ok := w.byQuestion[id]
	if !ok {
		return false
	}
	delete(w.byQuestion, id)
	ch <- d
	return true
}
