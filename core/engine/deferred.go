package engine

import "sync"

// deferredDeliveries are the tasks whose next delivery could not be
// written (a full disk, most likely) and waits for a retry: by task, the
// reason shown as the task's waiting field. It is kept in memory because
// the store may not take it; the turn loop's retry timer clears it once a
// delivery is written (turns.go deliveryFailed, deliveryDone).
//
// mu guards why. It is a leaf: a refresh reads it (storedTask) under the
// task's refresh stripe, and the turn loop sets it under the task's rt.mu,
// so nothing may be locked while it is held.
type deferredDeliveries struct {
	mu  sync.Mutex
	why map[string]string
}

func newDeferredDeliveries() deferredDeliveries {
	return deferredDeliveries{why: map[string]string{}}
}

// set records why task id's delivery waits.
func (d *deferredDeliveries) set(id, why string) {
	d.mu.Lock()
	d.why[id] = why
	d.mu.Unlock()
}

// clear forgets task id's waiting delivery.
func (d *deferredDeliveries) clear(id string) {
	d.mu.Lock()
	delete(d.why, id)
	d.mu.Unlock()
}

// reason is why task id's delivery waits, or "".
func (d *deferredDeliveries) reason(id string) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.why[id]
}
