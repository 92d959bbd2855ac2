package daemonclient

import (
	"context"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/wire"
)

// Questions is the client's questions area: a task's pending question
// answered.
type Questions struct{ c *caller }

var _ core.QuestionClient = (*Questions)(nil)

// AnswerQuestion implements core.QuestionClient.
func (q *Questions) AnswerQuestion(ctx context.Context, id string, in core.AnswerInput) (core.AnswerResult, error) {
	return call(ctx, q.c, wire.AnswerQuestion, wire.Keyed[core.AnswerInput]{Key: id, In: in})
}
