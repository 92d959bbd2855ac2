package engine

import (
	"context"
	"time"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/store"
)

// changes is what one committed mutation announces once its transaction
// is in: every mutation is one transaction followed by one notification
// step, so a reader never sees a change before it committed, and a change
// that did not commit announces nothing.
type changes struct {
	messages  []store.Message // added to conversations
	questions []int64         // question messages whose lifecycle moved
	sessions  []string        // sessions whose row changed
	waiters   []questionWake  // blocked ask_user calls to tell
	refresh   []string        // tasks whose cached view must be reloaded
	kick      []string        // tasks whose turn loop may have work
}

// questionWake tells a blocked question call how its question ended.
type questionWake struct {
	questionID string
	delivery   answerDelivery
}

func (c *changes) addMessage(m store.Message) { c.messages = append(c.messages, m) }
func (c *changes) question(seq int64)         { c.questions = append(c.questions, seq) }
func (c *changes) session(id string)          { c.sessions = append(c.sessions, id) }
func (c *changes) touch(ids ...string)        { c.refresh = append(c.refresh, ids...) }

// wake refreshes the tasks and kicks their turn loops.
func (c *changes) wake(ids ...string) {
	c.refresh = append(c.refresh, ids...)
	c.kick = append(c.kick, ids...)
}

func (c *changes) tellWaiter(qid string, d answerDelivery) {
	c.waiters = append(c.waiters, questionWake{questionID: qid, delivery: d})
}

// tx runs fn in one transaction and returns what it changed, for announce.
// It is the half of commit for a mutation that must release a lock between
// its transaction and its notifications.
func (k *kernel) tx(ctx context.Context, fn func(tx *store.Tx, c *changes) error) (changes, error) {
	var c changes
	err := k.db.Tx(ctx, func(tx *store.Tx) error {
		c = changes{} // a retried transaction starts over
		return fn(tx, &c)
	})
	if err != nil {
		return changes{}, err
	}
	return c, nil
}

// commit runs fn in one transaction and, once it committed, announces
// what it changed.
func (k *kernel) commit(ctx context.Context, fn func(tx *store.Tx, c *changes) error) error {
	c, err := k.tx(ctx, fn)
	if err != nil {
		return err
	}
	k.announce(c)
	return nil
}

// announce is the notification step after a commit, always in this order:
// blocked calls told, messages and sessions published, tasks refreshed in
// the cache (each refresh publishes its task.updated event), turn loops
// kicked last, so a loop starts from the committed state.
func (k *kernel) announce(c changes) {
	for _, w := range c.waiters {
		k.notifyWaiter(w.questionID, w.delivery)
	}
	for _, m := range c.messages {
		k.publishMessage(core.EventMessageAdded, m)
	}
	for _, seq := range c.questions {
		k.publishQuestion(seq)
	}
	for _, id := range c.sessions {
		k.publishSession(id)
	}
	seen := map[string]bool{}
	for _, id := range c.refresh {
		if !seen[id] {
			seen[id] = true
			k.refreshQuiet(id)
		}
	}
	kicked := map[string]bool{}
	for _, id := range c.kick {
		if !kicked[id] {
			kicked[id] = true
			k.kickLoop(id)
		}
	}
}

// noteTx writes one of the engine's notes into a task's conversation within
// tx, to be published with the rest.
func (c *changes) noteTx(ctx context.Context, tx *store.Tx, taskID string, kind core.MessageKind, author, text string, meta map[string]any) error {
	now := time.Now().UTC()
	m, err := tx.InsertMessage(ctx, store.Message{TaskID: taskID, Kind: string(kind), Author: author, Text: text,
		Meta: metaJSON(meta), CreatedAt: now, UpdatedAt: now})
	if err != nil {
		return err
	}
	c.addMessage(m)
	return nil
}
