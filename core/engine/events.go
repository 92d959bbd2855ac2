package engine

// Events and notes: what the engine publishes on its bus and writes into
// a task's conversation by itself.

import (
	"context"
	"encoding/json"
	"time"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/store"
)

func (rs *Runs) updateSession(id string, u store.SessionUpdate) {
	ctx := context.Background()
	c, err := rs.k.tx(ctx, func(tx *store.Tx, c *changes) error {
		c.session(id)
		return tx.UpdateSession(ctx, id, u, time.Now().UTC())
	})
	if err != nil {
		rs.k.log.Error("update session", "session", id, "err", err)
		// Show the session as it stands all the same.
		c.session(id)
	}
	rs.k.announce(c)
}

func (k *kernel) publishSession(id string) {
	s, err := k.db.GetSession(context.Background(), id)
	if err != nil {
		return
	}
	info := sessionInfo(s)
	k.bus.Publish(core.Event{Type: core.EventSessionUpdated, TaskID: s.TaskID, Session: &info})
}

func (k *kernel) publishMessage(typ core.EventType, m store.Message) {
	cm := messageFromStore(m)
	k.bus.Publish(core.Event{Type: typ, TaskID: m.TaskID, Message: &cm})
}

func (k *kernel) publishQuestion(seq int64) {
	m, err := k.db.GetMessage(context.Background(), seq)
	if err != nil {
		return
	}
	k.publishMessage(core.EventMessageUpdated, m)
	if info, err := questionInfo(m); err == nil {
		k.bus.Publish(core.Event{Type: core.EventQuestionUpdated, TaskID: m.TaskID, Question: &info})
	}
}

// note appends an engine-written entry to a task's conversation.
func (k *kernel) note(ctx context.Context, taskID, sessionID string, kind core.MessageKind, author, text string, meta map[string]any) {
	metaJSON := "{}"
	if meta != nil {
		b, _ := json.Marshal(meta)
		metaJSON = string(b)
	}
	now := time.Now().UTC()
	ctx = context.WithoutCancel(ctx)
	err := k.commit(ctx, func(tx *store.Tx, c *changes) error {
		m, err := tx.InsertMessage(ctx, store.Message{TaskID: taskID, SessionID: sessionID, Kind: string(kind),
			Author: author, Text: text, Meta: metaJSON, CreatedAt: now, UpdatedAt: now})
		if err != nil {
			return err
		}
		c.addMessage(m)
		return nil
	})
	if err != nil {
		k.log.Error("record note", "task", taskID, "err", err)
	}
}

// dropMetaKey removes one field from a JSON object.
func dropMetaKey(meta, key string) string {
	var m map[string]any
	if json.Unmarshal([]byte(meta), &m) != nil {
		return meta
	}
	delete(m, key)
	out, _ := json.Marshal(m)
	return string(out)
}

// mergeMeta lays extra JSON object fields over base.
func mergeMeta(base, extra string) string {
	if extra == "" || extra == "{}" {
		return base
	}
	var a, b map[string]any
	if json.Unmarshal([]byte(base), &a) != nil || json.Unmarshal([]byte(extra), &b) != nil {
		return base
	}
	for k, v := range b {
		a[k] = v
	}
	out, _ := json.Marshal(a)
	return string(out)
}
