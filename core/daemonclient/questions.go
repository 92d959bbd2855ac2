package daemonclient

import (
	"context"

	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/wire"
)

// Questions is the client's questions area: a task's pending question
// answered.
type Questions struct{ c *caller }

var _ api.QuestionClient = (*Questions)(nil)

// AnswerQuestion implements api.QuestionClient.
func (q *Questions) AnswerQuestion(ctx context.Context, id string, in api.AnswerInput) (api.AnswerResult, error) {
	return call(ctx, q.c, wire.AnswerQuestion, wire.Keyed[api.AnswerInput]{Key: id, In: in})
}
