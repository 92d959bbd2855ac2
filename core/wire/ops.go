package wire

import (
	"net/url"
	"reflect"
	"slices"
	"strings"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
)

// Op is one operation of the daemon's API: a row of the table below.
// The daemon's routes (core/daemon route) and the client's methods
// (core/daemonclient call) are both derived from the rows, so an
// operation's method, path and the way its input travels are written
// once (docs/decisions/0056).
//
// How In travels follows from its type, never from per-row code:
//   - None: nothing (no body, no query);
//   - Keyed[B]: Key fills the path's one {wildcard}, and B travels as
//     below;
//   - a query type (ListQuery, ConversationQuery, DiffQuery, UsageQuery):
//     the URL's query;
//   - Options[B]: B as the JSON body, only when some option is set;
//   - anything else: the JSON body.
type Op[In, Out any] struct {
	// Name is the client method the operation serves (api.Client's, or
	// api.Spender's, api.HostClient's).
	Name   string
	Method string
	// Path is a net/http pattern's path, with at most one {wildcard}.
	Path string
}

// Row is an operation without its types, for walking the whole table.
type Row struct {
	Name, Method, Path string
	// Keyed: its input names one thing in the path (Keyed).
	Keyed bool
}

// Pattern is the operation's net/http ServeMux pattern.
func (o Op[In, Out]) Pattern() string { return o.Method + " " + o.Path }

// Row drops the operation's types.
func (o Op[In, Out]) Row() Row {
	_, k := any(new(In)).(keyed)
	return Row{Name: o.Name, Method: o.Method, Path: o.Path, Keyed: k}
}

// Wildcard is the name of the path's {wildcard}, "" when it has none.
func (o Op[In, Out]) Wildcard() string {
	i := strings.IndexByte(o.Path, '{')
	if i < 0 {
		return ""
	}
	j := strings.IndexByte(o.Path[i:], '}')
	return o.Path[i+1 : i+j]
}

// Request is how in travels: the path with its wildcard filled and its
// query added, and the JSON body (nil: none).
func (o Op[In, Out]) Request(in In) (path string, body any) {
	path = o.Path
	var payload any = &in
	if k, ok := payload.(keyed); ok {
		if w := o.Wildcard(); w != "" {
			path = strings.Replace(path, "{"+w+"}", url.PathEscape(k.key()), 1)
		}
		payload = k.payload()
	}
	switch p := payload.(type) {
	case *None:
		return path, nil
	case querier:
		if q := p.query().Encode(); q != "" {
			path += "?" + q
		}
		return path, nil
	case optional:
		if body, set := p.options(); set {
			return path, body
		}
		return path, nil
	}
	return path, payload
}

// Parse reads an operation's input from a request: key is its path's
// wildcard value, q its query, and decode reads the JSON body into the
// pointer it is given (called only for an input that has a body).
func (o Op[In, Out]) Parse(key string, q url.Values, decode func(any) error) (In, error) {
	var in In
	var payload any = &in
	if k, ok := payload.(keyed); ok {
		k.setKey(key)
		payload = k.payload()
	}
	switch p := payload.(type) {
	case *None:
		return in, nil
	case querier:
		return in, p.parseQuery(q)
	case optional:
		body, _ := p.options()
		if !p.read() {
			return in, nil
		}
		// decode reads a missing body as no options.
		return in, decode(body)
	}
	return in, decode(payload)
}

// None is the input of an operation that takes nothing but its path.
type None struct{}

// Keyed is the input of an operation on one thing its path names (a
// task's id, a role's, profile's or host's name): Key fills the path's
// wildcard, In is the rest.
type Keyed[B any] struct {
	Key string
	In  B
}

type keyed interface {
	key() string
	setKey(string)
	// payload points at what travels beside the key.
	payload() any
}

func (k *Keyed[B]) key() string       { return k.Key }
func (k *Keyed[B]) setKey(key string) { k.Key = key }
func (k *Keyed[B]) payload() any      { return &k.In }

