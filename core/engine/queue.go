package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/store"
)

// TaskQueue serves api.Client's operation of that name.
func (ms *Messages) TaskQueue(ctx context.Context, ref string) (api.QueueView, error) {
	t, err := ms.task(ctx, ref)
	if err != nil {
		return api.QueueView{}, err
	}
	queue, err := ms.k.db.Queue(ctx, t.ID)
	if err != nil {
		return api.QueueView{}, mapStoreErr(err, "queue of "+t.ID)
	}
	return queueView(t.ID, queue), nil
}

// DropQueued serves api.Client's operation of that name. Only a person drops: it is how the
// operator clears what others queued on a task, and an agent must not
// withdraw input meant for another task.
func (ms *Messages) DropQueued(ctx context.Context, ref string, in api.DropQueueInput) (api.QueueView, error) {
	actor := core.ActorFrom(ctx)
	if err := ms.may(actor, ActDropQueued, core.Task{}); err != nil {
		return api.QueueView{}, err
	}
	if in.All == (in.ID != 0) {
		return api.QueueView{}, core.Errorf(core.CodeValidation, "give the id of one queued item, or all")
	}
	t, err := ms.task(ctx, ref)
	if err != nil {
		return api.QueueView{}, err
	}
	// Under the task lock no turn takes an item from the queue meanwhile.
	rt := ms.k.live.runtime(t.ID)
	rt.mu.Lock()
	var dropped []int64
	c, err := ms.k.tx(ctx, func(tx *store.Tx, c *changes) error {
		dropped = nil
		queue, err := tx.Queue(ctx, t.ID)
		if err != nil {
			return err
		}
		for _, it := range queue {
			if !in.All && it.ID != in.ID {
				continue
			}
			if err := tx.DeleteQueueItem(ctx, it.ID); err != nil {
				return err
			}
			dropped = append(dropped, it.ID)
		}
		if len(dropped) == 0 {
			return nil
		}
		now := time.Now().UTC()
		note, err := tx.InsertMessage(ctx, store.Message{TaskID: t.ID, Kind: string(core.MsgStatus), Author: actor.String(),
			Text: fmt.Sprintf("%s dropped %d queued item(s)", actor.String(), len(dropped)),
			Meta: metaJSON(map[string]any{"dropped": dropped}), CreatedAt: now, UpdatedAt: now})
		if err != nil {
			return err
		}
		c.addMessage(note)
		c.touch(t.ID)
		return nil
	})
	rt.mu.Unlock()
	if err != nil {
		return api.QueueView{}, mapStoreErr(err, "queue of "+t.ID)
	}
	if !in.All && len(dropped) == 0 {
		return api.QueueView{}, core.Errorf(core.CodeNotFound, "task %s has no queued item %d (see kandev task queue %s)", t.ID, in.ID, t.ID)
	}
	ms.k.announce(c)
	view, err := ms.TaskQueue(ctx, t.ID)
	view.Dropped = dropped
	return view, err
}

func queueView(taskID string, queue []store.QueueItem) api.QueueView {
	v := api.QueueView{TaskID: taskID, Items: make([]api.QueuedItem, 0, len(queue))}
	for i, it := range queue {
		v.Items = append(v.Items, api.QueuedItem{ID: it.ID, Position: i + 1, Kind: it.Kind, Sender: core.ParseBy(it.Sender),
			Interrupt: it.Priority == priorityFront, Text: it.Text, QueuedAt: it.CreatedAt})
	}
	return v
}
