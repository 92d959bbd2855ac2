package engine

// compose builds the engine's areas over its kernel and gives each the
// others it depends on: every area is allocated first, so a dependency
// named here is never a nil area, whatever the order of the lines below.
// An area's fields are its dependencies; what one area gives another as
// a function (Hosts.may) is that area's narrow view of the other.
func (e *Engine) compose() {
	k := e.k
	e.flusher.k = k
	e.auth = &authorizer{k: k}
	e.Workspaces = newWorkspaces(k)
	e.Hosts = newHosts(k, e.Workspaces.ws)
	e.Spend = &Spend{k: k, procWG: &e.procWG}
	e.Roles = &Roles{k: k}
	e.Questions = &Questions{k: k, procWG: &e.procWG}
	e.Messages = &Messages{k: k, procWG: &e.procWG}
	e.Runs = &Runs{k: k, procWG: &e.procWG, flusher: &e.flusher}
	e.Turns = &Turns{k: k}
	e.Tasks = &Tasks{k: k}
	e.Chain = &Chain{k: k, procWG: &e.procWG}
	e.Tools = &Tools{k: k}
	k.kickLoop = e.Turns.kick

	// The runs, turns, tasks, chain and tools areas hold the areas they
	// call.
	e.Runs.chain, e.Runs.hosts, e.Runs.questions, e.Runs.roles = e.Chain, e.Hosts, e.Questions, e.Roles
	e.Runs.spend, e.Runs.turns, e.Runs.workspaces = e.Spend, e.Turns, e.Workspaces
	e.Turns.chain, e.Turns.hosts, e.Turns.questions, e.Turns.runs = e.Chain, e.Hosts, e.Questions, e.Runs
	e.Turns.spend, e.Turns.workspaces = e.Spend, e.Workspaces
	e.Tasks.auth, e.Tasks.chain, e.Tasks.hosts, e.Tasks.messages = e.auth, e.Chain, e.Hosts, e.Messages
	e.Tasks.questions, e.Tasks.roles, e.Tasks.runs, e.Tasks.spend = e.Questions, e.Roles, e.Runs, e.Spend
	e.Tasks.turns, e.Tasks.workspaces = e.Turns, e.Workspaces
	e.Chain.auth, e.Chain.messages, e.Chain.questions = e.auth, e.Messages, e.Questions
	e.Chain.roles, e.Chain.runs, e.Chain.turns = e.Roles, e.Runs, e.Turns
	e.Tools.auth, e.Tools.chain, e.Tools.messages, e.Tools.questions = e.auth, e.Chain, e.Messages, e.Questions
	e.Tools.roles, e.Tools.runs, e.Tools.tasks, e.Tools.workspaces = e.Roles, e.Runs, e.Tasks, e.Workspaces

	// What the other areas give the hosts area (hosts.go).
	e.Hosts.may = e.auth.may
	e.Hosts.held = e.Turns.held
	e.Hosts.worktreeOwner = e.Workspaces.worktreeOwner
	e.Hosts.requeueOpenPrompt = e.Turns.requeueOpenPrompt
	e.Hosts.endRunLocked = e.Runs.endRunLocked
	e.Hosts.profiles = e.Roles.ListProfiles
	// What the other areas give the spend area (usage.go).
	e.Spend.may = e.auth.may
	k.limitWait = e.Spend.limitWait
	e.Spend.task = k.task
	e.Spend.getTask = e.Tasks.GetTask
	e.Spend.releaseRunLocked = e.Runs.releaseRunLocked
	e.Spend.terminate = e.Runs.terminate
	e.Spend.describeSender = e.Turns.describeSender
	e.Spend.handoff = e.Chain.handoff
	e.Spend.staleQuestionTx = e.Questions.staleQuestionTx
	// What the other areas give the workspaces area (workspace.go).
	e.Workspaces.task = k.task
	e.Workspaces.may = e.auth.may
	e.Workspaces.authorized = e.auth.authorized
	e.Workspaces.describeSender = e.Turns.describeSender
	e.Workspaces.setupConfiner = e.Runs.setupConfiner
	e.Workspaces.withHosts(e.Hosts)
	// What the other areas give the roles area (roles.go).
	e.Roles.may = e.auth.may
	e.Roles.checkProfileHost = e.Hosts.checkProfileHost
	// What the other areas give the questions area (questions.go).
	q := e.Questions
	q.may, q.mayAnswer, q.task = e.auth.may, e.auth.mayAnswer, k.task
	q.handoffTx, q.roleOf, q.profile = e.Chain.handoffTx, e.Roles.roleOf, e.Roles.profile
	// What the other areas give the messages area (messages.go).
	m := e.Messages
	m.task, m.may, m.holder, m.held = k.task, e.auth.may, e.auth.holder, e.Turns.held
	m.authorized = e.auth.authorized
	m.supersedeTx, m.replyToQuestion = e.Questions.supersedeTx, e.Questions.replyToQuestion
	m.handoff, m.planReview = e.Chain.handoff, e.Workspaces.planReview
}
