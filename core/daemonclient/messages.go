package daemonclient

import (
	"context"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/wire"
)

// Messages is the client's messages area: a task's start, its messages,
// conversation and queue.
type Messages struct{ c *caller }

var _ api.MessageClient = (*Messages)(nil)

// StartTask implements api.MessageClient.
func (m *Messages) StartTask(ctx context.Context, id string, in api.StartTaskInput) (core.Task, error) {
	return call(ctx, m.c, wire.StartTask, wire.Keyed[api.StartTaskInput]{Key: id, In: in})
}

// MessageTask implements api.MessageClient.
func (m *Messages) MessageTask(ctx context.Context, id string, in api.MessageInput) (api.MessageResult, error) {
	return call(ctx, m.c, wire.MessageTask, wire.Keyed[api.MessageInput]{Key: id, In: in})
}

// Conversation implements api.MessageClient.
func (m *Messages) Conversation(ctx context.Context, id string, in api.ConversationInput) (api.ConversationPage, error) {
	return call(ctx, m.c, wire.Conversation, wire.Keyed[wire.ConversationQuery]{Key: id, In: wire.ConversationQuery(in)})
}

// TaskQueue implements api.MessageClient.
func (m *Messages) TaskQueue(ctx context.Context, id string) (api.QueueView, error) {
	return call(ctx, m.c, wire.TaskQueue, wire.Key(id))
}

// DropQueued implements api.MessageClient.
func (m *Messages) DropQueued(ctx context.Context, id string, in api.DropQueueInput) (api.QueueView, error) {
	return call(ctx, m.c, wire.DropQueued, wire.Keyed[api.DropQueueInput]{Key: id, In: in})
}