// Key is the input of an operation that takes only the key its path names.
func Key(key string) Keyed[None] { return Keyed[None]{Key: key} }

// Options is the input, beside its key, of an operation that took nothing
// but its key before it had options (api.StopTaskInput and the like):
// Value travels as the JSON body only when some option is set. A request
// that sets none is the bodyless one clients always sent, and a daemon
// reads a missing body as no options; a daemon older than an option
// never reads the body at all, and neither does one while B has no
// field yet: such an operation never read a body, whatever was sent (the
// first option decides how strictly its body is read).
type Options[B any] struct {
	Value B
}

// WithOptions is the input of a keyed operation with options.
func WithOptions[B any](key string, in B) Keyed[Options[B]] {
	return Keyed[Options[B]]{Key: key, In: Options[B]{Value: in}}
}

type optional interface {
	// options points at the options, and says whether any is set.
	options() (body any, set bool)
	// read says whether there are options to read: B has a field.
	read() bool
}

func (o *Options[B]) options() (any, bool) {
	return &o.Value, !reflect.ValueOf(o.Value).IsZero()
}

func (o *Options[B]) read() bool {
	t := reflect.TypeOf(o.Value)
	return t.Kind() != reflect.Struct || t.NumField() > 0
}

// querier is an input carried in the URL's query (a GET has no body).
type querier interface {
	query() url.Values
	parseQuery(url.Values) error
}

// StatusBody is `task status`'s body.
type StatusBody struct {
	Status core.Status `json:"status"`
}

// AppendsBody is FollowAppends's body: the task whose appends the
// subscription receives, "" none.
type AppendsBody struct {
	TaskID string `json:"task_id"`
}

