package engine

import (
	"context"
	"reflect"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/capability"
)

// toolHandler runs one agent tool for its caller with the arguments
// capability.Check decoded and checked: the handler's whole contract is
// its argument struct, so none of them checks a schema rule again.
type toolHandler struct {
	// args is the argument struct's pointer type the handler takes; it is
	// the registry entry's (TestToolTableCoversTheRegistry).
	args reflect.Type
	run  func(tl *Tools, ctx context.Context, actor core.Actor, args any) (any, error)
}

// handle makes a toolHandler of a function of the tool's argument struct.
func handle[A any](f func(tl *Tools, ctx context.Context, actor core.Actor, a *A) (any, error)) toolHandler {
	return toolHandler{
		args: reflect.TypeFor[*A](),
		run: func(tl *Tools, ctx context.Context, actor core.Actor, args any) (any, error) {
			a, ok := args.(*A)
			if !ok {
				return nil, core.Errorf(core.CodeInternal, "tool handler takes %s, not %T", reflect.TypeFor[*A](), args)
			}
			return f(tl, ctx, actor, a)
		},
	}
}

type noArgs = capability.NoArgs

// toolTable maps every tool of capability's registry to its handler, one
// row each (a map literal refuses a name twice; the test refuses a
// registry tool without a row, or a row without a tool). Adding a tool is
// its registry entry, its argument struct and its row here.
var toolTable = map[string]toolHandler{
	"create_task_kandev": handle((*Tools).toolCreateTask),
	"list_tasks_kandev":  handle((*Tools).toolListTasks),
	"get_task_kandev": handle(func(tl *Tools, ctx context.Context, actor core.Actor, a *capability.TaskIDArgs) (any, error) {
		return tl.tasks.GetTask(ctx, orSelf(a.TaskID, actor))
	}),
	"get_task_diff_kandev": handle(func(tl *Tools, ctx context.Context, actor core.Actor, a *capability.DiffArgs) (any, error) {
		return tl.workspaces.toolTaskDiff(ctx, orSelf(a.TaskID, actor), a.StatOnly)
	}),
	"get_task_conversation_kandev": handle(func(tl *Tools, ctx context.Context, actor core.Actor, a *capability.ConversationArgs) (any, error) {
		return tl.messages.Conversation(ctx, orSelf(a.TaskID, actor), api.ConversationInput{After: a.After, Limit: a.Limit})
	}),
	"message_task_kandev": handle(func(tl *Tools, ctx context.Context, actor core.Actor, a *capability.MessageTaskArgs) (any, error) {
		in := api.MessageInput{Text: a.Prompt, Delivery: api.Delivery(a.DeliveryMode), ReplyTo: a.ReplyToQuestionID}
		for _, c := range a.Comments {
			in.Comments = append(in.Comments, api.ReviewCommentInput(c))
		}
		return tl.messages.MessageTask(ctx, a.TaskID, in)
	}),
	"stop_task_kandev": handle(func(tl *Tools, ctx context.Context, actor core.Actor, a *capability.StopTaskArgs) (any, error) {
		return tl.chain.StopTask(ctx, a.TaskID, api.StopTaskInput{})
	}),
	"handoff_task_kandev": handle(func(tl *Tools, ctx context.Context, actor core.Actor, a *capability.HandoffArgs) (any, error) {
		return tl.chain.HandoffTask(ctx, orSelf(a.TaskID, actor), api.HandoffInput{To: a.To, Message: a.Message})
	}),
	"set_task_status_kandev": handle(func(tl *Tools, ctx context.Context, actor core.Actor, a *capability.SetStatusArgs) (any, error) {
		return tl.tasks.SetTaskStatus(ctx, a.TaskID, core.Status(a.Status))
	}),
	"list_roles_kandev": handle(func(tl *Tools, ctx context.Context, actor core.Actor, _ *noArgs) (any, error) {
		rs, err := tl.roles.ListRoles(ctx)
		if err != nil {
			return nil, err
		}
		ps, err := tl.roles.ListPersons(ctx)
		return map[string]any{"roles": rs, "people": ps}, err
	}),
	"list_profiles_kandev": handle(func(tl *Tools, ctx context.Context, actor core.Actor, _ *noArgs) (any, error) {
		ps, err := tl.roles.ListProfiles(ctx)
		return map[string]any{"profiles": ps}, err
	}),
	"save_profile_kandev": handle(func(tl *Tools, ctx context.Context, actor core.Actor, a *capability.SaveProfileArgs) (any, error) {
		mcp := true
		if a.MCP != nil {
			mcp = *a.MCP
		}
		return tl.roles.AddProfile(ctx, core.Profile{Name: a.Name, Command: a.Command, Args: a.Args, Env: a.Env, MCP: mcp, StartTimeout: a.StartTimeout})
	}),
	"remove_profile_kandev": handle(func(tl *Tools, ctx context.Context, actor core.Actor, a *capability.NameArgs) (any, error) {
		return tl.roles.RemoveProfile(ctx, a.Name, api.RemoveProfileInput{})
	}),
	"set_task_title_kandev": handle(func(tl *Tools, ctx context.Context, actor core.Actor, a *capability.SetTitleArgs) (any, error) {
		return tl.toolSetTitle(ctx, actor, a.Title)
	}),
	capability.AskUser: handle(func(tl *Tools, ctx context.Context, actor core.Actor, a *capability.QuestionArgs) (any, error) {
		return tl.questions.askUser(ctx, actor, *a)
	}),
	capability.AskParent: handle(func(tl *Tools, ctx context.Context, actor core.Actor, a *capability.QuestionArgs) (any, error) {
		return tl.questions.askParent(ctx, actor, *a)
	}),
	"open_pull_request_kandev": handle(func(tl *Tools, ctx context.Context, actor core.Actor, a *capability.OpenRequestArgs) (any, error) {
		return tl.workspaces.openRequest(ctx, actor.TaskID, api.PullRequestInput{Draft: a.Draft, Base: a.Base}, capability.HostGitHub)
	}),
	"get_pull_request_comments_kandev": handle(func(tl *Tools, ctx context.Context, actor core.Actor, _ *noArgs) (any, error) {
		return tl.workspaces.requestReview(ctx, actor, capability.HostGitHub)
	}),
	"open_merge_request_kandev": handle(func(tl *Tools, ctx context.Context, actor core.Actor, a *capability.OpenRequestArgs) (any, error) {
		return tl.workspaces.openRequest(ctx, actor.TaskID, api.PullRequestInput{Draft: a.Draft, Base: a.Base}, capability.HostGitLab)
	}),
	"get_merge_request_comments_kandev": handle(func(tl *Tools, ctx context.Context, actor core.Actor, _ *noArgs) (any, error) {
		return tl.workspaces.requestReview(ctx, actor, capability.HostGitLab)
	}),
}
