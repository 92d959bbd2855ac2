package daemonclient

import (
	"context"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/wire"
)

// Messages is the client's messages area: a task's start, its messages,
// conversation and queue.
type Messages struct{ c *caller }

var _ core.MessageClient = (*Messages)(nil)

// StartTask implements core.MessageClient.
func (m *Messages) StartTask(ctx context.Context, id string, in core.StartTaskInput) (core.Task, error) {
	return call(ctx, m.c, wire.StartTask, wire.Keyed[core.StartTaskInput]{Key: id, In: in})
}

// MessageTask implements core.MessageClient.
func (m *Messages) MessageTask(ctx context.Context, id string, in core.MessageInput) (core.MessageResult, error) {
	return call(ctx, m.c, wire.MessageTask, wire.Keyed[core.MessageInput]{Key: id, In: in})
}

// Conversation implements core.MessageClient.
func (m *Messages) Conversation(ctx context.Context, id string, in core.ConversationInput) (core.ConversationPage, error) {
	return call(ctx, m.c, wire.Conversation, wire.Keyed[wire.ConversationQuery]{Key: id, In: wire.ConversationQuery(in)})
}

// TaskQueue implements core.MessageClient.
func (m *Messages) TaskQueue(ctx context.Context, id string) (core.QueueView, error) {
	return call(ctx, m.c, wire.TaskQueue, wire.Key(id))
}

// DropQueued implements core.MessageClient.
func (m *Messages) DropQueued(ctx context.Context, id string, in core.DropQueueInput) (core.QueueView, error) {
	return call(ctx, m.c, wire.DropQueued, wire.Keyed[core.DropQueueInput]{Key: id, In: in})
}