// The table. Its order is the daemon's routing order (irrelevant to
// ServeMux, which picks the most specific pattern) and the API's reading
// order. The routes that do not fit a row are listed in Bespoke.
var (
	Version        = def(Op[None, api.VersionInfo]{Name: "Version", Method: "GET", Path: "/v1/version"})
	IntegrityCheck = def(Op[None, []string]{Name: "IntegrityCheck", Method: "GET", Path: "/v1/integrity"})

	ListTasks     = def(Op[ListQuery, []core.Task]{Name: "ListTasks", Method: "GET", Path: "/v1/tasks"})
	CreateTask    = def(Op[api.CreateTaskInput, core.Task]{Name: "CreateTask", Method: "POST", Path: "/v1/tasks"})
	GetTask       = def(Op[Keyed[None], core.Task]{Name: "GetTask", Method: "GET", Path: "/v1/tasks/{id}"})
	EditTask      = def(Op[Keyed[api.EditTaskInput], core.Task]{Name: "EditTask", Method: "PATCH", Path: "/v1/tasks/{id}"})
	ArchiveTask   = def(Op[Keyed[Options[api.ArchiveTaskInput]], core.Task]{Name: "ArchiveTask", Method: "POST", Path: "/v1/tasks/{id}/archive"})
	SetTaskStatus = def(Op[Keyed[StatusBody], core.Task]{Name: "SetTaskStatus", Method: "POST", Path: "/v1/tasks/{id}/status"})
	TaskStats     = def(Op[ListQuery, api.TaskStats]{Name: "TaskStats", Method: "GET", Path: "/v1/task-stats"})

	StartTask      = def(Op[Keyed[api.StartTaskInput], core.Task]{Name: "StartTask", Method: "POST", Path: "/v1/tasks/{id}/start"})
	MessageTask    = def(Op[Keyed[api.MessageInput], api.MessageResult]{Name: "MessageTask", Method: "POST", Path: "/v1/tasks/{id}/message"})
	StopTask       = def(Op[Keyed[Options[api.StopTaskInput]], api.StopResult]{Name: "StopTask", Method: "POST", Path: "/v1/tasks/{id}/stop"})
	AnswerQuestion = def(Op[Keyed[api.AnswerInput], api.AnswerResult]{Name: "AnswerQuestion", Method: "POST", Path: "/v1/tasks/{id}/answer"})
	Conversation   = def(Op[Keyed[ConversationQuery], api.ConversationPage]{Name: "Conversation", Method: "GET", Path: "/v1/tasks/{id}/conversation"})
	HandoffTask    = def(Op[Keyed[api.HandoffInput], api.HandoffResult]{Name: "HandoffTask", Method: "POST", Path: "/v1/tasks/{id}/handoff"})
	BlockTask      = def(Op[Keyed[api.BlockInput], core.Task]{Name: "BlockTask", Method: "POST", Path: "/v1/tasks/{id}/block"})
	TaskQueue      = def(Op[Keyed[None], api.QueueView]{Name: "TaskQueue", Method: "GET", Path: "/v1/tasks/{id}/queue"})
	DropQueued     = def(Op[Keyed[api.DropQueueInput], api.QueueView]{Name: "DropQueued", Method: "POST", Path: "/v1/tasks/{id}/queue/drop"})

	TaskDiff        = def(Op[Keyed[DiffQuery], api.TaskDiff]{Name: "TaskDiff", Method: "GET", Path: "/v1/tasks/{id}/diff"})
	TaskReview      = def(Op[Keyed[None], api.ReviewView]{Name: "TaskReview", Method: "GET", Path: "/v1/tasks/{id}/review"})
	PushTask        = def(Op[Keyed[api.PushInput], api.PushResult]{Name: "PushTask", Method: "POST", Path: "/v1/tasks/{id}/push"})
	PullRequestTask = def(Op[Keyed[api.PullRequestInput], api.PullRequestResult]{Name: "PullRequestTask", Method: "POST", Path: "/v1/tasks/{id}/pull-request"})
	MergeTask       = def(Op[Keyed[api.MergeInput], api.MergeResult]{Name: "MergeTask", Method: "POST", Path: "/v1/tasks/{id}/merge"})
	DiscardTask     = def(Op[Keyed[Options[api.DiscardTaskInput]], core.Task]{Name: "DiscardTask", Method: "POST", Path: "/v1/tasks/{id}/discard"})
	PruneWorktrees  = def(Op[api.PruneInput, api.PruneResult]{Name: "PruneWorktrees", Method: "POST", Path: "/v1/worktrees/prune"})

	SetBudget = def(Op[Keyed[api.BudgetInput], core.Task]{Name: "SetBudget", Method: "POST", Path: "/v1/tasks/{id}/budget"})
	Usage     = def(Op[UsageQuery, api.UsageReport]{Name: "Usage", Method: "GET", Path: "/v1/usage"})

	ListLimits  = def(Op[None, []api.LimitStatus]{Name: "Limits", Method: "GET", Path: "/v1/limits"})
	SetLimit    = def(Op[api.LimitInput, api.LimitStatus]{Name: "SetLimit", Method: "POST", Path: "/v1/limits"})
	RemoveLimit = def(Op[api.LimitInput, api.LimitStatus]{Name: "RemoveLimit", Method: "POST", Path: "/v1/limits/remove"})

	ListRoles  = def(Op[None, []api.Role]{Name: "ListRoles", Method: "GET", Path: "/v1/roles"})
	AddRole    = def(Op[api.RoleInput, api.Role]{Name: "AddRole", Method: "POST", Path: "/v1/roles"})
	GetRole    = def(Op[Keyed[None], api.Role]{Name: "GetRole", Method: "GET", Path: "/v1/roles/{name}"})
	EditRole   = def(Op[Keyed[api.RoleInput], api.Role]{Name: "EditRole", Method: "PATCH", Path: "/v1/roles/{name}"})
	RemoveRole = def(Op[Keyed[Options[api.RemoveRoleInput]], api.Role]{Name: "RemoveRole", Method: "DELETE", Path: "/v1/roles/{name}"})

	ListPersons = def(Op[None, []api.Person]{Name: "ListPersons", Method: "GET", Path: "/v1/persons"})
	AddPerson   = def(Op[api.AddPersonInput, api.Person]{Name: "AddPerson", Method: "POST", Path: "/v1/persons"})

	ListProfiles = def(Op[None, []core.Profile]{Name: "ListProfiles", Method: "GET", Path: "/v1/profiles"})
	GetProfile   = def(Op[Keyed[None], core.Profile]{Name: "GetProfile", Method: "GET", Path: "/v1/profiles/{name}"})
	// AddProfile puts the whole profile; the path's name is its name.
	AddProfile    = def(Op[Keyed[core.Profile], core.Profile]{Name: "AddProfile", Method: "PUT", Path: "/v1/profiles/{name}"})
	RemoveProfile = def(Op[Keyed[Options[api.RemoveProfileInput]], core.Profile]{Name: "RemoveProfile", Method: "DELETE", Path: "/v1/profiles/{name}"})

	ListHosts  = def(Op[None, []core.Host]{Name: "ListHosts", Method: "GET", Path: "/v1/hosts"})
	AddHost    = def(Op[api.HostInput, core.Host]{Name: "AddHost", Method: "POST", Path: "/v1/hosts"})
	GetHost    = def(Op[Keyed[None], core.Host]{Name: "GetHost", Method: "GET", Path: "/v1/hosts/{name}"})
	RemoveHost = def(Op[Keyed[None], core.Host]{Name: "RemoveHost", Method: "DELETE", Path: "/v1/hosts/{name}"})
	CheckHost  = def(Op[Keyed[None], api.HostCheck]{Name: "CheckHost", Method: "POST", Path: "/v1/hosts/{name}/check"})
	EditHost   = def(Op[Keyed[api.HostEdit], core.Host]{Name: "EditHost", Method: "PATCH", Path: "/v1/hosts/{name}"})

	// The web inbox's pairing and devices (docs/web.md, ADR 0079).
	WebPair    = def(Op[api.WebPairInput, api.WebPairing]{Name: "WebPair", Method: "POST", Path: "/v1/web/pair"})
	WebDevices = def(Op[None, []api.WebDevice]{Name: "WebDevices", Method: "GET", Path: "/v1/web/devices"})
	WebRevoke  = def(Op[Keyed[None], api.WebDevice]{Name: "WebRevoke", Method: "POST", Path: "/v1/web/devices/{id}/revoke"})

	// FollowAppends moves the appends filter of a live event stream (GET
	// /v1/events, bespoke, names its subscription in the
	// Kandev-Subscription header); it answers {}.
	FollowAppends = def(Op[Keyed[AppendsBody], None]{Name: "FollowAppends", Method: "PUT", Path: "/v1/events/{id}/appends"})
)

// rows is the whole table in its order, filled as the rows above are
// initialised (each depends on rows, so it is ready first) and never
// changed after: a row is one line.
var rows []Row

func def[In, Out any](o Op[In, Out]) Op[In, Out] {
	rows = append(rows, o.Row())
	return o
}

// Ops lists the whole table, for the tests that check both sides serve
// every row.
func Ops() []Row { return slices.Clone(rows) }

// SubscriptionHeader is the header of GET /v1/events's reply that names
// the stream's subscription, the id FollowAppends takes. A daemon before
// it sends none (and ignores ?appends=).
const SubscriptionHeader = "Kandev-Subscription"

// Bespoke lists the routes that are not rows, and why: they do not answer
// one JSON value for one JSON (or query) input.
var Bespoke = map[string]string{
	"GET /v1/task-summaries": "a streamed tab-separated listing (WriteTaskSummaries), read as it arrives",
	"GET /v1/events":         "a server-sent-events stream that lives as long as the request; its Kandev-Subscription header names it for FollowAppends",
	"GET /v1/mcp/surface":    "the agents' socket: the actor comes from the session token, not the operator's socket",
	"POST /v1/mcp/call":      "the agents' socket, as above; a tool's result is any JSON, forwarded unread",
}
